package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

func createSessionFor(t *testing.T, s *mcpsdk.ClientSession, name string) SessionView {
	t.Helper()
	var v SessionView
	ok(t, s, "chorus_create_session", map[string]any{"name": name}, &v)
	return v
}

// The session state machine and its records (docs/rules.md §2.5): create returns the whole
// session, list shows only the caller's, close checks out every task, reopen only from closed,
// heartbeat refreshes lastActiveAt, check-in reopens the same row.
func TestSessionLifecycle(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		other := e.client(e.agent("Other", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		t1, t2 := createTask(t, admin, project), createTask(t, admin, project)

		var s SessionView
		ok(t, dev, "chorus_create_session", map[string]any{"name": "  worktree-a ", "description": "the API half"}, &s)
		require.Equal(t, "worktree-a", s.Name)
		require.Equal(t, "active", s.Status)
		require.NotNil(t, s.Description)
		require.Empty(t, s.ActiveCheckins)
		require.False(t, s.Stale)
		require.NotEmpty(t, s.AgentUUID)
		require.Contains(t, fails(t, dev, "chorus_create_session", map[string]any{"name": "  "}), "name must not be blank")

		// Ownership: another agent's session answers exactly like an unknown one.
		for _, tool := range []string{"chorus_get_session", "chorus_close_session", "chorus_reopen_session", "chorus_session_heartbeat"} {
			require.Equal(t, "Session not found", fails(t, other, tool, map[string]any{"sessionUuid": s.UUID}), tool)
			require.Equal(t, "Session not found", fails(t, dev, tool, map[string]any{"sessionUuid": store.NewUUID()}), tool)
		}
		require.Equal(t, "Session not found",
			fails(t, other, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t1}))

		// Check-in claims an unheld task for the session's agent.
		var ci CheckedIn
		ok(t, dev, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t1}, &ci)
		require.Equal(t, t1, ci.TaskUUID)
		var v TaskView
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": t1}, &v)
		require.Equal(t, "assigned", v.Status)
		require.Equal(t, "Dev", v.Assignee.Name)
		// A task someone else holds is checked in to but not claimed.
		ok(t, other, "chorus_claim_task", map[string]any{"taskUuid": t2}, nil)
		ok(t, dev, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t2}, &ci)
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": t2}, &v)
		require.Equal(t, "Other", v.Assignee.Name)

		var got SessionView
		ok(t, dev, "chorus_get_session", map[string]any{"sessionUuid": s.UUID}, &got)
		require.Len(t, got.ActiveCheckins, 2)
		require.Equal(t, t1, got.ActiveCheckins[0].TaskUUID)
		require.Nil(t, got.ActiveCheckins[0].CheckoutAt)

		res := call(t, dev, "chorus_session_checkout_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t2})
		require.False(t, res.IsError, text(res))
		require.Equal(t, "Successfully checked out from task "+t2, text(res))
		res = call(t, dev, "chorus_session_checkout_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t2})
		require.False(t, res.IsError, "checking out again changes nothing: %s", text(res))
		ok(t, dev, "chorus_get_session", map[string]any{"sessionUuid": s.UUID}, &got)
		require.Len(t, got.ActiveCheckins, 1)

		// Heartbeat refreshes lastActiveAt.
		before := got.LastActiveAt
		time.Sleep(5 * time.Millisecond)
		res = call(t, dev, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID})
		require.False(t, res.IsError, text(res))
		require.True(t, strings.HasPrefix(text(res), "Heartbeat successful: "), text(res))
		at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(text(res), "Heartbeat successful: "))
		require.NoError(t, err)
		ok(t, dev, "chorus_get_session", map[string]any{"sessionUuid": s.UUID}, &got)
		require.True(t, got.LastActiveAt.After(before))
		require.True(t, got.LastActiveAt.Equal(at))

		// Reopen refuses an active session; close checks everything out and can be repeated.
		require.Equal(t, "Session is active, only closed sessions can be reopened",
			fails(t, dev, "chorus_reopen_session", map[string]any{"sessionUuid": s.UUID}))
		var closed SessionView
		ok(t, dev, "chorus_close_session", map[string]any{"sessionUuid": s.UUID}, &closed)
		require.Equal(t, "closed", closed.Status)
		require.Empty(t, closed.ActiveCheckins)
		ok(t, dev, "chorus_close_session", map[string]any{"sessionUuid": s.UUID}, &closed)
		require.Equal(t, "closed", closed.Status)
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": t1}, &v)
		require.Equal(t, "assigned", v.Status, "closing a session leaves its tasks alone")
		require.Equal(t, "Session not found or not active",
			fails(t, dev, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t1}))
		require.Contains(t, fails(t, dev, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}), "is closed")
		var n int
		require.NoError(t, e.st.DB.NewRaw("SELECT count(*) FROM session_task_checkins WHERE session_uuid = ? AND checkout_at IS NULL",
			s.UUID).Scan(ctx, &n))
		require.Zero(t, n)

		var reopened SessionView
		ok(t, dev, "chorus_reopen_session", map[string]any{"sessionUuid": s.UUID}, &reopened)
		require.Equal(t, "active", reopened.Status)
		require.Empty(t, reopened.ActiveCheckins, "earlier check-ins stay checked out")
		// Checking in again reopens the same row.
		ok(t, dev, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": t1}, &ci)
		require.NoError(t, e.st.DB.NewRaw("SELECT count(*) FROM session_task_checkins WHERE session_uuid = ?", s.UUID).Scan(ctx, &n))
		require.Equal(t, 2, n, "one row per (session, task)")

		// Lists: the caller's only, newest first, filtered by status.
		s2 := createSessionFor(t, dev, "worktree-b")
		createSessionFor(t, other, "theirs")
		ok(t, dev, "chorus_close_session", map[string]any{"sessionUuid": s2.UUID}, nil)
		var list SessionList
		ok(t, dev, "chorus_list_sessions", nil, &list)
		require.Equal(t, 2, list.Total)
		require.Equal(t, s2.UUID, list.Sessions[0].UUID)
		ok(t, dev, "chorus_list_sessions", map[string]any{"status": "closed"}, &list)
		require.Equal(t, 1, list.Total)
		require.Equal(t, s2.UUID, list.Sessions[0].UUID)
		require.Contains(t, fails(t, dev, "chorus_list_sessions", map[string]any{"status": "stale"}), "Input validation error")

		// Check-in lists the active sessions with their check-ins.
		var me CheckinOut
		ok(t, dev, "chorus_checkin", nil, &me)
		require.Len(t, me.Sessions, 1)
		require.Equal(t, s.UUID, me.Sessions[0].UUID)
		require.Equal(t, t1, me.Sessions[0].ActiveCheckins[0].TaskUUID)
	})
}

