package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Session tools (docs/rules.md §2.5, §4.10). A session is a plain record, not a workflow: its
// state machine (active <-> closed) has no timer, and "stale" is derived when it is read.

// SessionIn names a session.
type SessionIn struct {
	SessionUUID UUID `json:"sessionUuid"`
}

// CheckinView is one open check-in of a session.
type CheckinView struct {
	TaskUUID   string     `json:"taskUuid"`
	CheckinAt  time.Time  `json:"checkinAt"`
	CheckoutAt *time.Time `json:"checkoutAt"`
}

// SessionView is the Session JSON.
type SessionView struct {
	UUID           string        `json:"uuid"`
	AgentUUID      string        `json:"agentUuid"`
	Name           string        `json:"name"`
	Description    *string       `json:"description"`
	Status         string        `json:"status" jsonschema:"active or closed"`
	Stale          bool          `json:"stale" jsonschema:"no activity for an hour or more"`
	LastActiveAt   time.Time     `json:"lastActiveAt"`
	CreatedAt      time.Time     `json:"createdAt"`
	UpdatedAt      time.Time     `json:"updatedAt"`
	ActiveCheckins []CheckinView `json:"activeCheckins" jsonschema:"tasks this session works on now, oldest check-in first"`
}

func sessionView(s store.AgentSession, open []store.SessionCheckin, now time.Time) SessionView {
	v := SessionView{UUID: s.UUID, AgentUUID: s.AgentUUID, Name: s.Name, Description: s.Description, Status: s.Status,
		Stale: s.Stale(now), LastActiveAt: s.LastActiveAt, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		ActiveCheckins: []CheckinView{}}
	for _, c := range open {
		v.ActiveCheckins = append(v.ActiveCheckins, CheckinView{TaskUUID: c.TaskUUID, CheckinAt: c.CheckinAt})
	}
	return v
}

// readSession reads the caller's session with its open check-ins, as Session JSON.
func readSession(ctx context.Context, d *Deps, c store.Caller, sessionUUID string) (SessionView, error) {
	s, err := d.Store.Session(ctx, c, sessionUUID)
	if err != nil {
		return SessionView{}, sessionError(err)
	}
	open, err := d.Store.OpenCheckins(ctx, s.UUID)
	if err != nil {
		return SessionView{}, err
	}
	return sessionView(*s, open[s.UUID], store.Now()), nil
}

// sessionError words the store's session refusals for agents.
func sessionError(err error) error {
	if errors.Is(err, store.ErrSessionNotActive) {
		return refuse("%s", err.Error())
	}
	return err
}

