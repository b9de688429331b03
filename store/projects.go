package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Caller is who a read or write acts for: an agent of a company, with the project access of its
// owner user, or a person (ActorType "user") signed in to the console, with their own access
// (docs/rules.md §6.3). OwnerUUID is "" for an ownerless agent, which sees public projects only.
// For a person, AgentUUID and AgentName are the user's uuid and display name, and OwnerUUID is the
// user's uuid too: a person is their own principal.
type Caller struct {
	CompanyUUID string
	AgentUUID   string
	AgentName   string
	OwnerUUID   string
	// ActorType is "user" for a person and "" (read as "agent") for an agent.
	ActorType string
}

// Kind is how activity, notifications and workflow histories name the caller: "agent" or "user".
func (c Caller) Kind() string {
	if c.ActorType == "" {
		return "agent"
	}
	return c.ActorType
}

// Access is a caller's level on a project, ordered none < viewer < editor < admin (docs/rules.md §6.3).
type Access int

// The access levels.
const (
	AccessNone Access = iota
	AccessViewer
	AccessEditor
	AccessAdmin
)

func (a Access) String() string {
	return [...]string{"none", "viewer", "editor", "admin"}[a]
}

func parseRole(r *string) Access {
	if r == nil {
		return AccessNone
	}
	switch *r {
	case "viewer":
		return AccessViewer
	case "editor":
		return AccessEditor
	case "admin":
		return AccessAdmin
	}
	return AccessNone
}

// projectLevel applies docs/rules.md §6.3: role = max(project role, group role); a public project gives
// everyone in the company at least editor; a private one gives exactly the role.
func projectLevel(visibility string, memberRole, groupRole *string) Access {
	lvl := max(parseRole(memberRole), parseRole(groupRole))
	if visibility == "public" {
		lvl = max(lvl, AccessEditor)
	}
	return lvl
}

// ProjectCounts are the entity counts shown with a project (docs/rules.md §1.5).
type ProjectCounts struct {
	Ideas      int `bun:"idea_count"`
	Documents  int `bun:"document_count"`
	Tasks      int `bun:"task_count"`
	Proposals  int `bun:"proposal_count"`
	Activities int `bun:"activity_count"`
}

// ProjectView is a project as one caller sees it: the row, the caller's level, and counts.
type ProjectView struct {
	Project    `bun:",extend"`
	MemberRole *string `bun:"member_role"`
	GroupRole  *string `bun:"group_role"`
	ProjectCounts
}

// Level is the caller's access level on the project.
func (v *ProjectView) Level() Access { return projectLevel(v.Visibility, v.MemberRole, v.GroupRole) }

// visibleProjects selects the company's projects the caller can see, with its roles and the
// entity counts, as rows of ProjectView ("project" is the projects alias).
func (s *Store) visibleProjects(c Caller, withActivities bool) *bun.SelectQuery {
	q := s.projectRoles(c).
		ColumnExpr("(SELECT count(*) FROM ideas i WHERE i.project_uuid = project.uuid) AS idea_count").
		ColumnExpr("(SELECT count(*) FROM documents d WHERE d.project_uuid = project.uuid) AS document_count").
		ColumnExpr("(SELECT count(*) FROM tasks t WHERE t.project_uuid = project.uuid) AS task_count").
		ColumnExpr("(SELECT count(*) FROM proposals pr WHERE pr.project_uuid = project.uuid) AS proposal_count")
	if withActivities {
		q = q.ColumnExpr("(SELECT count(*) FROM activities a WHERE a.project_uuid = project.uuid) AS activity_count")
	}
	return q
}

// projectRoles selects the company's projects the caller can see with its roles, and no counts.
func (s *Store) projectRoles(c Caller) *bun.SelectQuery {
	return s.DB.NewSelect().
		TableExpr("projects AS project").
		ColumnExpr("project.*").
		ColumnExpr("pm.role AS member_role").
		ColumnExpr("gm.role AS group_role").
		Join("LEFT JOIN project_members AS pm ON pm.project_uuid = project.uuid AND pm.user_uuid = ?", c.OwnerUUID).
		Join("LEFT JOIN project_group_members AS gm ON gm.group_uuid = project.group_uuid AND gm.user_uuid = ?", c.OwnerUUID).
		Where("project.company_uuid = ?", c.CompanyUUID).
		Where("(project.visibility = 'public' OR pm.role IS NOT NULL OR gm.role IS NOT NULL)")
}

