package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Sessions and claims (docs/rules.md §2.5, §5.10): a check-in claims an unheld task for the
// session's agent, and a heartbeat renews the claims of the session's open check-ins.

// CheckedIn is what CheckinTask recorded.
type CheckedIn struct {
	SessionUUID string
	TaskUUID    string
	At          time.Time
}

// CheckinTask records that one of the caller's active sessions works on a task the caller may
// edit. An unheld task is claimed for the caller first when the key may claim tasks
// (perm.TaskWrite); a refusal of that claim (someone claimed it meanwhile, it is no longer open)
// leaves the check-in to go ahead, and an error whose outcome is unknown ends the call, whose
// retry claims again.
func (a *App) CheckinTask(ctx context.Context, r Request, sessionUUID, taskUUID string) (CheckedIn, error) {
	task, pv, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessEditor)
	if err != nil {
		return CheckedIn{}, err
	}
	s, err := a.ActiveSessionFor(ctx, r, sessionUUID)
	if err != nil {
		return CheckedIn{}, err
	}
	if task.AssigneeUUID == nil && r.Who.Perms.Has(perm.TaskWrite) {
		_, err := workflows.Send(ctx, a.Flows, workflows.ClaimTask, task.UUID, r.Flow(), r.Who.Caller.AgentUUID,
			workflows.TaskCommand{Actor: r.Who.Actor(), ClaimTTL: ClaimTTL(pv), Project: pv.UUID})
		if err != nil && !Refused(err) {
			return CheckedIn{}, fmt.Errorf("claim the task for the session: %w", err)
		}
	}
	at, err := a.RecordCheckin(ctx, s.UUID, task.UUID)
	if err != nil {
		return CheckedIn{}, err
	}
	return CheckedIn{SessionUUID: s.UUID, TaskUUID: task.UUID, At: at}, nil
}

// renewClaims renews the caller's lapsing claims on the tasks of a session's open check-ins
// (docs/rules.md §5.10). A task the caller no longer holds is left alone (the workflow refuses the
// renewal: the claim lapsed or moved on), and so is a claim renewed within the last tenth of its
// time to live (freshClaim): the heartbeat is the commonest call, and then it reads the task and
// writes nothing. An error with an unknown outcome ends the heartbeat, and its retry renews again.
func (a *App) renewClaims(ctx context.Context, r Request, open []store.SessionCheckin) error {
	for _, ci := range open {
		t, err := a.Store.TaskRow(ctx, ci.TaskUUID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if t.AssigneeUUID == nil || *t.AssigneeUUID != r.Who.Caller.AgentUUID || t.ClaimExpiresAt == nil ||
			freshClaim(t, time.Now()) {
			continue
		}
		_, err = workflows.Send(ctx, a.Flows, workflows.RenewClaim, t.UUID, r.Flow(), r.Who.Caller.AgentUUID,
			workflows.TaskCommand{Actor: r.Who.Actor()})
		if err != nil && !Refused(err) {
			return fmt.Errorf("renew the claim on task %s: %w", t.UUID, err)
		}
	}
	return nil
}

// freshClaim reports whether a task's stored lease was renewed within the last tenth of its time
// to live as of now: more than nine tenths of it remain (docs/rules.md §5.10).
func freshClaim(t store.Task, now time.Time) bool {
	if t.ClaimTTLSeconds == nil || t.ClaimExpiresAt == nil {
		return false
	}
	ttl := time.Duration(*t.ClaimTTLSeconds) * time.Second
	return t.ClaimExpiresAt.Sub(now) > ttl-ttl/10
}