// sessionGate resolves a sessionUuid argument (docs/rules.md §2.5, §6.3): the session must be the
// caller's ("Session not found" for any other), and the caller needs
// level need on the task of every open check-in of the session.
func sessionGate(ctx context.Context, d *Deps, c store.Caller, sessionUUID string, need store.Access) (*store.AgentSession, []store.SessionCheckin, error) {
	s, err := d.Store.Session(ctx, c, sessionUUID)
	if err != nil {
		return nil, nil, sessionError(err)
	}
	open, err := d.Store.OpenCheckins(ctx, s.UUID)
	if err != nil {
		return nil, nil, err
	}
	var kept []store.SessionCheckin
	for _, ci := range open[s.UUID] {
		if _, _, err := d.Store.TaskAccess(ctx, c, ci.TaskUUID, need); err != nil {
			if !lostAccess(err) {
				return nil, nil, err
			}
			// The caller can no longer work on the task (it moved to a project the caller cannot
			// see, or the caller's role was lowered): the session's commands end the check-in, so
			// the session stays usable; a read only leaves it out (docs/rules.md §2.5, §8.14).
			if need == store.AccessEditor {
				if err := d.Store.CheckoutTask(ctx, s.UUID, ci.TaskUUID); err != nil {
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

// ---- create / list / get ----

// CreateSessionIn is chorus_create_session's input.
type CreateSessionIn struct {
	Name        string  `json:"name" jsonschema:"e.g. the branch" chorus:"minLength=1;maxLength=200"`
	Description *string `json:"description,omitempty"`
}

var createSession = tool[CreateSessionIn, SessionView]{
	Name: "chorus_create_session", Title: "Start a session", Toolset: tsSessions, Perm: perm.Public, Effect: writes,
	Desc: "Start a named work session (one per worktree or sub-agent).",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateSessionIn) (SessionView, error) {
		name := strings.TrimSpace(in.Name)
		if name == "" {
			return SessionView{}, invalid("name must not be blank")
		}
		s, err := d.Store.CreateSession(ctx, call.Who.Caller, store.NewSession{UUID: call.newID("session"), Name: name,
			Description: in.Description})
		if err != nil {
			return SessionView{}, sessionError(err)
		}
		return sessionView(*s, nil, store.Now()), nil
	},
}

// ListSessionsIn is chorus_list_sessions' input.
type ListSessionsIn struct {
	Status string `json:"status,omitempty" chorus:"enum=active|closed"`
	PageIn
}

// SessionRow is one row of chorus_list_sessions.
type SessionRow struct {
	UUID         string    `json:"uuid"`
	Name         string    `json:"name"`
	Status       string    `json:"status"`
	Stale        bool      `json:"stale"`
	AgentUUID    string    `json:"agentUuid"`
	CreatedAt    time.Time `json:"createdAt"`
	LastActiveAt time.Time `json:"lastActiveAt"`
}

// SessionList is chorus_list_sessions' result.
type SessionList struct {
	Sessions []SessionRow `json:"sessions"`
	Meta
}

var listSessions = tool[ListSessionsIn, SessionList]{
	Name: "chorus_list_sessions", Title: "List your sessions", Toolset: tsSessions, Perm: perm.Public, Effect: reads,
	Desc: "List your sessions, newest first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ListSessionsIn) (SessionList, error) {
		page, size, offset := in.window(20)
		ss, total, err := d.Store.ListSessions(ctx, call.Who.Caller, in.Status, size, offset)
		if err != nil {
			return SessionList{}, err
		}
		now := store.Now()
		rows := make([]SessionRow, len(ss))
		for i, s := range ss {
			rows[i] = SessionRow{UUID: s.UUID, Name: clip(s.Name), Status: s.Status, Stale: s.Stale(now), AgentUUID: s.AgentUUID,
				CreatedAt: s.CreatedAt, LastActiveAt: s.LastActiveAt}
		}
		wrap := func(r []SessionRow) any {
			return SessionList{Sessions: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(rows, wrap)).(SessionList), nil
	},
}

var getSession = tool[SessionIn, SessionView]{
	Name: "chorus_get_session", Title: "Get a session", Toolset: tsSessions, Perm: perm.Public, Effect: reads,
	Desc: "Get one of your sessions with the tasks it is checked in to.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionIn) (SessionView, error) {
		s, open, err := sessionGate(ctx, d, call.Who.Caller, string(in.SessionUUID), store.AccessViewer)
		if err != nil {
			return SessionView{}, err
		}
		return sessionView(*s, open, store.Now()), nil
	},
}

// ---- close / reopen / heartbeat ----

var closeSession = tool[SessionIn, SessionView]{
	Name: "chorus_close_session", Title: "Close a session", Toolset: tsSessions, Perm: perm.Public, Effect: destroys, Idempotent: true,
	Desc: "Close one of your sessions and check it out of its tasks.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionIn) (SessionView, error) {
		s, _, err := sessionGate(ctx, d, call.Who.Caller, string(in.SessionUUID), store.AccessEditor)
		if err != nil {
			return SessionView{}, err
		}
		if err := d.Store.CloseSession(ctx, s.UUID); err != nil {
			return SessionView{}, err
		}
		return readSession(ctx, d, call.Who.Caller, s.UUID)
	},
}

var reopenSession = tool[SessionIn, SessionView]{
	Name: "chorus_reopen_session", Title: "Reopen a session", Toolset: tsSessions, Perm: perm.Public, Effect: writes,
	Desc: "Make one of your closed sessions active again.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionIn) (SessionView, error) {
		s, _, err := sessionGate(ctx, d, call.Who.Caller, string(in.SessionUUID), store.AccessEditor)
		if err != nil {
			return SessionView{}, err
		}
		if err := d.Store.ReopenSession(ctx, s.UUID); errors.Is(err, store.ErrSessionNotClosed) {
			return SessionView{}, refuse("Session is %s, only closed sessions can be reopened", s.Status)
		} else if err != nil {
			return SessionView{}, err
		}
		return readSession(ctx, d, call.Who.Caller, s.UUID)
	},
}

var sessionHeartbeat = tool[SessionIn, textResult]{
	Name: "chorus_session_heartbeat", Title: "Session heartbeat", Toolset: tsSessions, Perm: perm.Public, Effect: writes,
	Desc: "Keep your session active and renew your claims on its tasks.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionIn) (textResult, error) {
		s, open, err := sessionGate(ctx, d, call.Who.Caller, string(in.SessionUUID), store.AccessEditor)
		if err != nil {
			return "", err
		}
		if s.Status != "active" {
			return "", refuse("Session %s is closed: a heartbeat keeps only active sessions alive. Reopen it with "+
				"chorus_reopen_session first.", s.UUID)
		}
		at, err := d.Store.TouchSession(ctx, s.UUID)
		if err != nil {
			return "", err
		}
		if err := renewClaims(ctx, d, call, open); err != nil {
			return "", err
		}
		return textResult("Heartbeat successful: " + at.Format(time.RFC3339Nano)), nil
	},
}

