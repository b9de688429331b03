package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// AccessTx is one transaction of a change to who may see what: project groups, their members,
// moves of projects between groups, project members (docs/rules.md §4.11, §6.3, §6.5). A use
// case (package app) reads the facts through it, decides, and writes through it; nothing is
// written unless the function InAccessTx runs returns nil. It decides nothing itself.
type AccessTx struct {
	s  *Store
	tx bun.Tx
	c  Caller
}

// InAccessTx runs fn in one transaction, with reads as the caller c sees them.
func (s *Store) InAccessTx(ctx context.Context, c Caller, fn func(ctx context.Context, t *AccessTx) error) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, &AccessTx{s: s, tx: tx, c: c})
	})
}

// LockGroup locks the group's row and returns the group as the caller sees it; a missing,
// foreign or hidden group is "Project group not found".
func (t *AccessTx) LockGroup(ctx context.Context, groupUUID string) (*GroupView, error) {
	if err := lockRow(ctx, t.tx, "project_groups", groupUUID); err != nil {
		return nil, err
	}
	return t.Group(ctx, groupUUID)
}

// Group returns a group the caller can see ("Project group not found" otherwise).
func (t *AccessTx) Group(ctx context.Context, groupUUID string) (*GroupView, error) {
	return t.s.groupIn(ctx, t.tx, t.c, groupUUID)
}

// GroupRow reads a group's row whoever sees it.
func (t *AccessTx) GroupRow(ctx context.Context, groupUUID string) (ProjectGroup, error) {
	var g ProjectGroup
	err := t.tx.NewSelect().Model(&g).Where("uuid = ?", groupUUID).Scan(ctx)
	return g, mapErr(err, "Project group")
}

// LockProject takes the project's lock and returns the project as the caller sees it, without
// counts; a missing, foreign or hidden project is "Project not found".
func (t *AccessTx) LockProject(ctx context.Context, projectUUID string) (*ProjectView, error) {
	if err := t.LockProjectRow(ctx, projectUUID); err != nil {
		return nil, err
	}
	return t.Project(ctx, projectUUID)
}

// LockProjectRow takes the project's lock.
func (t *AccessTx) LockProjectRow(ctx context.Context, projectUUID string) error {
	return lockProject(ctx, t.tx, projectUUID)
}

// CompanyProject returns a project of the caller's company whoever sees it (for operators);
// another is "Project not found".
func (t *AccessTx) CompanyProject(ctx context.Context, projectUUID string) (*Project, error) {
	return companyProject(ctx, t.tx, t.c.CompanyUUID, projectUUID)
}

// Project returns the project as the caller sees it, without counts ("Project not found" for a
// missing, foreign or hidden one).
func (t *AccessTx) Project(ctx context.Context, projectUUID string) (*ProjectView, error) {
	if !vocab.IsUUID(projectUUID) {
		return nil, NotFound("Project")
	}
	var pv ProjectView
	if err := t.s.projectRoles(t.c).Conn(t.tx).Where("project.uuid = ?", projectUUID).Limit(1).Scan(ctx, &pv); err != nil {
		return nil, mapErr(err, "Project")
	}
	return &pv, nil
}

// GroupProjects lists all the group's projects, whoever sees them, by name.
func (t *AccessTx) GroupProjects(ctx context.Context, groupUUID string) ([]Project, error) {
	var all []Project
	err := t.tx.NewSelect().Model(&all).Where("group_uuid = ?", groupUUID).Order("name ASC", "uuid ASC").Scan(ctx)
	return all, err
}

// VisibleGroupProjects lists the group's projects the caller can see, with its roles.
func (t *AccessTx) VisibleGroupProjects(ctx context.Context, groupUUID string) ([]ProjectView, error) {
	var seen []ProjectView
	err := t.s.projectRoles(t.c).Conn(t.tx).Where("project.group_uuid = ?", groupUUID).Scan(ctx, &seen)
	return seen, err
}

// WorkCounts are the lifecycle entities some projects hold.
type WorkCounts struct{ Ideas, Proposals, Tasks int }

