package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Project groups (docs/rules.md §4.11, §6.5) are plain records: store reads and writes them in
// one transaction (store.AccessTx); these use cases decide who may do what, whether a change
// needs a confirmation, and word the previews and refusals.

// ListGroups returns a page of the groups the caller can see, their total, and the number of
// visible projects in no group.
func (a *App) ListGroups(ctx context.Context, r Request, limit, offset int) ([]store.GroupView, int, int, error) {
	return a.Store.ListGroups(ctx, r.Who.Caller, limit, offset)
}

// GetGroup returns a group the caller can see with its projects the caller can see.
func (a *App) GetGroup(ctx context.Context, r Request, groupUUID string) (*store.GroupView, []store.ProjectView, error) {
	g, err := a.Store.GetGroup(ctx, r.Who.Caller, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	ps, err := a.Store.GroupProjects(ctx, r.Who.Caller, g.UUID)
	return g, ps, err
}

// GroupDashboard reads a group's dashboard over its projects the caller can see.
func (a *App) GroupDashboard(ctx context.Context, r Request, groupUUID string) (*store.GroupView, *store.GroupDashboard, error) {
	return a.Store.Dashboard(ctx, r.Who.Caller, groupUUID)
}

// NewGroup is a group to create.
type NewGroup struct {
	Name        string
	Description string
	// Visibility is public or private; "" is public.
	Visibility string
}

// CreateGroup creates a group; the caller's owner becomes its admin. A retried call (same
// requestId) returns the group the first one made.
func (a *App) CreateGroup(ctx context.Context, r Request, n NewGroup) (*store.GroupView, error) {
	if err := workflows.CheckTitle("", "name", &n.Name); err != nil {
		return nil, err
	}
	if n.Visibility == "private" && r.Who.Caller.OwnerUUID == "" {
		return nil, Refuse(vocab.RefusedPrecondition, "An agent without an owner cannot create a private group: its members "+
			"are users, and no user would be one. Create it public, or give the agent an owner.")
	}
	return a.Store.CreateGroup(ctx, r.Who.Caller, store.NewGroup{UUID: r.NewID("project-group"), Name: n.Name,
		Description: n.Description, Visibility: n.Visibility})
}

// GroupUpdate is a rename or visibility change of a group (the front end sends one member
// action through SetGroupMember instead).
type GroupUpdate struct {
	GroupUUID   string
	Name        *string
	Description *string
	Visibility  *string
	// Preview: with a visibility change, say what it does and change nothing.
	Preview bool
	// Token is the confirmation token of the preview of this visibility change.
	Token string
	// Member is a member action instead of the fields.
	Member *MemberAction
}

// MemberAction adds, updates or removes one member of a group.
type MemberAction struct {
	Action   string // add | update | remove
	UserUUID string
	Role     string
}

// VisibilityPreview is what changing a group's visibility would do (docs/rules.md §4.11).
type VisibilityPreview struct {
	GroupUUID      string
	FromVisibility string
	Visibility     string
	// CompanyAccess is opened, closed or unchanged.
	CompanyAccess string
	Projects      []ProjectImpact
	Summary       string
	Token         string
}

// ProjectImpact is one project's visibility before and after a change.
type ProjectImpact struct {
	UUID           string
	Name           string
	FromVisibility string
	Visibility     string
}

// UpdateGroup applies u and returns the group after it; with Preview and a visibility change it
// changes nothing and returns the preview. Renaming needs an explicit group admin, or the editor
// floor of a public group; visibility and members need an explicit group admin, and a visibility
// change needs its preview's token.
func (a *App) UpdateGroup(ctx context.Context, r Request, u GroupUpdate) (*store.GroupView, *VisibilityPreview, error) {
	if err := workflows.CheckTitle("", "name", u.Name); err != nil {
		return nil, nil, err
	}
	var preview *VisibilityPreview
	err := a.Store.InAccessTx(ctx, r.Who.Caller, func(ctx context.Context, t *store.AccessTx) error {
		preview = nil
		v, err := t.LockGroup(ctx, u.GroupUUID)
		if err != nil {
			return err
		}
		if u.Member != nil {
			return memberAction(ctx, t, v, *u.Member)
		}
		if (u.Name != nil || u.Description != nil) && !v.IsAdmin() && v.Visibility != "public" {
			return errGroupManage()
		}
		f := store.GroupFields{Name: u.Name, Description: u.Description}
		if u.Visibility != nil && *u.Visibility != v.Visibility {
			if !v.IsAdmin() {
				return errGroupManage()
			}
			p, err := visibilityPreview(ctx, t, r.Who.Caller, v.ProjectGroup, *u.Visibility)
			if err != nil {
				return err
			}
			if u.Preview {
				preview = p
				return nil
			}
			if err := checkToken(u.Token, p.Token); err != nil {
				return err
			}
			f.Visibility = u.Visibility
			f.ProjectsPrivate = visibilityIn(*u.Visibility, "public") == "private"
		}
		return t.UpdateGroup(ctx, u.GroupUUID, f)
	})
	if err != nil || preview != nil {
		return nil, preview, err
	}
	v, err := a.Store.GetGroup(ctx, r.Who.Caller, u.GroupUUID)
	if errors.Is(err, store.ErrNotFound) {
		// A member action removed the caller's own access to a private group: nothing more to show.
		return nil, nil, Refuse(vocab.RefusedPrecondition, "The member was removed; you no longer have access to this private group")
	}
	return v, nil, err
}

// SetGroupMember applies one member action to a group, as chorus_admin_update_project_group
// does: the caller must be an explicit admin of the group, and the last admin stays.
func (a *App) SetGroupMember(ctx context.Context, r Request, groupUUID string, m MemberAction) error {
	return a.Store.InAccessTx(ctx, r.Who.Caller, func(ctx context.Context, t *store.AccessTx) error {
		v, err := t.LockGroup(ctx, groupUUID)
		if err != nil {
			return err
		}
		return memberAction(ctx, t, v, m)
	})
}

// memberAction applies m to group v, whose row t holds locked. An action that changes nothing
// (the same role, removing a user who is not a member) writes nothing.
func memberAction(ctx context.Context, t *store.AccessTx, v *store.GroupView, m MemberAction) error {
	if !v.IsAdmin() {
		return errGroupManage()
	}
	if _, err := t.CompanyUser(ctx, m.UserUUID); err != nil {
		return err
	}
	f, err := t.GroupMember(ctx, v.UUID, m.UserUUID)
	if err != nil {
		return err
	}
	role := m.Role
	switch m.Action {
	case "add", "update":
		if m.Action == "update" && f.Role == "" {
			return store.NotFound("Project group member")
		}
	case "remove":
		role = ""
	default:
		return fmt.Errorf("unknown member action %q", m.Action)
	}
	if f.Role == role {
		return nil
	}
	if err := keepAnAdmin(f, "project group"); err != nil {
		return err
	}
	return t.SetGroupMember(ctx, v.UUID, m.UserUUID, role)
}