// visibleProjectIDs selects the uuids (column vp.uuid) of the company's projects the caller can
// see (docs/rules.md §6.3), for use as a subquery.
func (s *Store) visibleProjectIDs(c Caller) *bun.SelectQuery {
	return s.DB.NewSelect().TableExpr("projects AS vp").ColumnExpr("vp.uuid").
		Join("LEFT JOIN project_members AS vpm ON vpm.project_uuid = vp.uuid AND vpm.user_uuid = ?", c.OwnerUUID).
		Join("LEFT JOIN project_group_members AS vgm ON vgm.group_uuid = vp.group_uuid AND vgm.user_uuid = ?", c.OwnerUUID).
		Where("vp.company_uuid = ?", c.CompanyUUID).
		Where("(vp.visibility = 'public' OR vpm.role IS NOT NULL OR vgm.role IS NOT NULL)")
}

// ListProjects returns one page of the projects the caller can see, most recently updated first,
// and the total count (docs/rules.md §4.2, chorus_list_projects).
func (s *Store) ListProjects(ctx context.Context, c Caller, limit, offset int) ([]ProjectView, int, error) {
	var rows []ProjectView
	q := s.visibleProjects(c, false)
	total, err := s.DB.NewSelect().TableExpr("(?) AS visible", q).Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	err = q.Order("project.updated_at DESC", "project.uuid DESC").Limit(int64(limit)).Offset(int64(offset)).Scan(ctx, &rows)
	if err != nil {
		return nil, 0, err
	}
	return rows, int(total), nil
}

// GetProject returns a project the caller can see, or a "Project not found" error for one that
// does not exist, belongs to another company, or is hidden (docs/rules.md §6.3: the same answer for all).
func (s *Store) GetProject(ctx context.Context, c Caller, projectUUID string) (*ProjectView, error) {
	if !vocab.IsUUID(projectUUID) {
		return nil, NotFound("Project")
	}
	var v ProjectView
	err := s.visibleProjects(c, true).Where("project.uuid = ?", projectUUID).Limit(1).Scan(ctx, &v)
	if err != nil {
		return nil, mapErr(err, "Project")
	}
	return &v, nil
}

// ErrForbidden: the caller can see the entity but its project role is too low for the operation.
var ErrForbidden = errors.New("Insufficient project access")

// RequireProject returns the project when the caller's level is at least need; a hidden project
// is "Project not found", a visible one with too low a level is ErrForbidden. It is the gate of
// every call naming a project, so it reads the project and the caller's roles only: the
// ProjectView's counts are left zero (GetProject has them). Counting a big project's tasks and
// activities on every read made each call grow with the project (docs/bench-results.md, "Reads").
func (s *Store) RequireProject(ctx context.Context, c Caller, projectUUID string, need Access) (*ProjectView, error) {
	v, err := s.projectGate(ctx, c, projectUUID)
	if err != nil {
		return nil, err
	}
	if v.Level() < need {
		return nil, ErrForbidden
	}
	return v, nil
}

// projectGate is GetProject without the counts: what the project-access gate needs.
func (s *Store) projectGate(ctx context.Context, c Caller, projectUUID string) (*ProjectView, error) {
	if !vocab.IsUUID(projectUUID) {
		return nil, NotFound("Project")
	}
	var v ProjectView
	err := s.projectRoles(c).Where("project.uuid = ?", projectUUID).Limit(1).Scan(ctx, &v)
	if err != nil {
		return nil, mapErr(err, "Project")
	}
	return &v, nil
}

// NewProject is what CreateProject needs (docs/rules.md §4.2, chorus_admin_create_project).
type NewProject struct {
	// UUID is the project's uuid; "" makes a fresh one. A uuid that already names a project of
	// the company (a retried create, derived from its requestId) returns that project.
	UUID        string
	Name        string
	Description *string
	GroupUUID   *string
	Visibility  string // "public" (default) or "private"
	// ClaimTTLSeconds gives task claims a time to live (docs/rules.md §5.10); nil for none.
	ClaimTTLSeconds *int64
}

