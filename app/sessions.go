package app

import (
	"context"
	"errors"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Sessions (docs/rules.md §2.5, §4.10) are plain records, not workflows: their state machine
// (active <-> closed) has no timer, and "stale" is derived when one is read. A session is its
// agent's: any other is "Session not found".

// sessionRefusal words the store's session refusals for the caller.
func sessionRefusal(err error) error {
	if errors.Is(err, store.ErrSessionNotActive) {
		return Refuse(vocab.RefusedPrecondition, "%s", err.Error())
	}
	return err
}

// CreateSession starts a named session of the caller. A retried call (same requestId) returns
// the session the first one made.
func (a *App) CreateSession(ctx context.Context, r Request, name string, description *string) (*store.AgentSession, error) {
	if err := workflows.CheckTitle("", "name", &name); err != nil {
		return nil, err
	}
	s, err := a.Store.CreateSession(ctx, r.Who.Caller, store.NewSession{UUID: r.NewID("session"), Name: name,
		Description: description})
	return s, sessionRefusal(err)
}

// ListSessions returns one page of the caller's sessions (status "" for any), newest first,
// and their total.
func (a *App) ListSessions(ctx context.Context, r Request, status string, limit, offset int) ([]store.AgentSession, int, error) {
	return a.Store.ListSessions(ctx, r.Who.Caller, status, limit, offset)
}

// ReadSession reads the caller's session with its open check-ins.
func (a *App) ReadSession(ctx context.Context, r Request, sessionUUID string) (*store.AgentSession, []store.SessionCheckin, error) {
	s, err := a.Store.Session(ctx, r.Who.Caller, sessionUUID)
	if err != nil {
		return nil, nil, sessionRefusal(err)
	}
	open, err := a.Store.OpenCheckins(ctx, s.UUID)
	if err != nil {
		return nil, nil, err
	}
	return s, open[s.UUID], nil
}

// SessionFor resolves a session a call names (docs/rules.md §2.5, §6.3): it must be the
// caller's, and the caller needs level need on the task of each of its open check-ins, which it
// returns. A check-in on a task the caller can no longer work on (it moved to a project the
// caller cannot see, or the caller's role was lowered) is ended by the session's commands (need
// editor), so the session stays usable, and left out by a read (docs/rules.md §2.5, §8.14).
func (a *App) SessionFor(ctx context.Context, r Request, sessionUUID string, need store.Access) (*store.AgentSession, []store.SessionCheckin, error) {
	s, open, err := a.ReadSession(ctx, r, sessionUUID)
	if err != nil {
		return nil, nil, err
	}
	var kept []store.SessionCheckin
	for _, ci := range open {
		if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, ci.TaskUUID, need); err != nil {
			if !lostAccess(err) {
				return nil, nil, err
			}
			if need == store.AccessEditor {
				if err := a.Store.CheckoutTask(ctx, s.UUID, ci.TaskUUID); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		kept = append(kept, ci)
	}
	return s, kept, nil
}

// lostAccess says whether err is the project-access gate's refusal: the task is hidden from the
// caller, or the caller's role is too low.
func lostAccess(err error) bool {
	var nf *store.NotFoundError
	return errors.As(err, &nf) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrForbidden)
}

// CloseSession closes one of the caller's sessions and checks it out of its tasks.
func (a *App) CloseSession(ctx context.Context, r Request, sessionUUID string) (*store.AgentSession, []store.SessionCheckin, error) {
	s, _, err := a.SessionFor(ctx, r, sessionUUID, store.AccessEditor)
	if err != nil {
		return nil, nil, err
	}
	if err := a.Store.CloseSession(ctx, s.UUID); err != nil {
		return nil, nil, err
	}
	return a.ReadSession(ctx, r, s.UUID)
}

// ReopenSession makes one of the caller's closed sessions active again.
func (a *App) ReopenSession(ctx context.Context, r Request, sessionUUID string) (*store.AgentSession, []store.SessionCheckin, error) {
	s, _, err := a.SessionFor(ctx, r, sessionUUID, store.AccessEditor)
	if err != nil {
		return nil, nil, err
	}
	if err := a.Store.ReopenSession(ctx, s.UUID); errors.Is(err, store.ErrSessionNotClosed) {
		return nil, nil, Refuse(vocab.RefusedPrecondition, "Session is %s, only closed sessions can be reopened", s.Status)
	} else if err != nil {
		return nil, nil, err
	}
	return a.ReadSession(ctx, r, s.UUID)
}

// SessionHeartbeat keeps one of the caller's active sessions alive and returns when, then
// renews the caller's lapsing claims on the tasks of its open check-ins (renewClaims).
func (a *App) SessionHeartbeat(ctx context.Context, r Request, sessionUUID string) (time.Time, error) {
	s, open, err := a.SessionFor(ctx, r, sessionUUID, store.AccessEditor)
	if err != nil {
		return time.Time{}, err
	}
	if s.Status != "active" {
		return time.Time{}, Refuse(vocab.RefusedPrecondition, "Session %s is closed: a heartbeat keeps only active "+
			"sessions alive. Reopen it with chorus_reopen_session first.", s.UUID)
	}
	at, err := a.Store.TouchSession(ctx, s.UUID)
	if err != nil {
		return time.Time{}, err
	}
	return at, a.renewClaims(ctx, r, open)
}

// ActiveSessionFor resolves the active session of a check-in: one of the caller's sessions
// that is active.
func (a *App) ActiveSessionFor(ctx context.Context, r Request, sessionUUID string) (*store.AgentSession, error) {
	s, err := a.Store.Session(ctx, r.Who.Caller, sessionUUID)
	if err != nil {
		return nil, sessionRefusal(err)
	}
	if s.Status != "active" {
		return nil, Refuse(vocab.RefusedPrecondition, "%s", store.ErrSessionNotActive.Error())
	}
	return s, nil
}

// RecordCheckin records that the caller's session works on a task.
func (a *App) RecordCheckin(ctx context.Context, sessionUUID, taskUUID string) (time.Time, error) {
	at, err := a.Store.CheckinTask(ctx, sessionUUID, taskUUID)
	return at, sessionRefusal(err)
}

// CheckoutTask records that the caller's session stopped working on a task. Leaving a task the
// caller can no longer see or edit is allowed for a session that was checked in to it: it only
// ends the caller's own check-in, if still open (docs/rules.md §2.5); otherwise that task's
// access refusal answers.
func (a *App) CheckoutTask(ctx context.Context, r Request, sessionUUID, taskUUID string) error {
	_, _, accessErr := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessEditor)
	if accessErr != nil && !lostAccess(accessErr) {
		return accessErr
	}
	s, err := a.Store.Session(ctx, r.Who.Caller, sessionUUID)
	if err != nil {
		if accessErr != nil {
			return accessErr
		}
		return sessionRefusal(err)
	}
	if accessErr != nil {
		was, err := a.Store.HasCheckin(ctx, s.UUID, taskUUID)
		if err != nil {
			return err
		}
		if !was {
			return accessErr
		}
	}
	return a.Store.CheckoutTask(ctx, s.UUID, taskUUID)
}
