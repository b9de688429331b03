package app

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Claim next (docs/rules.md §4.14). The database only proposes candidates; each task's workflow
// grants or refuses the claim. A reservation ledger keeps calls made at once from asking the
// same task's workflow together; it saves work and never decides a claim.

// ClaimNextInput is what ClaimNextTask takes.
type ClaimNextInput struct {
	// ProjectUUID limits the search to one project (editor); nil means every project where the
	// caller may edit tasks.
	ProjectUUID *string
	// ProposalUUIDs, when set, limits the search to the tasks of these proposals.
	ProposalUUIDs []string
}

// ClaimNextResult names the task ClaimNextTask claimed.
type ClaimNextResult struct {
	TaskUUID string
}

// ReservationLedger records which candidate task a claim-next call is asking its workflow for,
// so other calls skip it meanwhile (store.Store implements it on claim_reservations).
type ReservationLedger interface {
	// ReserveClaim reserves taskUUID for holder for ttl; false means another live call holds it.
	ReserveClaim(ctx context.Context, taskUUID, holder string, ttl time.Duration) (bool, error)
	// ReleaseClaim ends holder's reservation of taskUUID (and removes lapsed ones).
	ReleaseClaim(ctx context.Context, taskUUID, holder string) error
}

// The store keeps the ledger in claim_reservations.
var _ ReservationLedger = (*store.Store)(nil)

// errNoTaskAvailable: the claim-next loop found no task to claim.
var errNoTaskAvailable = errors.New("no task available")

const (
	// claimNextBatch is how many candidates one read proposes.
	claimNextBatch = 10
	// claimReservationTTL bounds how long a call's reservation of a candidate keeps other calls
	// from asking for it; the reservation is released as soon as the claim's outcome is known,
	// so this only matters when a call dies mid-claim.
	claimReservationTTL = 30 * time.Second
	// claimNextFirstPause and claimNextMaxPause bound the wait while every candidate left is
	// being asked for by another call.
	claimNextFirstPause = 20 * time.Millisecond
	claimNextMaxPause   = 250 * time.Millisecond
)

// ClaimNextTask claims the most important unclaimed, unblocked open task the caller may edit
// (docs/rules.md §4.14), or refuses when none is available.
func (a *App) ClaimNextTask(ctx context.Context, r Request, in ClaimNextInput) (ClaimNextResult, error) {
	projects, err := a.claimNextProjects(ctx, r, in)
	if err != nil {
		return ClaimNextResult{}, err
	}
	task, err := a.claimNext(ctx, r, projects, in.ProposalUUIDs)
	if errors.Is(err, errNoTaskAvailable) {
		scope := "in the projects where you may edit tasks"
		if in.ProjectUUID != nil {
			scope = "in this project"
		}
		return ClaimNextResult{}, Refuse(vocab.RefusedPrecondition, "No task is available to claim %s: every open task is held "+
			"by another agent or blocked by unfinished dependencies. See chorus_get_available_tasks, or try again later.", scope)
	}
	if err != nil {
		return ClaimNextResult{}, err
	}
	return ClaimNextResult{TaskUUID: task}, nil
}

// claimNextProjects checks the call's scope and returns the projects to look in.
func (a *App) claimNextProjects(ctx context.Context, r Request, in ClaimNextInput) ([]string, error) {
	var projects []string
	if in.ProjectUUID != nil {
		if _, err := a.Store.RequireProject(ctx, r.Who.Caller, *in.ProjectUUID, store.AccessEditor); err != nil {
			return nil, err
		}
		projects = []string{*in.ProjectUUID}
	} else {
		var err error
		if projects, err = a.Store.EditableProjectUUIDs(ctx, r.Who.Caller); err != nil {
			return nil, err
		}
	}
	for _, p := range in.ProposalUUIDs {
		// A proposal named here must exist and be visible, and lie in the project when one is given.
		prop, _, err := a.Store.ProposalAccess(ctx, r.Who.Caller, p, store.AccessViewer)
		if err != nil {
			return nil, err
		}
		if in.ProjectUUID != nil && prop.ProjectUUID != *in.ProjectUUID {
			return nil, &store.NotFoundError{Entity: "Proposal"}
		}
	}
	return projects, nil
}

