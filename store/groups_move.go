package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

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
	target := ""
	if dst != nil {
		target = dst.UUID
	}
	changes, err := roleChanges(ctx, tx, p, target, out.Visibility)
	if err != nil {
		return nil, err
	}
	out.Changes = append(out.Changes, changes...)
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

// roleChanges lists every user whose level on project p changes when it moves from its group
// into the group target ("" for none), its visibility becoming visibility: those with a role on
// the project or on either group and, when the visibility changes, everyone in the company; in
// uuid order.
func roleChanges(ctx context.Context, tx bun.IDB, p Project, target, visibility string) ([]RoleChange, error) {
	own, err := memberRoles(ctx, tx, "project_members", "project_uuid", p.UUID)
	if err != nil {
		return nil, err
	}
	src, err := memberRoles(ctx, tx, "project_group_members", "group_uuid", deref(p.GroupUUID))
	if err != nil {
		return nil, err
	}
	to, err := memberRoles(ctx, tx, "project_group_members", "group_uuid", target)
	if err != nil {
		return nil, err
	}
	users := map[string]bool{}
	for _, m := range []map[string]string{own, src, to} {
		for u := range m {
			users[u] = true
		}
	}
	if p.Visibility != visibility {
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
	var changes []RoleChange
	var names map[string]string
	for _, u := range mapsKeys(users) {
		before := projectLevel(p.Visibility, opt(own, u), opt(src, u))
		after := projectLevel(visibility, opt(own, u), opt(to, u))
		if before == after {
			continue
		}
		if names == nil {
			if names, err = userNames(ctx, tx, mapsKeys(users)); err != nil {
				return nil, err
			}
		}
		changes = append(changes, RoleChange{UserUUID: u, UserName: names[u], BeforeRole: before.String(), AfterRole: after.String()})
	}
	return changes, nil
}

// memberRoles maps each user with a role in table (project_members or project_group_members)
// where col is id to that role; it is empty for id "".
func memberRoles(ctx context.Context, tx bun.IDB, table, col, id string) (map[string]string, error) {
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
