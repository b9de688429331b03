package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// Project members and agent settings, as operators manage them (chorus project member ...,
// chorus agent update; docs/rules.md §6.3).

// ProjectRef finds a project of the company by uuid or, failing that, by exact name (one match).
func (s *Store) ProjectRef(ctx context.Context, companyUUID, ref string) (*Project, error) {
	var ps []Project
	q := s.DB.NewSelect().Model(&ps).Where("company_uuid = ?", companyUUID)
	if IsUUID(ref) {
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
	if IsUUID(ref) {
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

// ---- members as agents and operators manage them (one rule for both) ----

// Manager is who changes a project's or group's members: an agent acting with its owner's
// access (Caller), or an operator (the chorus project member commands), who manages every
// project of the company whatever its roles.
type Manager struct {
	Caller   Caller
	Operator bool
}

// ErrLastAdmin: the change would leave the project or group without an admin, whom only an
// operator could then replace.
func errLastAdmin(what string) error {
	return &Refusal{Msg: fmt.Sprintf("Cannot take away the last admin role of this %s: make another user admin first", what)}
}

// CheckRole refuses a role that is not one of the three.
func CheckRole(role string) error {
	if parseRole(&role) == AccessNone {
		return &Refusal{Msg: fmt.Sprintf("role must be viewer, editor or admin, got %q", role)}
	}
	return nil
}

// managedProject finds the project m may manage the members of: one it can see (else "Project
// not found") on which it is admin (else ErrProjectManage); an operator, any of the company's.
func (s *Store) managedProject(ctx context.Context, db bun.IDB, m Manager, projectUUID string, manage bool) (*Project, error) {
	if !IsUUID(projectUUID) {
		return nil, NotFound("Project")
	}
	if m.Operator {
		var p Project
		err := db.NewSelect().Model(&p).Where("uuid = ?", projectUUID).Where("company_uuid = ?", m.Caller.CompanyUUID).Scan(ctx)
		return &p, mapErr(err, "Project")
	}
	var v ProjectView
	if err := db.NewSelect().TableExpr("(?) AS v", s.projectRoles(m.Caller)).ColumnExpr("v.*").
		Where("v.uuid = ?", projectUUID).Limit(1).Scan(ctx, &v); err != nil {
		return nil, mapErr(err, "Project")
	}
	if manage && v.Level() < AccessAdmin {
		return nil, ErrProjectManage
	}
	return &v.Project, nil
}

// companyUser finds a user of the company ("User not found" otherwise).
func companyUser(ctx context.Context, db bun.IDB, companyUUID, userUUID string) (*User, error) {
	if !IsUUID(userUUID) {
		return nil, NotFound("User")
	}
	var u User
	err := db.NewSelect().Model(&u).Where("uuid = ?", userUUID).Where("company_uuid = ?", companyUUID).Scan(ctx)
	return &u, mapErr(err, "User")
}

// ProjectMembers lists the members of a project m can see, oldest first.
func (s *Store) ProjectMembers(ctx context.Context, m Manager, projectUUID string) (*Project, []MemberListing, error) {
	p, err := s.managedProject(ctx, s.DB, m, projectUUID, false)
	if err != nil {
		return nil, nil, err
	}
	ms, err := s.ListProjectMembers(ctx, p.UUID)
	return p, ms, err
}

// GrantProjectRole gives a user of the company a role on a project, or changes the one it has
// (docs/rules.md §6.3): the project admins, or an operator, manage members. It refuses to take
// the project's last admin role away, and reports whether anything changed.
func (s *Store) GrantProjectRole(ctx context.Context, m Manager, projectUUID, userUUID, role string) (*Project, *User, bool, error) {
	return s.changeProjectRole(ctx, m, projectUUID, userUUID, role)
}

// RevokeProjectRole takes a user's role on a project away, with GrantProjectRole's rights and
// guard, and reports whether it had one.
func (s *Store) RevokeProjectRole(ctx context.Context, m Manager, projectUUID, userUUID string) (*Project, *User, bool, error) {
	return s.changeProjectRole(ctx, m, projectUUID, userUUID, "")
}

// changeProjectRole sets the user's role ("" removes it), checking in the order of
// docs/rules.md §3.4: the role, the project and the right to manage it, the user, the guard.
func (s *Store) changeProjectRole(ctx context.Context, m Manager, projectUUID, userUUID, role string) (*Project, *User, bool, error) {
	if role != "" {
		if err := CheckRole(role); err != nil {
			return nil, nil, false, err
		}
	}
	var (
		p       *Project
		u       *User
		changed bool
	)
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		changed = false
		if err := lockProject(ctx, tx, projectUUID); err != nil {
			return err
		}
		var err error
		if p, err = s.managedProject(ctx, tx, m, projectUUID, true); err != nil {
			return err
		}
		if u, err = companyUser(ctx, tx, m.Caller.CompanyUUID, userUUID); err != nil {
			return err
		}
		var cur ProjectMember
		err = tx.NewSelect().Model(&cur).Where("project_uuid = ?", p.UUID).Where("user_uuid = ?", u.UUID).Scan(ctx)
		found := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if (!found && role == "") || (found && cur.Role == role) {
			return nil
		}
		if found && cur.Role == "admin" {
			n, err := tx.NewSelect().Model((*ProjectMember)(nil)).Where("project_uuid = ?", p.UUID).Where("role = 'admin'").Count(ctx)
			if err != nil {
				return err
			}
			if n <= 1 {
				return errLastAdmin("project")
			}
		}
		changed = true
		now := Now()
		switch {
		case role == "":
			_, err = tx.NewDelete().Model(&cur).WherePK().Exec(ctx)
		case found:
			_, err = tx.NewUpdate().Model(&cur).Set("role = ?", role).Set("updated_at = ?", now).WherePK().Exec(ctx)
		default:
			row := ProjectMember{UUID: NewUUID(), CompanyUUID: p.CompanyUUID, ProjectUUID: p.UUID, UserUUID: u.UUID, Role: role,
				CreatedAt: now, UpdatedAt: now}
			if m.Caller.OwnerUUID != "" {
				row.AddedByUUID = &m.Caller.OwnerUUID
			}
			_, err = tx.NewInsert().Model(&row).Exec(ctx)
			err = mapErr(err, "Project member")
		}
		return err
	})
	if err != nil {
		return nil, nil, false, err
	}
	return p, u, changed, nil
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
