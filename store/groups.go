package store

import (
	"context"
	"strings"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Project groups and their access (docs/rules.md §6.5, §4.11): plain records in transactions.
// A visibility or membership change bumps the group's access_version. Who may change what, and
// the confirmation tokens and previews of changes to access, are package app's; store reads the
// facts and writes the changes (store.AccessTx).
//
// By concern: this file reads and creates groups; groups_tx.go is the transaction of a change
// to access and its reads; groups_access.go the access facts a confirmation token covers and the
// role changes of a move; groups_writes.go the writes; groups_dashboard.go
// chorus_get_group_dashboard.

// GroupView is a group as one caller sees it: the row, the caller's explicit role, and the
// number of the group's projects the caller can see.
type GroupView struct {
	ProjectGroup `bun:",extend"`
	MemberRole   *string `bun:"member_role"`
	ProjectCount int     `bun:"project_count"`
}

// groups selects the company's groups the caller can see, with its role and its count of
// visible projects ("g" is the groups alias).
func (s *Store) groups(c Caller) *bun.SelectQuery {
	return s.DB.NewSelect().
		TableExpr("project_groups AS g").
		ColumnExpr("g.*").
		ColumnExpr("gm.role AS member_role").
		ColumnExpr("(SELECT count(*) FROM projects p WHERE p.group_uuid = g.uuid AND (p.visibility = 'public' OR gm.role IS NOT NULL "+
			"OR EXISTS (SELECT 1 FROM project_members m WHERE m.project_uuid = p.uuid AND m.user_uuid = ?))) AS project_count", c.OwnerUUID).
		Join("LEFT JOIN project_group_members AS gm ON gm.group_uuid = g.uuid AND gm.user_uuid = ?", c.OwnerUUID).
		Where("g.company_uuid = ?", c.CompanyUUID).
		Where("(g.visibility = 'public' OR gm.role IS NOT NULL)")
}

// ListGroups returns a page of the groups the caller can see, oldest first, their total, and
// the number of visible projects in no group (chorus_get_project_groups).
func (s *Store) ListGroups(ctx context.Context, c Caller, limit, offset int) ([]GroupView, int, int, error) {
	var rows []GroupView
	q := s.groups(c)
	total, err := s.DB.NewSelect().TableExpr("(?) AS visible", q).Count(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := q.Order("g.created_at ASC", "g.uuid ASC").Limit(int64(limit)).Offset(int64(offset)).Scan(ctx, &rows); err != nil {
		return nil, 0, 0, err
	}
	ungrouped, err := s.DB.NewSelect().TableExpr("(?) AS visible", s.projectRoles(c).Where("project.group_uuid IS NULL")).Count(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	return rows, int(total), int(ungrouped), nil
}

// GetGroup returns a group the caller can see; a missing, foreign or hidden group is "Project
// group not found".
func (s *Store) GetGroup(ctx context.Context, c Caller, groupUUID string) (*GroupView, error) {
	if !vocab.IsUUID(groupUUID) {
		return nil, NotFound("Project group")
	}
	var v GroupView
	if err := s.groups(c).Where("g.uuid = ?", groupUUID).Limit(1).Scan(ctx, &v); err != nil {
		return nil, mapErr(err, "Project group")
	}
	return &v, nil
}

// GroupProjects returns the group's projects the caller can see, most recently updated first.
func (s *Store) GroupProjects(ctx context.Context, c Caller, groupUUID string) ([]ProjectView, error) {
	var rows []ProjectView
	err := s.projectRoles(c).Where("project.group_uuid = ?", groupUUID).
		Order("project.updated_at DESC", "project.uuid DESC").Scan(ctx, &rows)
	return rows, err
}

// NewGroup is what CreateGroup needs.
type NewGroup struct {
	// UUID is the group's uuid; "" makes a fresh one. A uuid that already names a group of the
	// company (a retried create, derived from its requestId) returns that group.
	UUID        string
	Name        string
	Description string
	Visibility  string
}

// CreateGroup creates a group; the caller's owner user becomes its admin.
func (s *Store) CreateGroup(ctx context.Context, c Caller, n NewGroup) (*GroupView, error) {
	now := Now()
	if n.UUID == "" {
		n.UUID = NewUUID()
	}
	g := ProjectGroup{UUID: n.UUID, CompanyUUID: c.CompanyUUID, Name: strings.TrimSpace(n.Name), Description: n.Description,
		Visibility: n.Visibility, CreatedAt: now, UpdatedAt: now}
	if g.Visibility == "" {
		g.Visibility = "public"
	}
	if c.OwnerUUID != "" {
		g.CreatedByUUID = &c.OwnerUUID
	}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		exists, err := tx.NewSelect().Model((*ProjectGroup)(nil)).Where("uuid = ?", g.UUID).Where("company_uuid = ?", c.CompanyUUID).Exists(ctx)
		if err != nil || exists {
			return err // made by an earlier attempt of the same call
		}
		if _, err := tx.NewInsert().Model(&g).Exec(ctx); err != nil {
			return mapErr(err, "Project group")
		}
		if c.OwnerUUID == "" {
			return nil
		}
		m := ProjectGroupMember{UUID: NewUUID(), CompanyUUID: c.CompanyUUID, GroupUUID: g.UUID, UserUUID: c.OwnerUUID,
			Role: "admin", AddedByUUID: &c.OwnerUUID, CreatedAt: now, UpdatedAt: now}
		_, err = tx.NewInsert().Model(&m).Exec(ctx)
		return mapErr(err, "Project group member")
	})
	if err != nil {
		return nil, err
	}
	return s.GetGroup(ctx, c, g.UUID)
}

// groupIn is GetGroup inside a transaction.
func (s *Store) groupIn(ctx context.Context, db bun.IDB, c Caller, groupUUID string) (*GroupView, error) {
	if !vocab.IsUUID(groupUUID) {
		return nil, NotFound("Project group")
	}
	var v GroupView
	q := s.groups(c)
	q = db.NewSelect().TableExpr("(?) AS v", q).ColumnExpr("v.*").Where("v.uuid = ?", groupUUID).Limit(1)
	if err := q.Scan(ctx, &v); err != nil {
		return nil, mapErr(err, "Project group")
	}
	return &v, nil
}

// Level is the caller's level on the group: its explicit role, at least editor on a public
// group (docs/rules.md §6.5).
func (v *GroupView) Level() Access {
	l := parseRole(v.MemberRole)
	if v.Visibility == "public" {
		l = max(l, AccessEditor)
	}
	return l
}

// IsAdmin: the caller is an explicit admin of the group.
func (v *GroupView) IsAdmin() bool { return parseRole(v.MemberRole) == AccessAdmin }
