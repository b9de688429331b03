package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

// AccessFacts are the access facts a confirmation token covers (docs/rules.md §6.5), one line
// each: a group's or project's visibility and versions, each membership of them, and, where a
// change deletes them, each document's version. Their order carries no meaning.
type AccessFacts []string

func (a *AccessFacts) add(format string, args ...any) {
	*a = append(*a, fmt.Sprintf(format, args...))
}

// GroupAccess adds the group's visibility, access version and memberships to a ("" adds
// nothing).
func (t *AccessTx) GroupAccess(ctx context.Context, a *AccessFacts, groupUUID string) error {
	if groupUUID == "" {
		return nil
	}
	var g ProjectGroup
	if err := t.tx.NewSelect().Model(&g).Where("uuid = ?", groupUUID).Scan(ctx); err != nil {
		return err
	}
	a.add("group %s %s v%d", g.UUID, g.Visibility, g.AccessVersion)
	var ms []ProjectGroupMember
	if err := t.tx.NewSelect().Model(&ms).Where("group_uuid = ?", groupUUID).Scan(ctx); err != nil {
		return err
	}
	for _, m := range ms {
		a.add("group-member %s %s %s", groupUUID, m.UserUUID, m.Role)
	}
	return nil
}

// ProjectAccess adds the project's visibility, group and memberships to a.
func (t *AccessTx) ProjectAccess(ctx context.Context, a *AccessFacts, p Project) error {
	a.add("project %s %s %s", p.UUID, p.Visibility, deref(p.GroupUUID))
	var ms []ProjectMember
	if err := t.tx.NewSelect().Model(&ms).Where("project_uuid = ?", p.UUID).Scan(ctx); err != nil {
		return err
	}
	for _, m := range ms {
		a.add("project-member %s %s %s", p.UUID, m.UserUUID, m.Role)
	}
	return nil
}

// DocumentAccess adds each of the project's documents and its version to a and returns how
// many there are.
func (t *AccessTx) DocumentAccess(ctx context.Context, a *AccessFacts, projectUUID string) (int, error) {
	docs, err := t.ProjectDocuments(ctx, projectUUID)
	if err != nil {
		return 0, err
	}
	for _, d := range docs {
		a.add("document %s %s v%d", projectUUID, d.UUID, d.Version)
	}
	return len(docs), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// RoleChange is one user's level on a project before and after a move.
type RoleChange struct {
	UserUUID string
	UserName string
	Before   Access
	After    Access
}

// RoleChanges lists every user whose level on project p changes when it moves from its group
// into the group target ("" for none), its visibility becoming visibility: those with a role on
// the project or on either group and, when the visibility changes, everyone in the company; in
// uuid order.
func (t *AccessTx) RoleChanges(ctx context.Context, p Project, target, visibility string) ([]RoleChange, error) {
	tx := t.tx
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
		changes = append(changes, RoleChange{UserUUID: u, UserName: names[u], Before: before, After: after})
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
