package store

import (
	"context"
	"strings"

	"github.com/uptrace/bun"
)

// GroupFields are a group's fields to change; nil leaves one alone.
type GroupFields struct {
	Name        *string
	Description *string
	// Visibility: a visibility change bumps the group's access_version.
	Visibility *string
	// ProjectsPrivate makes each of the group's projects private.
	ProjectsPrivate bool
}

// UpdateGroup writes f to the group; it writes nothing when f changes nothing.
func (t *AccessTx) UpdateGroup(ctx context.Context, groupUUID string, f GroupFields) error {
	now := Now()
	q := t.tx.NewUpdate().Table("project_groups").Where("uuid = ?", groupUUID).Set("updated_at = ?", now)
	changed := false
	if f.Name != nil {
		q, changed = q.Set("name = ?", strings.TrimSpace(*f.Name)), true
	}
	if f.Description != nil {
		q, changed = q.Set("description = ?", *f.Description), true
	}
	if f.Visibility != nil {
		q, changed = q.Set("visibility = ?", *f.Visibility).Set("access_version = access_version + 1"), true
	}
	if f.ProjectsPrivate {
		if _, err := t.tx.NewUpdate().Table("projects").Set("visibility = 'private'").Set("updated_at = ?", now).
			Where("group_uuid = ?", groupUUID).Where("visibility <> 'private'").Exec(ctx); err != nil {
			return err
		}
	}
	if !changed {
		return nil
	}
	_, err := q.Exec(ctx)
	return err
}

// DeleteGroup deletes the group and its memberships. With deleteProjects its projects (the
// uuids projectUUIDs) go too, with their documents, the documents' comments, their activities
// and memberships; without, they stay, ungrouped.
func (t *AccessTx) DeleteGroup(ctx context.Context, groupUUID string, projectUUIDs []string, deleteProjects bool) error {
	tx, ids := t.tx, projectUUIDs
	if deleteProjects && len(ids) > 0 {
		for _, q := range []*bun.DeleteQuery{
			tx.NewDelete().Table("comments").Where("target_type = 'document'").
				Where("target_uuid IN (SELECT uuid FROM documents WHERE project_uuid IN (?))", bun.List(ids)),
			tx.NewDelete().Table("documents").Where("project_uuid IN (?)", bun.List(ids)),
			tx.NewDelete().Table("activities").Where("project_uuid IN (?)", bun.List(ids)),
			tx.NewDelete().Table("project_members").Where("project_uuid IN (?)", bun.List(ids)),
			tx.NewDelete().Table("projects").Where("uuid IN (?)", bun.List(ids)),
		} {
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
	} else if len(ids) > 0 {
		if _, err := tx.NewUpdate().Table("projects").Set("group_uuid = NULL").Set("updated_at = ?", Now()).
			Where("group_uuid = ?", groupUUID).Exec(ctx); err != nil {
			return err
		}
	}
	if _, err := tx.NewDelete().Table("project_group_members").Where("group_uuid = ?", groupUUID).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewDelete().Table("project_groups").Where("uuid = ?", groupUUID).Exec(ctx)
	return err
}

// MoveProject puts project p into the group groupUUID (nil: none) with the given visibility,
// bumps the access_version of the group it leaves and the one it joins, and returns the
// project as it is now.
func (t *AccessTx) MoveProject(ctx context.Context, p Project, groupUUID *string, visibility string) (*Project, error) {
	now := Now()
	if _, err := t.tx.NewUpdate().Table("projects").Set("group_uuid = ?", groupUUID).Set("visibility = ?", visibility).
		Set("updated_at = ?", now).Where("uuid = ?", p.UUID).Exec(ctx); err != nil {
		return nil, err
	}
	var touched []string
	for _, g := range []*string{p.GroupUUID, groupUUID} {
		if g != nil {
			touched = append(touched, *g)
		}
	}
	if len(touched) > 0 {
		if _, err := t.tx.NewUpdate().Table("project_groups").Set("access_version = access_version + 1").
			Where("uuid IN (?)", bun.List(touched)).Exec(ctx); err != nil {
			return nil, err
		}
	}
	p.GroupUUID, p.Visibility, p.UpdatedAt = groupUUID, visibility, now
	return &p, nil
}
