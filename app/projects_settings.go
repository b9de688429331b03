package app

import (
	"context"
	"errors"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A project's settings (docs/rules.md §5.10, §6.3, "People in the console"): its visibility
// and its claim time to live. The console's settings page and chorus project set-claim-ttl
// call these.

// MaxClaimTTLSeconds is the longest claim time to live (docs/rules.md §5.10): 30 days.
const MaxClaimTTLSeconds = 30 * 24 * 3600

// SetProjectVisibility makes a project public or private and reports whether it changed.
// Changing it crosses the private boundary (one side is private), so it needs admin on the
// project, as moving a project across that boundary does (docs/rules.md §6.3 manage_project,
// "People in the console"); an operator may always. A project in a private group stays private.
// The project's group, if any, gets its accessVersion raised, as a move does, so confirmation
// tokens taken before go stale.
func (a *App) SetProjectVisibility(ctx context.Context, m Manager, projectUUID, visibility string) (*store.Project, bool, error) {
	if visibility != "public" && visibility != "private" {
		return nil, false, Refuse(vocab.RefusedInvalid, "visibility: must be public or private, got %q", visibility)
	}
	var (
		out     *store.Project
		changed bool
	)
	err := a.Store.InAccessTx(ctx, m.Caller, func(ctx context.Context, t *store.AccessTx) error {
		changed = false
		if err := t.LockProjectRow(ctx, projectUUID); err != nil {
			return err
		}
		p, err := managedProject(ctx, t, m, projectUUID)
		if err != nil {
			return err
		}
		out = p
		if p.Visibility == visibility {
			return nil
		}
		if p.GroupUUID != nil && visibility == "public" {
			g, err := t.GroupRow(ctx, *p.GroupUUID)
			if err != nil {
				return err
			}
			if visibilityIn(g.Visibility, visibility) != visibility {
				return Refuse(vocab.RefusedPrecondition, "visibility: the project is in a private group, which keeps its "+
					"projects private; move it out of the group first (chorus_admin_move_project_to_group)")
			}
		}
		changed = true
		out, err = t.MoveProject(ctx, *p, p.GroupUUID, visibility)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, changed, nil
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
