package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Project members and agent settings, as operators manage them (chorus project member ...,
// chorus agent update; docs/rules.md §6.3).

// ProjectRef finds a project of the company by uuid or, failing that, by exact name (one match).
func (s *Store) ProjectRef(ctx context.Context, companyUUID, ref string) (*Project, error) {
	var ps []Project
	q := s.DB.NewSelect().Model(&ps).Where("company_uuid = ?", companyUUID)
	if vocab.IsUUID(ref) {
		q = q.Where("uuid = ?", strings.ToLower(ref))
	} else {
		q = q.Where("name = ?", ref)
	}
	if err := q.Limit(2).Scan(ctx); err != nil {
		return nil, err
	}
	switch len(ps) {
	case 0:
		return nil, NotFound("Project")
	case 1:
		return &ps[0], nil
	}
	return nil, fmt.Errorf("%d projects are named %q: name it by its uuid (chorus project list)", len(ps), ref)
}

// ListAllProjects lists the company's projects, oldest first (for operators: no access filter).
func (s *Store) ListAllProjects(ctx context.Context, companyUUID string) ([]Project, error) {
	var ps []Project
	err := s.DB.NewSelect().Model(&ps).Where("company_uuid = ?", companyUUID).Order("created_at ASC", "uuid ASC").Scan(ctx)
	return ps, err
}

// MemberListing is one member of a project with the user's name and email.
type MemberListing struct {
	ProjectMember `bun:",extend"`
	UserName      *string `bun:"user_name"`
	UserEmail     *string `bun:"user_email"`
}

// SetProjectMember gives a user a role on a project (adding or changing the membership) and
// reports whether anything changed.
func (s *Store) SetProjectMember(ctx context.Context, companyUUID, projectUUID, userUUID, role string) (bool, error) {
	if parseRole(&role) == AccessNone {
		return false, fmt.Errorf("role %q is not one of viewer, editor, admin", role)
	}
	changed := false
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		changed = false
		var m ProjectMember
		err := tx.NewSelect().Model(&m).Where("project_uuid = ?", projectUUID).Where("user_uuid = ?", userUUID).Scan(ctx)
		now := Now()
		switch {
		case err == nil && m.Role == role:
			return nil
		case err == nil:
			changed = true
			_, err = tx.NewUpdate().Model(&m).Set("role = ?", role).Set("updated_at = ?", now).WherePK().Exec(ctx)
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		changed = true
		m = ProjectMember{UUID: NewUUID(), CompanyUUID: companyUUID, ProjectUUID: projectUUID, UserUUID: userUUID, Role: role,
			CreatedAt: now, UpdatedAt: now}
		_, err = tx.NewInsert().Model(&m).Exec(ctx)
		return mapErr(err, "Project member")
	})
	return changed, err
}

