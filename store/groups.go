package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Project groups and their access (docs/rules.md §6.5, §4.11): plain records in transactions.
// A visibility or membership change bumps the group's access_version, and every change that
// alters who may see what is applied only with a confirmation token computed from the access
// state it was previewed on (ConfirmationToken), so a token goes stale when access changes.

// GroupView is a group as one caller sees it: the row, the caller's explicit role, and the
// number of the group's projects the caller can see.
type GroupView struct {
	ProjectGroup `bun:",extend"`
	MemberRole   *string `bun:"member_role"`
	ProjectCount int     `bun:"project_count"`
}

// Level is the caller's level on the group: its explicit role, at least editor on a public
// group (docs/rules.md §6.5).
func (v *GroupView) Level() Access { return groupLevel(v.Visibility, v.MemberRole) }

// IsAdmin: the caller is an explicit admin of the group.
func (v *GroupView) IsAdmin() bool { return parseRole(v.MemberRole) == AccessAdmin }

func groupLevel(visibility string, role *string) Access {
	l := parseRole(role)
	if visibility == "public" {
		l = max(l, AccessEditor)
	}
	return l
}

// ErrGroupManage: the caller sees the group but may not change it this way.
var ErrGroupManage error = &Refusal{Msg: "Only group admins can manage this group"}

