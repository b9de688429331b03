package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// ProjectMove moves a project into a group, or out of any.
type ProjectMove struct {
	ProjectUUID string
	GroupUUID   *string // nil: out of any group
	Preview     bool
	Token       string
}

// MovePreview is what moving a project to another group would do (docs/rules.md §4.11).
type MovePreview struct {
	ProjectUUID     string
	Name            string
	SourceGroupUUID *string
	GroupUUID       *string
	FromVisibility  string
	Visibility      string
	// CompanyAccess is closed when the project becomes private, else unchanged.
	CompanyAccess        string
	Changes              []store.RoleChange
	Summary              string
	RequiresConfirmation bool
	Token                string
}

// errMoveNotFound is the one answer for a project or group the caller cannot see.
func errMoveNotFound() error {
	return Refuse(vocab.RefusedNotFound, "Project or project group not found")
}

// MoveProject moves a project into a group (or out of any), or previews it. The caller needs
// manage_project, and admin when the move crosses a private boundary (the project, its group
// or the target group is private) or raises anyone's access. A move that changes anyone's level
// or the project's visibility needs the preview's token. A private target group makes the
// project private. It returns the project after the move (nil with a preview) and the move's
// impact: what it would do (a preview) or what it did.
func (a *App) MoveProject(ctx context.Context, r Request, m ProjectMove) (*store.Project, *MovePreview, error) {
	var out *store.Project
	var preview *MovePreview
	err := a.Store.InAccessTx(ctx, r.Who.Caller, func(ctx context.Context, t *store.AccessTx) error {
		out, preview = nil, nil
		pv, dst, err := moveEnds(ctx, t, m)
		if err != nil {
			return err
		}
		if pv.Level() < manageLevel(pv.Visibility) {
			return errProjectManage()
		}
		p, err := moveImpact(ctx, t, r.Who.Caller, pv.Project, dst)
		if err != nil {
			return err
		}
		crosses := pv.Visibility == "private" || p.Visibility == "private"
		if pv.GroupUUID != nil {
			src, err := t.GroupRow(ctx, *pv.GroupUUID)
			if err != nil {
				return err
			}
			crosses = crosses || src.Visibility == "private"
		}
		widens := slices.ContainsFunc(p.Changes, func(c store.RoleChange) bool { return c.After > c.Before })
		if (crosses || widens) && pv.Level() < store.AccessAdmin {
			return errProjectManage()
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
			if err := checkToken(m.Token, p.Token); err != nil {
				return err
			}
		}
		out, err = t.MoveProject(ctx, pv.Project, m.GroupUUID, p.Visibility)
		return err
	})
	return out, preview, err
}

// moveEnds locks and reads the project to move and the target group (nil for none), both as the
// caller sees them.
func moveEnds(ctx context.Context, t *store.AccessTx, m ProjectMove) (*store.ProjectView, *store.GroupView, error) {
	pv, err := t.LockProject(ctx, m.ProjectUUID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errMoveNotFound()
	}
	if err != nil || m.GroupUUID == nil {
		return pv, nil, err
	}
	g, err := t.Group(ctx, *m.GroupUUID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errMoveNotFound()
	}
	return pv, g, err
}

// moveImpact computes the move's preview: the visibility after it and every user whose level on
// the project changes (one with a role on the project or a group concerned, and, when the
// visibility changes, everyone in the company), with the token over the access facts.
func moveImpact(ctx context.Context, t *store.AccessTx, c store.Caller, p store.Project, dst *store.GroupView) (*MovePreview, error) {
	out := &MovePreview{ProjectUUID: p.UUID, Name: p.Name, SourceGroupUUID: p.GroupUUID, FromVisibility: p.Visibility,
		Visibility: p.Visibility, CompanyAccess: "unchanged", Changes: []store.RoleChange{}}
	var facts store.AccessFacts
	if err := t.ProjectAccess(ctx, &facts, p); err != nil {
		return nil, err
	}
	if err := t.GroupAccess(ctx, &facts, deref(p.GroupUUID)); err != nil {
		return nil, err
	}
	target := ""
	if dst != nil {
		target = dst.UUID
		out.GroupUUID = &dst.UUID
		if err := t.GroupAccess(ctx, &facts, dst.UUID); err != nil {
			return nil, err
		}
		out.Visibility = visibilityIn(dst.Visibility, p.Visibility)
	}
	if out.FromVisibility != out.Visibility {
		out.CompanyAccess = "closed"
	}
	changes, err := t.RoleChanges(ctx, p, target, out.Visibility)
	if err != nil {
		return nil, err
	}
	out.Changes = append(out.Changes, changes...)
	out.RequiresConfirmation = len(out.Changes) > 0 || out.FromVisibility != out.Visibility
	widened, narrowed := 0, 0
	for _, ch := range out.Changes {
		if ch.After > ch.Before {
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
	out.Token = confirmToken(facts, "project-move", c, p.UUID, deref(p.GroupUUID), target)
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
