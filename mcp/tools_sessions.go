package mcp

import (
	"context"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Session tools (docs/rules.md §2.5, §4.10), adapters over app/sessions.go. A session is a plain
// record, not a workflow. The claims a check-in takes and a heartbeat renews are sent here until
// package app has the one error classifier that tells a refused claim from an outage.

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
		s, err := d.app().CreateSession(ctx, call.Request, strings.TrimSpace(in.Name), in.Description)
		if err != nil {
			return SessionView{}, err
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
		ss, total, err := d.app().ListSessions(ctx, call.Request, in.Status, size, offset)
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
		s, open, err := d.app().SessionFor(ctx, call.Request, string(in.SessionUUID), store.AccessViewer)
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
		s, open, err := d.app().CloseSession(ctx, call.Request, string(in.SessionUUID))
		if err != nil {
			return SessionView{}, err
		}
		return sessionView(*s, open, store.Now()), nil
	},
}

var reopenSession = tool[SessionIn, SessionView]{
	Name: "chorus_reopen_session", Title: "Reopen a session", Toolset: tsSessions, Perm: perm.Public, Effect: writes,
	Desc: "Make one of your closed sessions active again.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionIn) (SessionView, error) {
		s, open, err := d.app().ReopenSession(ctx, call.Request, string(in.SessionUUID))
		if err != nil {
			return SessionView{}, err
		}
		return sessionView(*s, open, store.Now()), nil
	},
}

var sessionHeartbeat = tool[SessionIn, textResult]{
	Name: "chorus_session_heartbeat", Title: "Session heartbeat", Toolset: tsSessions, Perm: perm.Public, Effect: writes,
	Desc: "Keep your session active and renew your claims on its tasks.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionIn) (textResult, error) {
		at, err := d.app().SessionHeartbeat(ctx, call.Request, string(in.SessionUUID))
		if err != nil {
			return "", err
		}
		return textResult("Heartbeat successful: " + at.Format(time.RFC3339Nano)), nil
	},
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
		c, err := d.app().CheckinTask(ctx, call.Request, string(in.SessionUUID), string(in.TaskUUID))
		if err != nil {
			return CheckedIn{}, err
		}
		return CheckedIn{SessionUUID: c.SessionUUID, TaskUUID: c.TaskUUID, CheckedInAt: c.At}, nil
	},
}

var sessionCheckoutTask = tool[SessionTaskIn, textResult]{
	Name: "chorus_session_checkout_task", Title: "Session check-out", Toolset: tsSessions, Perm: perm.Public, Effect: writes, Idempotent: true,
	Desc: "Record that your session stopped working on a task.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SessionTaskIn) (textResult, error) {
		taskUUID := string(in.TaskUUID)
		if err := d.app().CheckoutTask(ctx, call.Request, string(in.SessionUUID), taskUUID); err != nil {
			return "", err
		}
		return textResult("Successfully checked out from task " + taskUUID), nil
	},
}