// Work counts the ideas, proposals and tasks of the projects.
func (t *AccessTx) Work(ctx context.Context, projectUUIDs []string) (WorkCounts, error) {
	var w WorkCounts
	if len(projectUUIDs) == 0 {
		return w, nil
	}
	for _, x := range []struct {
		table string
		n     *int
	}{{"ideas", &w.Ideas}, {"proposals", &w.Proposals}, {"tasks", &w.Tasks}} {
		n, err := t.tx.NewSelect().Table(x.table).Where("project_uuid IN (?)", bun.List(projectUUIDs)).Count(ctx)
		if err != nil {
			return w, err
		}
		*x.n = int(n)
	}
	return w, nil
}

// GroupMemberCount counts the group's members.
func (t *AccessTx) GroupMemberCount(ctx context.Context, groupUUID string) (int, error) {
	n, err := t.tx.NewSelect().Table("project_group_members").Where("group_uuid = ?", groupUUID).Count(ctx)
	return int(n), err
}

// ProjectDocuments lists the uuid and version of each of the project's documents.
func (t *AccessTx) ProjectDocuments(ctx context.Context, projectUUID string) ([]Document, error) {
	var docs []Document
	err := t.tx.NewSelect().Model(&docs).Column("uuid", "version").Where("project_uuid = ?", projectUUID).Scan(ctx)
	return docs, err
}

// MemberFacts are what a change of one user's role on a project or group depends on.
type MemberFacts struct {
	// Role is the user's role, "" for none.
	Role string
	// Admins counts the project's or group's admins.
	Admins int
}

// CompanyUser finds a user of the caller's company ("User not found" otherwise).
func (t *AccessTx) CompanyUser(ctx context.Context, userUUID string) (*User, error) {
	return companyUser(ctx, t.tx, t.c.CompanyUUID, userUUID)
}

// GroupMember reads the facts of one user's role on the group.
func (t *AccessTx) GroupMember(ctx context.Context, groupUUID, userUUID string) (MemberFacts, error) {
	return memberFacts(ctx, t.tx, "project_group_members", "group_uuid", groupUUID, userUUID)
}

// ProjectMember reads the facts of one user's role on the project.
func (t *AccessTx) ProjectMember(ctx context.Context, projectUUID, userUUID string) (MemberFacts, error) {
	return memberFacts(ctx, t.tx, "project_members", "project_uuid", projectUUID, userUUID)
}

// memberFacts reads the facts of user's role in table (project_members or
// project_group_members) where col is id.
func memberFacts(ctx context.Context, tx bun.Tx, table, col, id, user string) (MemberFacts, error) {
	var f MemberFacts
	var roles []string
	if err := tx.NewSelect().Table(table).Column("role").Where(col+" = ?", id).Where("user_uuid = ?", user).
		Scan(ctx, &roles); err != nil {
		return f, err
	}
	if len(roles) > 0 {
		f.Role = roles[0]
	}
	n, err := tx.NewSelect().Table(table).Where(col+" = ?", id).Where("role = 'admin'").Count(ctx)
	f.Admins = int(n)
	return f, err
}

// SetGroupMember gives the user role on the group ("" takes its role away), the caller's owner
// recorded as who added it, and bumps the group's access_version.
func (t *AccessTx) SetGroupMember(ctx context.Context, groupUUID, userUUID, role string) error {
	now := Now()
	var cur ProjectGroupMember
	err := t.tx.NewSelect().Model(&cur).Where("group_uuid = ?", groupUUID).Where("user_uuid = ?", userUUID).Scan(ctx)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	switch {
	case role == "" && !found:
		return nil
	case role == "":
		_, err = t.tx.NewDelete().Model(&cur).WherePK().Exec(ctx)
	case found:
		_, err = t.tx.NewUpdate().Model(&cur).Set("role = ?", role).Set("updated_at = ?", now).WherePK().Exec(ctx)
	default:
		row := ProjectGroupMember{UUID: NewUUID(), CompanyUUID: t.c.CompanyUUID, GroupUUID: groupUUID, UserUUID: userUUID,
			Role: role, CreatedAt: now, UpdatedAt: now}
		if t.c.OwnerUUID != "" {
			row.AddedByUUID = &t.c.OwnerUUID
		}
		_, err = t.tx.NewInsert().Model(&row).Exec(ctx)
	}
	if err != nil {
		return err
	}
	_, err = t.tx.NewUpdate().Table("project_groups").Set("access_version = access_version + 1").Set("updated_at = ?", now).
		Where("uuid = ?", groupUUID).Exec(ctx)
	return err
}