// claimNext tries the candidates in order through each task's workflow, which grants the claim
// or refuses it (another agent was first, or a dependency appeared); a refused one is skipped.
// With a requestId, the task about to be tried is noted first, and a retry whose first call's
// outcome is unknown asks the last task tried before anything else: only that one can have
// been claimed (docs/rules.md §4.14), so the request never claims two tasks.
func (a *App) claimNext(ctx context.Context, r Request, projects, proposals []string) (string, error) {
	agent := r.Who.Caller.AgentUUID
	ttls, err := a.Store.ProjectClaimTTLs(ctx, projects)
	if err != nil {
		return "", err
	}
	send := func(ctx context.Context, t store.Task) error {
		_, err := workflows.Send(ctx, a.Flows, workflows.ClaimNextTask, t.UUID, r.Flow(), agent,
			workflows.TaskCommand{Actor: r.Who.Actor(), ClaimTTL: ttls[t.ProjectUUID], Project: t.ProjectUUID})
		return err
	}
	var tried []string
	if r.RequestID != "" && r.Retry {
		last, err := a.Store.LastClaimAttempt(ctx, agent, r.RequestID, r.Generation)
		if err != nil {
			return "", err
		}
		if last != "" {
			t, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, last, store.AccessEditor)
			if err != nil {
				return "", err
			}
			err = send(ctx, *t)
			if claimed(err) {
				return last, nil
			}
			if !skippable(err) {
				return "", err
			}
			tried = append(tried, last)
		}
	}
	run := claimNextRun{
		ledger: a.Store,
		candidates: func(ctx context.Context, skip []string) ([]store.Task, error) {
			return a.Store.ClaimCandidates(ctx, projects, proposals, skip, claimNextBatch)
		},
		claim: func(ctx context.Context, t store.Task) error {
			if r.RequestID != "" {
				if err := a.Store.NoteClaimAttempt(ctx, agent, r.RequestID, r.Generation, t.UUID); err != nil {
					return err
				}
			}
			return send(ctx, t)
		},
		moved: func(ctx context.Context, t store.Task) bool { return a.movedSinceRead(ctx, t) },
	}
	return run.loop(ctx, store.NewUUID(), tried)
}

// claimNextRun is the claim-next loop with what it reads and sends as functions, so a test can
// drive it without a database or Temporal.
type claimNextRun struct {
	ledger ReservationLedger
	// candidates reads up to claimNextBatch candidates in claim order, leaving out skip.
	candidates func(ctx context.Context, skip []string) ([]store.Task, error)
	// claim notes the attempt (with a requestId) and asks task t's workflow for the claim.
	claim func(ctx context.Context, t store.Task) error
	// moved reports whether t's row now names another project than when it was read.
	moved func(ctx context.Context, t store.Task) bool
}

// loop asks the candidates in order, each reserved for holder while its workflow is asked,
// leaving out tried. Candidates other calls are asking for are left out until nothing else is
// left; then the loop waits (20 ms, doubling to 250 ms) and reads again, rather than answer
// "none available" while one of them may yet be refused.
func (c claimNextRun) loop(ctx context.Context, holder string, tried []string) (string, error) {
	pause := claimNextFirstPause
	var busy []string // candidates other calls were asking for, left out until the next pause
	for {
		batch, err := c.candidates(ctx, append(slices.Clip(tried), busy...))
		if err != nil {
			return "", err
		}
		if len(batch) == 0 {
			if len(busy) == 0 {
				return "", errNoTaskAvailable
			}
			select {
			case <-ctx.Done():
				// Nothing of this call is in flight (every claim it sent was answered), so say so
				// rather than "Still in progress".
				return "", Refuse(vocab.RefusedConflict, "No task could be claimed before this call's deadline: every task "+
					"left was being claimed by another agent at the same moment. Nothing was claimed for you; call again.")
			case <-time.After(pause):
			}
			pause, busy = min(pause*2, claimNextMaxPause), nil
			continue
		}
		for _, t := range batch {
			got, err := c.ledger.ReserveClaim(ctx, t.UUID, holder, claimReservationTTL)
			if err != nil {
				return "", err
			}
			if !got {
				busy = append(busy, t.UUID)
				continue
			}
			ok, err := c.try(ctx, holder, t)
			if err != nil {
				return "", err
			}
			if ok {
				return t.UUID, nil
			}
			if c.moved(ctx, t) {
				// Its idea moved after the read, so its workflow refused a claim naming the old
				// project: the next read proposes it again from its new project, if the caller
				// may claim there, rather than answer "none available" while it is open.
				continue
			}
			tried = append(tried, t.UUID)
		}
	}
}

// try asks task t's workflow for the claim while holder reserves it, and reports whether it was
// granted; a refusal (false, nil) means the next candidate may be tried.
func (c claimNextRun) try(ctx context.Context, holder string, t store.Task) (bool, error) {
	defer func() {
		// Released even when ctx has ended, so other calls need not wait for the lapse.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.ledger.ReleaseClaim(rctx, t.UUID, holder)
	}()
	err := c.claim(ctx, t)
	if claimed(err) {
		return true, nil
	}
	if !skippable(err) {
		return false, err
	}
	return false, nil
}

// movedSinceRead reports whether candidate t's row now names another project than when it was
// read (chorus_move_idea moved it meanwhile). Each answer "yes" needs another move of the task,
// so asking a moved task again cannot go on forever.
func (a *App) movedSinceRead(ctx context.Context, t store.Task) bool {
	row, err := a.Store.TaskRow(ctx, t.UUID)
	return err == nil && row.ProjectUUID != t.ProjectUUID
}

// claimed: the claim was granted, now or (answered from the change journal) by an earlier call
// with this requestId.
func claimed(err error) bool {
	return err == nil || workflows.IsKind(err, workflows.KindAlreadyApplied)
}

// skippable: the task's workflow refused the claim (taken, blocked, gone, or in need of repair);
// the next candidate may be claimed instead. Anything else (an outage, a deadline) leaves the
// claim's outcome unknown and ends the call.
func skippable(err error) bool {
	var wfe *workflows.Error
	return errors.As(err, &wfe) && wfe.Kind != workflows.KindAlreadyApplied
}