// ErrProjectManage: the caller sees the project but may not move it or delete it with its group
// (docs/rules.md §6.3, manage_project).
var ErrProjectManage error = &Refusal{Msg: "Only project admins can manage this project"}

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
	if !IsUUID(groupUUID) {
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

// ---- confirmation tokens ----

// accessState is everything a confirmation token covers (docs/rules.md §6.5): the groups'
// and projects' visibility, group and access version, and the memberships of all of them.
type accessState struct {
	lines []string
}

func (a *accessState) add(format string, args ...any) {
	a.lines = append(a.lines, fmt.Sprintf(format, args...))
}

// token is the digest of the operation, who asks it, what it changes and the access state it
// was judged on: the same for a preview and its confirmation while nothing changed, different
// as soon as anything it covers does.
func (a *accessState) token(op string, c Caller, change ...string) string {
	h := sha256.New()
	for _, l := range append([]string{"chorus-confirm-v1", op, c.CompanyUUID, c.OwnerUUID, c.AgentUUID}, change...) {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	lines := slices.Clone(a.lines)
	slices.Sort(lines)
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return "cft_" + hex.EncodeToString(h.Sum(nil))[:40]
}

func (a *accessState) group(ctx context.Context, db bun.IDB, groupUUID string) error {
	if groupUUID == "" {
		return nil
	}
	var g ProjectGroup
	if err := db.NewSelect().Model(&g).Where("uuid = ?", groupUUID).Scan(ctx); err != nil {
		return err
	}
	a.add("group %s %s v%d", g.UUID, g.Visibility, g.AccessVersion)
	var ms []ProjectGroupMember
	if err := db.NewSelect().Model(&ms).Where("group_uuid = ?", groupUUID).Scan(ctx); err != nil {
		return err
	}
	for _, m := range ms {
		a.add("group-member %s %s %s", groupUUID, m.UserUUID, m.Role)
	}
	return nil
}

func (a *accessState) project(ctx context.Context, db bun.IDB, p Project) error {
	a.add("project %s %s %s", p.UUID, p.Visibility, deref(p.GroupUUID))
	var ms []ProjectMember
	if err := db.NewSelect().Model(&ms).Where("project_uuid = ?", p.UUID).Scan(ctx); err != nil {
		return err
	}
	for _, m := range ms {
		a.add("project-member %s %s %s", p.UUID, m.UserUUID, m.Role)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ErrConfirmationRequired: a change that alters access was asked without a token.
var ErrConfirmationRequired error = &Refusal{Msg: "Confirmation required: call again with preview=true and pass the returned " +
	"confirmationToken to apply this change"}

// ErrStaleToken: the token does not match the change asked or the access state now.
var ErrStaleToken error = &Refusal{Msg: "Confirmation token is stale or does not match this change: access changed since the " +
	"preview, or the call differs from the previewed one. Call again with preview=true and confirm with the new token"}

// ---- update ----

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

// MemberAction adds, updates or removes one member.
type MemberAction struct {
	Action   string // add | update | remove
	UserUUID string
	Role     string
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

// groupIn is GetGroup inside a transaction.
func (s *Store) groupIn(ctx context.Context, db bun.IDB, c Caller, groupUUID string) (*GroupView, error) {
	if !IsUUID(groupUUID) {
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

func applyMember(ctx context.Context, tx bun.Tx, c Caller, g ProjectGroup, m MemberAction, now time.Time) error {
	if !IsUUID(m.UserUUID) {
		return NotFound("User")
	}
	exists, err := tx.NewSelect().Model((*User)(nil)).Where("uuid = ?", m.UserUUID).Where("company_uuid = ?", c.CompanyUUID).Exists(ctx)
	if err != nil {
		return err
	}
	if !exists {
		return NotFound("User")
	}
	var cur ProjectGroupMember
	err = tx.NewSelect().Model(&cur).Where("group_uuid = ?", g.UUID).Where("user_uuid = ?", m.UserUUID).Scan(ctx)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	switch m.Action {
	case "add", "update":
		if m.Action == "update" && !found {
			return NotFound("Project group member")
		}
		if found {
			if cur.Role == m.Role {
				return nil
			}
			if err := keepAGroupAdmin(ctx, tx, g.UUID, cur); err != nil {
				return err
			}
			_, err = tx.NewUpdate().Model(&cur).Set("role = ?", m.Role).Set("updated_at = ?", now).WherePK().Exec(ctx)
		} else {
			row := ProjectGroupMember{UUID: NewUUID(), CompanyUUID: c.CompanyUUID, GroupUUID: g.UUID, UserUUID: m.UserUUID,
				Role: m.Role, CreatedAt: now, UpdatedAt: now}
			if c.OwnerUUID != "" {
				row.AddedByUUID = &c.OwnerUUID
			}
			_, err = tx.NewInsert().Model(&row).Exec(ctx)
		}
	case "remove":
		if !found {
			return nil
		}
		if err := keepAGroupAdmin(ctx, tx, g.UUID, cur); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model(&cur).WherePK().Exec(ctx)
	default:
		return fmt.Errorf("unknown member action %q", m.Action)
	}
	if err != nil {
		return err
	}
	_, err = tx.NewUpdate().Table("project_groups").Set("access_version = access_version + 1").Set("updated_at = ?", now).
		Where("uuid = ?", g.UUID).Exec(ctx)
	return err
}

// keepAGroupAdmin refuses to take the admin role of cur away when it is the group's last one.
func keepAGroupAdmin(ctx context.Context, tx bun.Tx, groupUUID string, cur ProjectGroupMember) error {
	if cur.Role != "admin" {
		return nil
	}
	n, err := tx.NewSelect().Model((*ProjectGroupMember)(nil)).Where("group_uuid = ?", groupUUID).Where("role = 'admin'").Count(ctx)
	if err != nil || n > 1 {
		return err
	}
	return errLastAdmin("project group")
}

// ---- delete ----

// ErrGroupHasWork: deleteProjects would delete lifecycle entities (docs/rules.md §4.11).
type ErrGroupHasWork struct{ Ideas, Proposals, Tasks int }

func (e *ErrGroupHasWork) Error() string {
	return fmt.Sprintf("Cannot delete the group's projects: they still hold %d idea(s), %d proposal(s) and %d task(s). "+
		"Delete those first (or move the ideas to another project with chorus_move_idea), or delete the group with "+
		"deleteProjects=false, which keeps the projects ungrouped", e.Ideas, e.Proposals, e.Tasks)
}

// GroupDeletion is chorus_admin_delete_project_group: a preview, or the deletion it showed.
type GroupDeletion struct {
	GroupUUID      string
	DeleteProjects bool
	Preview        bool
	Token          string
}

// DeletionPreview is what deleting a group does (docs/rules.md §4.11): each of its projects with
// what happens to it, the members whose role goes, and the token that applies this very deletion.
type DeletionPreview struct {
	GroupUUID      string
	Name           string
	DeleteProjects bool
	Projects       []ProjectDeletion
	Members        int
	Summary        string
	Token          string
}

// ProjectDeletion is one project of a group being deleted: "deleted" (with its documents, their
// comments and its activities) or "ungrouped".
type ProjectDeletion struct {
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	Visibility string `json:"visibility"`
	Action     string `json:"action"`
	Documents  int    `json:"documents"`
}

// DeleteGroup deletes a group, or previews it (docs/rules.md §4.11, §6.5). It is destructive
// and changes access, so the caller needs an explicit admin role on the group (a public group's
// editor floor is not enough) and admin on every project it deletes, and applying needs the
// token of a preview made on the same state: the group's access, each project's access and, when
// its projects are deleted, every document they hold (so one added since makes the token
// stale). Without deleteProjects the projects stay, ungrouped; with it they are deleted with
// their documents, comments and activities, which is refused while they hold ideas, proposals or
// tasks (their workflows would outlive their rows). It returns the preview, or what was done.
func (s *Store) DeleteGroup(ctx context.Context, c Caller, d GroupDeletion) (*DeletionPreview, error) {
	var out *DeletionPreview
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = nil
		if err := lockRow(ctx, tx, "project_groups", d.GroupUUID); err != nil {
			return err
		}
		v, err := s.groupIn(ctx, tx, c, d.GroupUUID)
		if err != nil {
			return err
		}
		if !v.IsAdmin() {
			return ErrGroupManage
		}
		var all []Project
		if err := tx.NewSelect().Model(&all).Where("group_uuid = ?", d.GroupUUID).Order("name ASC", "uuid ASC").Scan(ctx); err != nil {
			return err
		}
		var seen []ProjectView
		if err := s.projectRoles(c).Conn(tx).Where("project.group_uuid = ?", d.GroupUUID).Scan(ctx, &seen); err != nil {
			return err
		}
		if len(seen) < len(all) {
			return ErrProjectManage
		}
		for _, p := range seen {
			if d.DeleteProjects && p.Level() < AccessAdmin {
				return ErrProjectManage
			}
		}
		ids := make([]string, len(all))
		for i, p := range all {
			ids[i] = p.UUID
		}
		if d.DeleteProjects && len(ids) > 0 {
			var work ErrGroupHasWork
			for _, x := range []struct {
				table string
				n     *int
			}{{"ideas", &work.Ideas}, {"proposals", &work.Proposals}, {"tasks", &work.Tasks}} {
				n, err := tx.NewSelect().Table(x.table).Where("project_uuid IN (?)", bun.List(ids)).Count(ctx)
				if err != nil {
					return err
				}
				*x.n = int(n)
			}
			if work.Ideas+work.Proposals+work.Tasks > 0 {
				return &work
			}
		}
		p, err := groupDeletionPreview(ctx, tx, c, v.ProjectGroup, all, d.DeleteProjects)
		if err != nil {
			return err
		}
		out = p
		if d.Preview {
			return nil
		}
		switch {
		case d.Token == "":
			return ErrConfirmationRequired
		case d.Token != p.Token:
			return ErrStaleToken
		}
		p.Token = ""
		if d.DeleteProjects && len(ids) > 0 {
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
				Where("group_uuid = ?", d.GroupUUID).Exec(ctx); err != nil {
				return err
			}
		}
		if _, err := tx.NewDelete().Table("project_group_members").Where("group_uuid = ?", d.GroupUUID).Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewDelete().Table("project_groups").Where("uuid = ?", d.GroupUUID).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// groupDeletionPreview says what deleting g with its projects (all) does, and computes the token
// over everything that decides it: the group's and each project's access and, when the projects
// are deleted, each document's uuid and version.
func groupDeletionPreview(ctx context.Context, tx bun.IDB, c Caller, g ProjectGroup, all []Project, deleteProjects bool) (*DeletionPreview, error) {
	var st accessState
	if err := st.group(ctx, tx, g.UUID); err != nil {
		return nil, err
	}
	members, err := tx.NewSelect().Table("project_group_members").Where("group_uuid = ?", g.UUID).Count(ctx)
	if err != nil {
		return nil, err
	}
	out := &DeletionPreview{GroupUUID: g.UUID, Name: g.Name, DeleteProjects: deleteProjects, Projects: []ProjectDeletion{},
		Members: int(members)}
	documents := 0
	for _, p := range all {
		if err := st.project(ctx, tx, p); err != nil {
			return nil, err
		}
		pd := ProjectDeletion{UUID: p.UUID, Name: p.Name, Visibility: p.Visibility, Action: "ungrouped"}
		if deleteProjects {
			pd.Action = "deleted"
			var docs []Document
			if err := tx.NewSelect().Model(&docs).Column("uuid", "version").Where("project_uuid = ?", p.UUID).Scan(ctx); err != nil {
				return nil, err
			}
			for _, d := range docs {
				st.add("document %s %s v%d", p.UUID, d.UUID, d.Version)
			}
			pd.Documents = len(docs)
			documents += len(docs)
		}
		out.Projects = append(out.Projects, pd)
	}
	if deleteProjects {
		out.Summary = fmt.Sprintf("Deletes the group %q and its %d project(s) with their %d document(s), comments and "+
			"activities; %d member(s) lose their role on the group. This cannot be undone.", g.Name, len(all), documents, members)
	} else {
		out.Summary = fmt.Sprintf("Deletes the group %q; its %d project(s) stay, ungrouped, and %d member(s) lose their role "+
			"on the group, and with it the access it gave them to those projects.", g.Name, len(all), members)
	}
	mode := "ungroup"
	if deleteProjects {
		mode = "delete-projects"
	}
	out.Token = st.token("group-delete", c, g.UUID, mode)
	return out, nil
}

// manageLevel is manage_project (docs/rules.md §6.3): editor on a public project, admin on a
// private one.
func manageLevel(visibility string) Access {
	if visibility == "private" {
		return AccessAdmin
	}
	return AccessEditor
}

// ---- move a project between groups ----

// ProjectMove is chorus_admin_move_project_to_group.
type ProjectMove struct {
	ProjectUUID string
	GroupUUID   *string // nil: out of any group
	Preview     bool
	Token       string
}

// RoleChange is one user's level on a project before and after a move.
type RoleChange struct {
	UserUUID   string `json:"userUuid"`
	UserName   string `json:"userName"`
	BeforeRole string `json:"beforeRole"`
	AfterRole  string `json:"afterRole"`
}

// MovePreview is what moving a project to another group would do (docs/rules.md §4.11).
type MovePreview struct {
	ProjectUUID          string       `json:"projectUuid"`
	Name                 string       `json:"name"`
	SourceGroupUUID      *string      `json:"sourceGroupUuid"`
	GroupUUID            *string      `json:"groupUuid"`
	FromVisibility       string       `json:"fromVisibility"`
	Visibility           string       `json:"visibility"`
	CompanyAccess        string       `json:"companyAccess"`
	Changes              []RoleChange `json:"changes"`
	Summary              string       `json:"summary"`
	RequiresConfirmation bool         `json:"requiresConfirmation"`
	Token                string       `json:"confirmationToken"`
}

// errMoveNotFound is the one answer for a project or group the caller cannot see.
var errMoveNotFound = NotFound("Project or project group")

// MoveProject moves a project into a group (or out of any), or previews it. The caller needs
// manage_project, and admin when the move crosses a private boundary (the project, its group
// or the target group is private) or raises anyone's access. A move that changes anyone's level
// or the project's visibility needs the preview's token. A private target group makes the
// project private. It returns the project after the move (nil with a preview) and the move's
// impact: what it would do (a preview) or what it did.
func (s *Store) MoveProject(ctx context.Context, c Caller, m ProjectMove) (*Project, *MovePreview, error) {
	var out *Project
	var preview *MovePreview
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out, preview = nil, nil
		if err := lockProject(ctx, tx, m.ProjectUUID); err != nil {
			return err
		}
		var pv ProjectView
		if !IsUUID(m.ProjectUUID) {
			return errMoveNotFound
		}
		if err := s.projectRoles(c).Conn(tx).Where("project.uuid = ?", m.ProjectUUID).Limit(1).Scan(ctx, &pv); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return errMoveNotFound
			}
			return err
		}
		var dst *GroupView
		if m.GroupUUID != nil {
			g, err := s.groupIn(ctx, tx, c, *m.GroupUUID)
			if errors.Is(err, ErrNotFound) {
				return errMoveNotFound
			}
			if err != nil {
				return err
			}
			dst = g
		}
		if pv.Level() < manageLevel(pv.Visibility) {
			return ErrProjectManage
		}
		p, err := moveImpact(ctx, tx, c, pv.Project, dst)
		if err != nil {
			return err
		}
		crosses := pv.Visibility == "private" || p.Visibility == "private"
		if pv.GroupUUID != nil {
			var src ProjectGroup
			if err := tx.NewSelect().Model(&src).Where("uuid = ?", *pv.GroupUUID).Scan(ctx); err != nil {
				return err
			}
			crosses = crosses || src.Visibility == "private"
		}
		widens := slices.ContainsFunc(p.Changes, func(r RoleChange) bool { return rank(r.AfterRole) > rank(r.BeforeRole) })
		if (crosses || widens) && pv.Level() < AccessAdmin {
			return ErrProjectManage
		}
		preview = p
		if m.Preview {
			return nil
		}
		if deref(pv.GroupUUID) == deref(m.GroupUUID) {
			out = &pv.Project
			return nil
		}
		if p.RequiresConfirmation {
			switch {
			case m.Token == "":
				return ErrConfirmationRequired
			case m.Token != p.Token:
				return ErrStaleToken
			}
		}
		now := Now()
		if _, err := tx.NewUpdate().Table("projects").Set("group_uuid = ?", m.GroupUUID).Set("visibility = ?", p.Visibility).
			Set("updated_at = ?", now).Where("uuid = ?", pv.UUID).Exec(ctx); err != nil {
			return err
		}
		var touched []string
		for _, g := range []*string{pv.GroupUUID, m.GroupUUID} {
			if g != nil {
				touched = append(touched, *g)
			}
		}
		if len(touched) > 0 {
			if _, err := tx.NewUpdate().Table("project_groups").Set("access_version = access_version + 1").
				Where("uuid IN (?)", bun.List(touched)).Exec(ctx); err != nil {
				return err
			}
		}
		moved := pv.Project
		moved.GroupUUID, moved.Visibility, moved.UpdatedAt = m.GroupUUID, p.Visibility, now
		out = &moved
		return nil
	})
	return out, preview, err
}

func rank(level string) int {
	return slices.Index([]string{"none", "viewer", "editor", "admin"}, level)
}

// moveImpact computes the move's preview: the visibility after it and every user whose level on
// the project changes (one with a role on the project or a group concerned, and, when the
// visibility changes, everyone in the company), with the token over the access state.
func moveImpact(ctx context.Context, tx bun.IDB, c Caller, p Project, dst *GroupView) (*MovePreview, error) {
	out := &MovePreview{ProjectUUID: p.UUID, Name: p.Name, SourceGroupUUID: p.GroupUUID, FromVisibility: p.Visibility,
		Visibility: p.Visibility, CompanyAccess: "unchanged", Changes: []RoleChange{}}
	var st accessState
	if err := st.project(ctx, tx, p); err != nil {
		return nil, err
	}
	if err := st.group(ctx, tx, deref(p.GroupUUID)); err != nil {
		return nil, err
	}
	if dst != nil {
		out.GroupUUID = &dst.UUID
		if err := st.group(ctx, tx, dst.UUID); err != nil {
			return nil, err
		}
		if dst.Visibility == "private" {
			out.Visibility = "private"
		}
	}
	if out.FromVisibility != out.Visibility {
		out.CompanyAccess = "closed"
	}
	roles := func(table, col, id string) (map[string]string, error) {
		got := map[string]string{}
		if id == "" {
			return got, nil
		}
		var rows []struct {
			User string `bun:"user_uuid"`
			Role string `bun:"role"`
		}
		if err := tx.NewSelect().Table(table).Column("user_uuid", "role").Where(col+" = ?", id).Scan(ctx, &rows); err != nil {
			return nil, err
		}
		for _, r := range rows {
			got[r.User] = r.Role
		}
		return got, nil
	}
	own, err := roles("project_members", "project_uuid", p.UUID)
	if err != nil {
		return nil, err
	}
	src, err := roles("project_group_members", "group_uuid", deref(p.GroupUUID))
	if err != nil {
		return nil, err
	}
	target := ""
	if dst != nil {
		target = dst.UUID
	}
	to, err := roles("project_group_members", "group_uuid", target)
	if err != nil {
		return nil, err
	}
	users := map[string]bool{}
	for _, m := range []map[string]string{own, src, to} {
		for u := range m {
			users[u] = true
		}
	}
	if out.FromVisibility != out.Visibility {
		// Everyone in the company reaches a public project: each one's level may change.
		var all []string
		if err := tx.NewSelect().Table("users").Column("uuid").Where("company_uuid = ?", p.CompanyUUID).Scan(ctx, &all); err != nil {
			return nil, err
		}
		for _, u := range all {
			users[u] = true
		}
	}
	opt := func(m map[string]string, u string) *string {
		if r, ok := m[u]; ok {
			return &r
		}
		return nil
	}
	var names map[string]string
	for _, u := range mapsKeys(users) {
		before := projectLevel(out.FromVisibility, opt(own, u), opt(src, u))
		after := projectLevel(out.Visibility, opt(own, u), opt(to, u))
		if before == after {
			continue
		}
		if names == nil {
			if names, err = userNames(ctx, tx, mapsKeys(users)); err != nil {
				return nil, err
			}
		}
		out.Changes = append(out.Changes, RoleChange{UserUUID: u, UserName: names[u], BeforeRole: before.String(), AfterRole: after.String()})
	}
	out.RequiresConfirmation = len(out.Changes) > 0 || out.FromVisibility != out.Visibility
	widened, narrowed := 0, 0
	for _, ch := range out.Changes {
		if rank(ch.AfterRole) > rank(ch.BeforeRole) {
			widened++
		} else {
			narrowed++
		}
	}
	out.Summary = fmt.Sprintf("Moving %q: %d user(s) gain access, %d lose some", p.Name, widened, narrowed)
	if out.CompanyAccess == "closed" {
		out.Summary += "; the project becomes private (the target group is private), so people without a role lose access"
	}
	if !out.RequiresConfirmation {
		out.Summary += "; nobody's access changes, so no confirmation is needed"
	}
	out.Token = st.token("project-move", c, p.UUID, deref(p.GroupUUID), target)
	return out, nil
}

func mapsKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func userNames(ctx context.Context, db bun.IDB, uuids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(uuids) == 0 {
		return out, nil
	}
	var users []User
	if err := db.NewSelect().Model(&users).Where("uuid IN (?)", bun.List(uuids)).Scan(ctx); err != nil {
		return nil, err
	}
	for _, u := range users {
		out[u.UUID] = u.DisplayName()
	}
	return out, nil
}

// ---- dashboard ----

// GroupDashboard is chorus_get_group_dashboard over the group's visible projects.
type GroupDashboard struct {
	Projects        []DashboardProject
	TotalTasks      int
	CompletedTasks  int
	OpenIdeas       int
	ActiveProposals int
	Recent          []DashboardActivity
}

// DashboardProject is one project's line of the dashboard.
type DashboardProject struct {
	UUID, Name, Visibility string
	Tasks, Completed       int
}

// DashboardActivity is one recent activity of the group's projects.
type DashboardActivity struct {
	Activity    `bun:",extend"`
	ProjectName string `bun:"project_name"`
}

// Dashboard reads the dashboard of a group the caller can see (counting only its projects the
// caller can see).
func (s *Store) Dashboard(ctx context.Context, c Caller, groupUUID string) (*GroupView, *GroupDashboard, error) {
	g, err := s.GetGroup(ctx, c, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	projects, err := s.GroupProjects(ctx, c, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	d := &GroupDashboard{Projects: []DashboardProject{}, Recent: []DashboardActivity{}}
	if len(projects) == 0 {
		return g, d, nil
	}
	ids := make([]string, len(projects))
	for i, p := range projects {
		ids[i] = p.UUID
	}
	var taskRows []struct {
		Project string `bun:"project_uuid"`
		Status  string `bun:"status"`
		N       int    `bun:"n"`
	}
	if err := s.DB.NewSelect().Table("tasks").Column("project_uuid", "status").ColumnExpr("count(*) AS n").
		Where("project_uuid IN (?)", bun.List(ids)).Group("project_uuid", "status").Scan(ctx, &taskRows); err != nil {
		return nil, nil, err
	}
	per := map[string]*DashboardProject{}
	for _, p := range projects {
		dp := DashboardProject{UUID: p.UUID, Name: p.Name, Visibility: p.Visibility}
		d.Projects = append(d.Projects, dp)
	}
	for i := range d.Projects {
		per[d.Projects[i].UUID] = &d.Projects[i]
	}
	for _, r := range taskRows {
		p := per[r.Project]
		p.Tasks += r.N
		d.TotalTasks += r.N
		if r.Status == "done" || r.Status == "closed" {
			p.Completed += r.N
			d.CompletedTasks += r.N
		}
	}
	n, err := s.DB.NewSelect().Table("ideas").Where("project_uuid IN (?)", bun.List(ids)).
		Where("status IN ('open', 'elaborating')").Count(ctx)
	if err != nil {
		return nil, nil, err
	}
	d.OpenIdeas = int(n)
	if n, err = s.DB.NewSelect().Table("proposals").Where("project_uuid IN (?)", bun.List(ids)).
		Where("status IN ('draft', 'pending')").Count(ctx); err != nil {
		return nil, nil, err
	}
	d.ActiveProposals = int(n)
	// The Activity columns by name: on PostgreSQL the table also has seq (migration 20261201000010).
	err = s.DB.NewSelect().TableExpr("activities AS a").
		ColumnExpr("a.uuid, a.company_uuid, a.project_uuid, a.target_type, a.target_uuid, a.actor_type, a.actor_uuid").
		ColumnExpr("a.action, a.value, a.session_uuid, a.session_name, a.created_at").ColumnExpr("p.name AS project_name").
		Join("JOIN projects AS p ON p.uuid = a.project_uuid").Where("a.project_uuid IN (?)", bun.List(ids)).
		Order("a.created_at DESC", "a.uuid DESC").Limit(20).Scan(ctx, &d.Recent)
	if err != nil {
		return nil, nil, err
	}
	acts := make([]Activity, len(d.Recent))
	for i := range d.Recent {
		acts[i] = d.Recent[i].Activity
	}
	if err := s.foreignNames(ctx, c, acts); err != nil {
		return nil, nil, err
	}
	for i := range d.Recent {
		d.Recent[i].Value = acts[i].Value
	}
	return g, d, nil
}

// CompletionRate is round(100*completed/total), 0 without tasks.
func CompletionRate(completed, total int) int {
	if total == 0 {
		return 0
	}
	return (200*completed + total) / (2 * total)
}