// Sessions are records that take requestIds like every mutating tool: a retried create finds
// the session it made.
func TestSessionCreateRetried(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		var a, b SessionView
		ok(t, dev, "chorus_create_session", map[string]any{"name": "w", "requestId": "s1"}, &a)
		ok(t, dev, "chorus_create_session", map[string]any{"name": "w", "requestId": "s1"}, &b)
		require.Equal(t, a, b)
		var list SessionList
		ok(t, dev, "chorus_list_sessions", nil, &list)
		require.Equal(t, 1, list.Total)
		// The ledger is bypassed (its row is gone, as if the first call's outcome was never
		// recorded): the derived uuid still finds the session.
		_, err := e.st.DB.NewDelete().Table("tool_requests").Where("request_id = ?", "s1").Exec(context.Background())
		require.NoError(t, err)
		ok(t, dev, "chorus_create_session", map[string]any{"name": "w", "requestId": "s1"}, &b)
		require.Equal(t, a.UUID, b.UUID)
		ok(t, dev, "chorus_list_sessions", nil, &list)
		require.Equal(t, 1, list.Total)
	})
}

// sessionUuid on chorus_update_task and chorus_report_work: only the caller's own session; the
// activity names it; the blocker text and the reopen refusal name the session working on a
// dependency (docs/rules.md §5.3, §7.1).
func TestSessionAttributionAndBlockers(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		dev1 := e.client(e.agent("Dev One", perm.DeveloperAgent))
		dev2 := e.client(e.agent("Dev Two", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		var created CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Schema", "draftUuid": "s", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "API", "dependsOnDraftUuids": []string{"s"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
		schema, api := created.Tasks[0].UUID, created.Tasks[1].UUID

		s1 := createSessionFor(t, dev1, "schema-worktree")
		s2 := createSessionFor(t, dev2, "api-worktree")
		ok(t, dev1, "chorus_session_checkin_task", map[string]any{"sessionUuid": s1.UUID, "taskUuid": schema}, nil)
		ok(t, dev2, "chorus_session_checkin_task", map[string]any{"sessionUuid": s2.UUID, "taskUuid": api}, nil)

		// Someone else's session, or none, is not found, before anything changes.
		require.Equal(t, "Session not found", fails(t, dev1, "chorus_update_task",
			map[string]any{"taskUuid": schema, "status": "in_progress", "sessionUuid": s2.UUID}))
		require.Equal(t, "Session not found", fails(t, dev1, "chorus_report_work",
			map[string]any{"taskUuid": schema, "report": "x", "sessionUuid": store.NewUUID()}))
		require.Equal(t, "Session not found", fails(t, dev1, "chorus_report_work",
			map[string]any{"taskUuid": schema, "report": "x", "sessionUuid": s2.UUID}))
		require.Zero(t, activityCount(t, e.st, schema, "status_changed"))
		require.Zero(t, activityCount(t, e.st, schema, "comment_added"))

		// The blocked task's refusal names the session working on its dependency.
		msg := fails(t, dev2, "chorus_update_task", map[string]any{"taskUuid": api, "status": "in_progress", "sessionUuid": s2.UUID})
		require.Contains(t, msg, `1. "Schema" (status: assigned, assignee: Dev One [agent], session: schema-worktree)`)

		var before SessionView
		ok(t, dev1, "chorus_get_session", map[string]any{"sessionUuid": s1.UUID}, &before)
		time.Sleep(5 * time.Millisecond)
		ok(t, dev1, "chorus_update_task", map[string]any{"taskUuid": schema, "status": "in_progress", "sessionUuid": s1.UUID}, nil)
		res := call(t, dev1, "chorus_report_work", map[string]any{"taskUuid": schema, "report": "schema drafted", "sessionUuid": s1.UUID})
		require.False(t, res.IsError, text(res))
		var after SessionView
		ok(t, dev1, "chorus_get_session", map[string]any{"sessionUuid": s1.UUID}, &after)
		require.True(t, after.LastActiveAt.After(before.LastActiveAt), "a change made in a session is its heartbeat")

		for _, action := range []string{"status_changed", "comment_added"} {
			var a store.Activity
			require.NoError(t, e.st.DB.NewSelect().Model(&a).Where("target_uuid = ?", schema).Where("action = ?", action).Scan(ctx))
			require.NotNil(t, a.SessionUUID, action)
			require.Equal(t, s1.UUID, *a.SessionUUID)
			require.Equal(t, "schema-worktree", *a.SessionName)
		}
		var claimed store.Activity
		require.NoError(t, e.st.DB.NewSelect().Model(&claimed).Where("target_uuid = ?", schema).Where("action = ?", "assigned").Scan(ctx))
		require.Nil(t, claimed.SessionUUID, "a change made without a session names none")

		// The reopen refusal's JSON names it too; once checked out of the blocker, no session is named.
		res = call(t, dev2, "chorus_report_work", map[string]any{"taskUuid": api, "report": "started", "status": "in_progress"})
		require.False(t, res.IsError, text(res))
		ok(t, dev2, "chorus_submit_for_verify", map[string]any{"taskUuid": api}, nil)
		bs := blockersOf(t, fails(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": api}))
		require.Len(t, bs, 1)
		require.Equal(t, map[string]any{"sessionUuid": s1.UUID, "sessionName": "schema-worktree"}, bs[0]["sessionCheckin"])
		ok(t, dev1, "chorus_session_checkout_task", map[string]any{"sessionUuid": s1.UUID, "taskUuid": schema}, nil)
		bs = blockersOf(t, fails(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": api}))
		require.Nil(t, bs[0]["sessionCheckin"])
	})
}

// blockersOf parses a blocked reopen's JSON refusal.
func blockersOf(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out struct {
		Blockers []map[string]any `json:"blockers"`
	}
	require.NoError(t, json.Unmarshal([]byte(msg), &out), msg)
	return out.Blockers
}

// A session checked in to a task the agent can no longer see (its idea moved to a private
// project) stays usable: the session tools end that check-in and go on, and the agent may still
// check out of it (docs/rules.md §2.5). Found by trying a move under a working session.
func TestSessionOutlivesATaskThatBecameHidden(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev := e.otherOwnersAgent("Stranger", perm.DeveloperAgent)
		public := createProject(t, admin, "Public")
		private := createPrivateProject(t, admin, "Private")
		idea, tasks := approvedIdea(t, pm, admin, public)
		moving, moving2, staying := tasks[0], tasks[1], createTask(t, admin, public)
		s := createSessionFor(t, dev, "wt")
		for _, task := range []string{moving, moving2, staying} {
			ok(t, dev, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": task}, nil)
		}
		ok(t, admin, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": private}, nil)

		require.Equal(t, "Task not found", fails(t, dev, "chorus_get_task", map[string]any{"taskUuid": moving}))
		// Leaving the hidden task by hand works; checking in to it again does not.
		ok(t, dev, "chorus_session_checkout_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": moving}, nil)
		require.Equal(t, "Task not found", fails(t, dev, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": moving}))
		// The heartbeat ends the other hidden check-in and keeps the session alive.
		ok(t, dev, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}, nil)
		ok(t, dev, "chorus_session_checkout_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": moving2}, nil) // already ended: no-op
		other := createSessionFor(t, dev, "other")
		require.Equal(t, "Task not found", fails(t, dev, "chorus_session_checkout_task", map[string]any{"sessionUuid": other.UUID, "taskUuid": moving2}),
			"a session never checked in to the hidden task learns nothing about it")
		var got SessionView
		ok(t, dev, "chorus_get_session", map[string]any{"sessionUuid": s.UUID}, &got)
		require.Len(t, got.ActiveCheckins, 1)
		require.Equal(t, staying, got.ActiveCheckins[0].TaskUUID)
		ok(t, dev, "chorus_close_session", map[string]any{"sessionUuid": s.UUID}, nil)
		e.requireAgreement()
	})
}
