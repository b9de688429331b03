package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// GroupUpdate is chorus_admin_update_project_group: a rename or visibility change, or one
// member action (never both: the caller checks).
type GroupUpdate struct {
	GroupUUID   string
	Name        *string
	Description *string
	Visibility  *string
	Preview     bool
	Token       string
	// Member is a member action: add, update or remove UserUUID (Role for add and update).
	Member *MemberAction
}

// VisibilityPreview is what changing a group's visibility would do (docs/rules.md §4.11).
type VisibilityPreview struct {
	GroupUUID      string          `json:"groupUuid"`
	FromVisibility string          `json:"fromVisibility"`
	Visibility     string          `json:"visibility"`
	CompanyAccess  string          `json:"companyAccess"`
	Projects       []ProjectImpact `json:"projects"`
	Summary        string          `json:"summary"`
	Token          string          `json:"confirmationToken"`
}

// ProjectImpact is one project's visibility before and after a change.
type ProjectImpact struct {
	UUID           string `json:"uuid"`
	Name           string `json:"name"`
	FromVisibility string `json:"fromVisibility"`
	Visibility     string `json:"visibility"`
}

// UpdateGroup applies u; with Preview and a visibility change it writes nothing and returns the
// preview. Rights: renaming needs an explicit group admin, or the editor floor of a public group;
// visibility and members need an explicit group admin.
func (s *Store) UpdateGroup(ctx context.Context, c Caller, u GroupUpdate) (*GroupView, *VisibilityPreview, error) {
	var preview *VisibilityPreview
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		preview = nil
		if err := lockRow(ctx, tx, "project_groups", u.GroupUUID); err != nil {
			return err
		}
		v, err := s.groupIn(ctx, tx, c, u.GroupUUID)
		if err != nil {
			return err
		}
		now := Now()
		if u.Member != nil {
			if !v.IsAdmin() {
				return ErrGroupManage
			}
			return applyMember(ctx, tx, c, v.ProjectGroup, *u.Member, now)
		}
		if (u.Name != nil || u.Description != nil) && !v.IsAdmin() && v.Visibility != "public" {
			return ErrGroupManage
		}
		q := tx.NewUpdate().Table("project_groups").Where("uuid = ?", u.GroupUUID).Set("updated_at = ?", now)
		changed := false
		if u.Name != nil {
			q, changed = q.Set("name = ?", strings.TrimSpace(*u.Name)), true
		}
		if u.Description != nil {
			q, changed = q.Set("description = ?", *u.Description), true
		}
		if u.Visibility != nil && *u.Visibility != v.Visibility {
			if !v.IsAdmin() {
				return ErrGroupManage
			}
			p, err := groupVisibilityPreview(ctx, tx, c, v.ProjectGroup, *u.Visibility)
			if err != nil {
				return err
			}
			if u.Preview {
				preview = p
				return nil
			}
			switch {
			case u.Token == "":
				return ErrConfirmationRequired
			case u.Token != p.Token:
				return ErrStaleToken
			}
			q, changed = q.Set("visibility = ?", *u.Visibility).Set("access_version = access_version + 1"), true
			if *u.Visibility == "private" {
				if _, err := tx.NewUpdate().Table("projects").Set("visibility = 'private'").Set("updated_at = ?", now).
					Where("group_uuid = ?", u.GroupUUID).Where("visibility <> 'private'").Exec(ctx); err != nil {
					return err
				}
			}
		}
		if !changed {
			return nil
		}
		_, err = q.Exec(ctx)
		return err
	})
	if err != nil || preview != nil {
		return nil, preview, err
	}
	v, err := s.GetGroup(ctx, c, u.GroupUUID)
	if errors.Is(err, ErrNotFound) {
		// A member action removed the caller's own access to a private group: nothing more to show.
		return nil, nil, nil
	}
	return v, nil, err
}

// groupVisibilityPreview says what changing g's visibility to to does, with the token over g's
// access and each of its projects'.
func groupVisibilityPreview(ctx context.Context, tx bun.IDB, c Caller, g ProjectGroup, to string) (*VisibilityPreview, error) {
	var st accessState
	if err := st.group(ctx, tx, g.UUID); err != nil {
		return nil, err
	}
	var projects []Project
	if err := tx.NewSelect().Model(&projects).Where("group_uuid = ?", g.UUID).Order("name ASC", "uuid ASC").Scan(ctx); err != nil {
		return nil, err
	}
	p := &VisibilityPreview{GroupUUID: g.UUID, FromVisibility: g.Visibility, Visibility: to, CompanyAccess: "unchanged",
		Projects: []ProjectImpact{}}
	switch {
	case g.Visibility == "public" && to == "private":
		p.CompanyAccess = "closed"
	case g.Visibility == "private" && to == "public":
		p.CompanyAccess = "opened"
	}
	madePrivate := 0
	for _, pr := range projects {
		if err := st.project(ctx, tx, pr); err != nil {
			return nil, err
		}
		after := pr.Visibility
		if to == "private" {
			after = "private"
		}
		if after != pr.Visibility {
			madePrivate++
		}
		p.Projects = append(p.Projects, ProjectImpact{UUID: pr.UUID, Name: pr.Name, FromVisibility: pr.Visibility, Visibility: after})
	}
	switch p.CompanyAccess {
	case "closed":
		p.Summary = fmt.Sprintf("The group becomes private: only its members will see it, and %d of its %d project(s) "+
			"become private too (members of the group or of each project keep their access).", madePrivate, len(projects))
	case "opened":
		p.Summary = fmt.Sprintf("The group becomes public: everyone in the company will see it and may edit it. Its %d "+
			"project(s) keep their own visibility.", len(projects))
	}
	p.Token = st.token("group-visibility", c, g.UUID, g.Visibility, to)
	return p, nil
}