// renewClaims renews the caller's lapsing claims on the tasks of a session's open check-ins
// (docs/rules.md §5.10). A task the caller no longer holds is left alone (the workflow refuses the
// renewal: the claim lapsed or moved on), and so is a claim renewed within the last tenth of its
// time to live (freshClaim): the heartbeat is the commonest call, and then it reads the task and
// writes nothing. An error with an unknown outcome ends the heartbeat, and its retry renews again.
func renewClaims(ctx context.Context, d *Deps, call *Call, open []store.SessionCheckin) error {
	for _, ci := range open {
		t, err := d.Store.TaskRow(ctx, ci.TaskUUID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if t.AssigneeUUID == nil || *t.AssigneeUUID != call.Who.Caller.AgentUUID || t.ClaimExpiresAt == nil ||
			freshClaim(t, time.Now()) {
			continue
		}
		_, err = workflows.Send(ctx, d.Flows, workflows.RenewClaim, t.UUID, flowCall(call), call.Who.Caller.AgentUUID,
			workflows.TaskCommand{Actor: actor(call.Who)})
		if err != nil && !refused(err) {
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

// ---- check in / check out ----

// SessionTaskIn names a session and a task.
type SessionTaskIn struct {
	SessionUUID UUID `json:"sessionUuid"`
	TaskUUID    UUID `json:"taskUuid"`
}

// CheckedIn is chorus_session_checkin_task's result.
type CheckedIn struct {
	SessionUUID string    `json:"sessionUuid"`
	TaskUUID    string    `json:"taskUuid"`
	CheckedInAt time.Time `json:"checkedInAt"`
}

var sessionCheckinTask = tool[SessionTaskIn, CheckedIn]{
	Name: "chorus_session_checkin_task", Title: "Session check-in", Toolset: tsSessions, Perm: perm.Public, Effect: writes, Idempotent: true,
	Desc: "Record that your session works on a task, claiming it if nobody holds it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionTaskIn) (CheckedIn, error) {
		task, pv, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor)
		if err != nil {
			return CheckedIn{}, err
		}
		s, err := d.Store.Session(ctx, call.Who.Caller, string(in.SessionUUID))
		if err != nil {
			return CheckedIn{}, sessionError(err)
		}
		if s.Status != "active" {
			return CheckedIn{}, refuse("%s", store.ErrSessionNotActive.Error())
		}
		if task.AssigneeUUID == nil && call.Who.Perms.Has(perm.TaskWrite) {
			// docs/rules.md §2.5: an unheld task is claimed for the session's agent; a refusal (someone
			// claimed it meanwhile, it is no longer open) leaves the check-in to go ahead.
			_, err := workflows.Send(ctx, d.Flows, workflows.ClaimTask, task.UUID, flowCall(call), call.Who.Caller.AgentUUID,
				workflows.TaskCommand{Actor: actor(call.Who), ClaimTTL: claimTTL(pv), Project: pv.UUID})
			if err != nil && !refused(err) {
				return CheckedIn{}, fmt.Errorf("claim the task for the session: %w", err)
			}
		}
		at, err := d.Store.CheckinTask(ctx, s.UUID, task.UUID)
		if err != nil {
			return CheckedIn{}, sessionError(err)
		}
		return CheckedIn{SessionUUID: s.UUID, TaskUUID: task.UUID, CheckedInAt: at}, nil
	},
}

var sessionCheckoutTask = tool[SessionTaskIn, textResult]{
	Name: "chorus_session_checkout_task", Title: "Session check-out", Toolset: tsSessions, Perm: perm.Public, Effect: writes, Idempotent: true,
	Desc: "Record that your session stopped working on a task.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionTaskIn) (textResult, error) {
		taskUUID := string(in.TaskUUID)
		_, _, accessErr := d.Store.TaskAccess(ctx, call.Who.Caller, taskUUID, store.AccessEditor)
		if accessErr != nil && !lostAccess(accessErr) {
			return "", accessErr
		}
		s, err := d.Store.Session(ctx, call.Who.Caller, string(in.SessionUUID))
		if err != nil {
			if accessErr != nil {
				return "", accessErr
			}
			return "", sessionError(err)
		}
		if accessErr != nil {
			// Leaving a task one can no longer see or edit is allowed, for a session that was checked
			// in to it: it only ends the caller's own check-in, if still open (docs/rules.md §2.5).
			was, err := d.Store.HasCheckin(ctx, s.UUID, taskUUID)
			if err != nil {
				return "", err
			}
			if !was {
				return "", accessErr
			}
		}
		if err := d.Store.CheckoutTask(ctx, s.UUID, taskUUID); err != nil {
			return "", err
		}
		return textResult("Successfully checked out from task " + taskUUID), nil
	},
}
