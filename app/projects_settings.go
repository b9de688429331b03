package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A project's settings (docs/rules.md §5.10, §6.3, "People in the console"): its visibility
// and its claim time to live. The console's settings page and chorus project set-claim-ttl
// call these.

// MaxClaimTTLSeconds is the longest claim time to live (docs/rules.md §5.10): 30 days.
const MaxClaimTTLSeconds = 30 * 24 * 3600

// VisibilityChange makes a project public or private, or previews it.
type VisibilityChange struct {
	ProjectUUID string
	Visibility  string
	// Preview: say what the change would do and change nothing.
	Preview bool
	// Token is the confirmationToken of the preview of this change.
	Token string
}

// VisibilityImpact is what a visibility change does (docs/rules.md §6.5): every person whose
// level on the project changes, and the token that confirms it.
type VisibilityImpact struct {
	ProjectUUID    string
	Name           string
	FromVisibility string
	Visibility     string
	Changes        []store.RoleChange
	Summary        string
	// RequiresConfirmation: the change alters access, so it applies only with Token.
	RequiresConfirmation bool
	Token                string
}

// SetProjectVisibility makes a project public or private, or previews it, and returns the
// project after it (nil with a preview) and its impact. Changing it crosses the private boundary
// (one side is private), so it needs admin on the project, as a move across that boundary does
// (docs/rules.md §6.3 manage_project, §6.6); an operator may always. A project in a private
// group stays private. As every change of who may see what (§6.5), a real change applies only
// with the confirmationToken of its preview. The project's group, if any, gets its
// accessVersion raised, as a move does, so tokens taken before go stale.
func (a *App) SetProjectVisibility(ctx context.Context, m Manager, v VisibilityChange) (*store.Project, *VisibilityImpact, error) {
	if v.Visibility != "public" && v.Visibility != "private" {
		return nil, nil, Refuse(vocab.RefusedInvalid, "visibility: must be public or private, got %q", v.Visibility)
	}
	var (
		out    *store.Project
		impact *VisibilityImpact
	)
	err := a.Store.InAccessTx(ctx, m.Caller, func(ctx context.Context, t *store.AccessTx) error {
		out, impact = nil, nil
		if err := t.LockProjectRow(ctx, v.ProjectUUID); err != nil {
			return err
		}
		p, err := managedProject(ctx, t, m, v.ProjectUUID)
		if err != nil {
			return err
		}
		if err := keepPrivateInGroup(ctx, t, p, v.Visibility); err != nil {
			return err
		}
		if impact, err = visibilityImpact(ctx, t, m.Caller, *p, v.Visibility); err != nil || v.Preview {
			return err
		}
		if p.Visibility == v.Visibility {
			out = p
			return nil
		}
		if err := checkToken(v.Token, impact.Token); err != nil {
			return err
		}
		out, err = t.MoveProject(ctx, *p, p.GroupUUID, v.Visibility)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, impact, nil
}

// keepPrivateInGroup refuses to make a project of a private group public (docs/rules.md §6.5).
func keepPrivateInGroup(ctx context.Context, t *store.AccessTx, p *store.Project, visibility string) error {
	if p.GroupUUID == nil || visibility != "public" {
		return nil
	}
	g, err := t.GroupRow(ctx, *p.GroupUUID)
	if err != nil {
		return err
	}
	if visibilityIn(g.Visibility, visibility) != visibility {
		return Refuse(vocab.RefusedPrecondition, "visibility: the project is in a private group, which keeps its "+
			"projects private; move it out of the group first (chorus_admin_move_project_to_group)")
	}
	return nil
}

// visibilityImpact is the preview of making p's visibility to: who gains or loses access, and
// the token over the access facts (the project's visibility, group and members, the group's
// visibility, accessVersion and members).
func visibilityImpact(ctx context.Context, t *store.AccessTx, c store.Caller, p store.Project, to string) (*VisibilityImpact, error) {
	out := &VisibilityImpact{ProjectUUID: p.UUID, Name: p.Name, FromVisibility: p.Visibility, Visibility: to,
		Changes: []store.RoleChange{}}
	var facts store.AccessFacts
	if err := t.ProjectAccess(ctx, &facts, p); err != nil {
		return nil, err
	}
	if err := t.GroupAccess(ctx, &facts, deref(p.GroupUUID)); err != nil {
		return nil, err
	}
	changes, err := t.RoleChanges(ctx, p, deref(p.GroupUUID), to)
	if err != nil {
		return nil, err
	}
	out.Changes = append(out.Changes, changes...)
	out.RequiresConfirmation = p.Visibility != to
	gain, lose := 0, 0
	for _, ch := range out.Changes {
		if ch.After > ch.Before {
			gain++
		} else {
			lose++
		}
	}
	out.Summary = fmt.Sprintf("Making %q %s: %d person(s) gain access, %d lose some", p.Name, to, gain, lose)
	if !out.RequiresConfirmation {
		out.Summary = fmt.Sprintf("%q is %s already; nothing changes", p.Name, to)
	}
	out.Token = confirmToken(facts, "project-visibility", c, p.UUID, to)
	return out, nil
}

// SetProjectClaimTTL sets how long a task claim in the project lasts without a word from its
// holder (docs/rules.md §5.10): seconds 1 to MaxClaimTTLSeconds, 0 for no lease. It applies to
// later claims. It needs manage_project (docs/rules.md §6.3: editor on a public project, admin
// on a private one); an operator may always. Out of range is a refusal naming claimTtlSeconds.
func (a *App) SetProjectClaimTTL(ctx context.Context, m Manager, projectUUID string, seconds int64) (*store.Project, error) {
	if seconds < 0 || seconds > MaxClaimTTLSeconds {
		return nil, Refuse(vocab.RefusedInvalid, "claimTtlSeconds: must be between 0 (claims never lapse) and %d (30 days), got %d",
			MaxClaimTTLSeconds, seconds)
	}
	var p *store.Project
	if m.Operator {
		var err error
		if p, err = a.Store.CompanyProject(ctx, m.Caller.CompanyUUID, projectUUID); err != nil {
			return nil, err
		}
	} else {
		pv, err := a.Store.RequireProject(ctx, m.Caller, projectUUID, store.AccessNone)
		if err != nil {
			return nil, err
		}
		if pv.Level() < manageLevel(pv.Visibility) {
			return nil, errProjectManage()
		}
		p = &pv.Project
	}
	var ttl *int64
	if seconds > 0 {
		ttl = &seconds
	}
	if err := a.Store.SetProjectClaimTTL(ctx, m.Caller.CompanyUUID, p.UUID, ttl); err != nil {
		return nil, err
	}
	p.ClaimTTLSeconds = ttl
	return p, nil
}

// CompanyUserByEmail is the user of m's company with this e-mail (case-insensitive), for a
// form that names a person by e-mail; none is a refusal naming the field "email" (people join
// the company with chorus user create).
func (a *App) CompanyUserByEmail(ctx context.Context, m Manager, email string) (*store.User, error) {
	email = strings.TrimSpace(email)
	u, err := a.Store.UserByEmail(ctx, m.Caller.CompanyUUID, email)
	if errors.Is(err, store.ErrNotFound) || (err == nil && email == "") {
		return nil, Refuse(vocab.RefusedInvalid, "email: no person of this company has the e-mail %q; an operator adds "+
			"people with chorus user create", email)
	}
	return u, err
}