// RemoveProjectMember removes a user's role on a project and reports whether there was one.
func (s *Store) RemoveProjectMember(ctx context.Context, projectUUID, userUUID string) (bool, error) {
	res, err := s.DB.NewDelete().Model((*ProjectMember)(nil)).Where("project_uuid = ?", projectUUID).
		Where("user_uuid = ?", userUUID).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// ListProjectMembers lists a project's members, oldest first.
func (s *Store) ListProjectMembers(ctx context.Context, projectUUID string) ([]MemberListing, error) {
	var rows []MemberListing
	err := s.DB.NewSelect().TableExpr("project_members AS pm").ColumnExpr("pm.*").
		ColumnExpr("u.name AS user_name").ColumnExpr("u.email AS user_email").
		Join("JOIN users AS u ON u.uuid = pm.user_uuid").Where("pm.project_uuid = ?", projectUUID).
		Order("pm.created_at ASC", "pm.uuid ASC").Scan(ctx, &rows)
	return rows, err
}

// UserRef finds a user of the company by uuid or email.
func (s *Store) UserRef(ctx context.Context, companyUUID, ref string) (*User, error) {
	var u User
	q := s.DB.NewSelect().Model(&u).Where("company_uuid = ?", companyUUID)
	if vocab.IsUUID(ref) {
		q = q.Where("uuid = ?", strings.ToLower(ref))
	} else {
		q = q.Where("lower(email) = lower(?)", strings.TrimSpace(ref))
	}
	if err := q.Limit(1).Scan(ctx); err != nil {
		return nil, mapErr(err, "User")
	}
	return &u, nil
}

// AgentUpdate changes an agent's presets and extra permission bits (nil: unchanged). Roles and
// Permissions must be canonical (package perm).
type AgentUpdate struct {
	Roles       *[]string
	Permissions *[]string
}

// UpdateAgent applies u to the agent; the next request of any of its keys sees it, because
// permissions are computed per request (docs/rules.md §6.1).
func (s *Store) UpdateAgent(ctx context.Context, companyUUID, agentUUID string, u AgentUpdate) (*Agent, error) {
	a, err := s.GetAgent(ctx, companyUUID, agentUUID)
	if err != nil {
		return nil, err
	}
	cols := []string{"updated_at"}
	a.UpdatedAt = Now()
	if u.Roles != nil {
		a.Roles, cols = *u.Roles, append(cols, "roles")
	}
	if u.Permissions != nil {
		a.Permissions, cols = *u.Permissions, append(cols, "permissions")
	}
	if _, err := s.DB.NewUpdate().Model(a).Column(cols...).WherePK().Exec(ctx); err != nil {
		return nil, err
	}
	return s.GetAgent(ctx, companyUUID, agentUUID)
}

// ProjectName is the name of the project uuid, for what operators see of a workflow (its memo);
// "" when there is no such project.
func (s *Store) ProjectName(ctx context.Context, uuid string) (string, error) {
	var names []string
	err := s.DB.NewSelect().Model((*Project)(nil)).Column("name").Where("uuid = ?", uuid).Limit(1).Scan(ctx, &names)
	if err != nil || len(names) == 0 {
		return "", err
	}
	return names[0], nil
}

// ---- members as agents and operators manage them (the rules are app's) ----

// CompanyProject returns a project of the company whoever sees it (for operators); another is
// "Project not found".
func (s *Store) CompanyProject(ctx context.Context, companyUUID, projectUUID string) (*Project, error) {
	return companyProject(ctx, s.DB, companyUUID, projectUUID)
}

func companyProject(ctx context.Context, db bun.IDB, companyUUID, projectUUID string) (*Project, error) {
	if !vocab.IsUUID(projectUUID) {
		return nil, NotFound("Project")
	}
	var p Project
	err := db.NewSelect().Model(&p).Where("uuid = ?", projectUUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
	return &p, mapErr(err, "Project")
}

// companyUser finds a user of the company ("User not found" otherwise).
func companyUser(ctx context.Context, db bun.IDB, companyUUID, userUUID string) (*User, error) {
	if !vocab.IsUUID(userUUID) {
		return nil, NotFound("User")
	}
	var u User
	err := db.NewSelect().Model(&u).Where("uuid = ?", userUUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
	return &u, mapErr(err, "User")
}

// SetProjectRole gives the user role on project p ("" takes its role away), the caller's owner
// recorded as who added it.
func (t *AccessTx) SetProjectRole(ctx context.Context, p Project, userUUID, role string) error {
	var cur ProjectMember
	err := t.tx.NewSelect().Model(&cur).Where("project_uuid = ?", p.UUID).Where("user_uuid = ?", userUUID).Scan(ctx)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	now := Now()
	switch {
	case role == "" && !found:
		return nil
	case role == "":
		_, err = t.tx.NewDelete().Model(&cur).WherePK().Exec(ctx)
	case found:
		_, err = t.tx.NewUpdate().Model(&cur).Set("role = ?", role).Set("updated_at = ?", now).WherePK().Exec(ctx)
	default:
		row := ProjectMember{UUID: NewUUID(), CompanyUUID: p.CompanyUUID, ProjectUUID: p.UUID, UserUUID: userUUID, Role: role,
			CreatedAt: now, UpdatedAt: now}
		if t.c.OwnerUUID != "" {
			row.AddedByUUID = &t.c.OwnerUUID
		}
		_, err = t.tx.NewInsert().Model(&row).Exec(ctx)
		err = mapErr(err, "Project member")
	}
	return err
}

// GroupMembers lists the members of a project group the caller can see, oldest first.
func (s *Store) GroupMembers(ctx context.Context, c Caller, groupUUID string) (*GroupView, []MemberListing, error) {
	g, err := s.GetGroup(ctx, c, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	ms, err := s.ListGroupMembers(ctx, g.UUID)
	return g, ms, err
}

// ListGroupMembers lists a project group's members, oldest first (ProjectUUID holds the group's
// uuid).
func (s *Store) ListGroupMembers(ctx context.Context, groupUUID string) ([]MemberListing, error) {
	var rows []MemberListing
	err := s.DB.NewSelect().TableExpr("project_group_members AS pm").ColumnExpr("pm.uuid, pm.company_uuid, pm.user_uuid").
		ColumnExpr("pm.role, pm.added_by_uuid, pm.created_at, pm.updated_at").ColumnExpr("pm.group_uuid AS project_uuid").
		ColumnExpr("u.name AS user_name").ColumnExpr("u.email AS user_email").
		Join("JOIN users AS u ON u.uuid = pm.user_uuid").Where("pm.group_uuid = ?", groupUUID).
		Order("pm.created_at ASC", "pm.uuid ASC").Scan(ctx, &rows)
	return rows, err
}