// CreateProject creates a project. A group, when given, must exist and be visible to the caller
// ("Project group not found"); a project in a private group is private whatever was asked. The
// caller's owner user becomes the project's admin member.
func (s *Store) CreateProject(ctx context.Context, c Caller, n NewProject) (*Project, error) {
	now := Now()
	if n.UUID == "" {
		n.UUID = NewUUID()
	}
	p := Project{UUID: n.UUID, CompanyUUID: c.CompanyUUID, Name: strings.TrimSpace(n.Name),
		Description: n.Description, Visibility: n.Visibility, ClaimTTLSeconds: n.ClaimTTLSeconds, CreatedAt: now, UpdatedAt: now}
	if p.Visibility == "" {
		p.Visibility = "public"
	}
	if c.OwnerUUID != "" {
		p.CreatedByUUID = &c.OwnerUUID
	}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var existing Project
		if err := tx.NewSelect().Model(&existing).Where("uuid = ?", p.UUID).Where("company_uuid = ?", c.CompanyUUID).
			Scan(ctx); err == nil {
			p = existing // made by an earlier attempt of the same call
			return nil
		}
		if n.GroupUUID != nil {
			g, err := visibleGroup(ctx, tx, c, *n.GroupUUID)
			if err != nil {
				return err
			}
			p.GroupUUID = &g.UUID
			if g.Visibility == "private" {
				p.Visibility = "private"
			}
		}
		if _, err := tx.NewInsert().Model(&p).Exec(ctx); err != nil {
			return mapErr(err, "Project")
		}
		if c.OwnerUUID == "" {
			return nil
		}
		m := ProjectMember{UUID: NewUUID(), CompanyUUID: c.CompanyUUID, ProjectUUID: p.UUID, UserUUID: c.OwnerUUID,
			Role: "admin", CreatedAt: now, UpdatedAt: now}
		_, err := tx.NewInsert().Model(&m).Exec(ctx)
		return mapErr(err, "Project member")
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// visibleGroup returns a group of the caller's company that is public or where the caller's
// owner has a role; anything else is "Project group not found".
func visibleGroup(ctx context.Context, db bun.IDB, c Caller, groupUUID string) (*ProjectGroup, error) {
	if !vocab.IsUUID(groupUUID) {
		return nil, NotFound("Project group")
	}
	var g ProjectGroup
	err := db.NewSelect().Model(&g).
		Where("uuid = ?", groupUUID).
		Where("company_uuid = ?", c.CompanyUUID).
		Where("(visibility = 'public' OR EXISTS (SELECT 1 FROM project_group_members m WHERE m.group_uuid = project_group.uuid AND m.user_uuid = ?))", c.OwnerUUID).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("Project group")
	}
	return &g, err
}

// SetProjectClaimTTL sets (nil: clears) the time to live of task claims in a project of the
// company (docs/rules.md §5.10). Claims made before keep the lease they were made with.
func (s *Store) SetProjectClaimTTL(ctx context.Context, companyUUID, projectUUID string, ttlSeconds *int64) error {
	res, err := s.DB.NewUpdate().Model((*Project)(nil)).Set("claim_ttl_seconds = ?", ttlSeconds).Set("updated_at = ?", Now()).
		Where("uuid = ?", projectUUID).Where("company_uuid = ?", companyUUID).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("Project")
	}
	return nil
}

// ProjectClaimTTLs returns the claim time to live of each of the projects that has one.
func (s *Store) ProjectClaimTTLs(ctx context.Context, projectUUIDs []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(projectUUIDs) == 0 {
		return out, nil
	}
	var rows []Project
	err := s.DB.NewSelect().Model(&rows).Column("uuid", "claim_ttl_seconds").Where("uuid IN (?)", bun.List(projectUUIDs)).
		Where("claim_ttl_seconds IS NOT NULL").Scan(ctx)
	for _, p := range rows {
		out[p.UUID] = *p.ClaimTTLSeconds
	}
	return out, err
}
