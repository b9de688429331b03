package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// Every event of the lifecycle notifies whom docs/rules.md §7.2 says, exactly once, while every
// write loses its acknowledgement the first times (so its activity runs again) and two workers
// share the queue (so the retry may run on either).
func TestLifecycleNotificationsArriveExactlyOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true})
			e.startWorker() // a second worker on the same task queue
			for _, k := range []string{"ApplyIdeaChange", "ApplyProposalChange", "ApplyApproval", "ApplyTaskChange"} {
				e.faults.FailAfterCommit(k, 3)
			}
			admin := e.client(e.adminKey)
			adminUUID := e.agentID("Admin Agent")
			pmSession := e.pmWithIdeaAdmin("PM")
			pm := person{uuid: e.agentID("PM"), s: pmSession}
			dev := e.member("Dev", e.owner, perm.DeveloperAgent)
			project := createProject(t, admin, "Apollo")

			idea := createIdea(t, admin, project, "Single sign-on", nil)
			ok(t, pm.s, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
			ok(t, pm.s, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, nil)
			ok(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea, "answers": []map[string]any{
				{"questionId": "q1", "selectedOptionId": "a", "customText": nil}, {"questionId": "q2", "selectedOptionId": "b", "customText": nil}}}, nil)
			ok(t, pm.s, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}, nil)
			proposal, _ := fullProposal(t, pm.s, project, idea)
			ok(t, pm.s, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
			ok(t, admin, "chorus_pm_reject_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "Split the API work"}, nil)
			ok(t, pm.s, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
			var pv ProposalView
			ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "Go"}, &pv)
			task := pv.MaterializedTasks[0].TaskUUID // "Schema", which depends on nothing

			ok(t, pm.s, "chorus_pm_assign_task", map[string]any{"taskUuid": task, "agentUuid": dev.uuid}, nil)
			work(t, dev.s, task) // in_progress, self-check, work report, submit
			ok(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": task}, nil)
			ok(t, dev.s, "chorus_submit_for_verify", map[string]any{"taskUuid": task}, nil)
			var v TaskView
			ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
			markAll(t, admin, task, v, "passed")
			ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, nil)
			ok(t, pm.s, "chorus_create_report", map[string]any{"proposalUuid": proposal, "title": "Shipped", "content": "Done."}, nil)
			for _, k := range []string{"ApplyIdeaChange", "ApplyProposalChange", "ApplyApproval", "ApplyTaskChange"} {
				require.Equal(t, 3, e.faults.Injected(k), "%s lost its acknowledgement three times", k)
			}

			type note struct{ action, entity, message string }
			got := func(typ, uuid string) []note {
				var out []note
				for _, n := range notes(t, e, typ, uuid) {
					out = append(out, note{n.Action, n.EntityUUID, n.Message})
				}
				return out
			}
			require.ElementsMatch(t, []note{
				{"idea_claimed", idea, `PM claimed idea "Single sign-on"`},
				{"elaboration_requested", idea, `PM requested elaboration on idea "Single sign-on"`},
				{"elaboration_answered", idea, `PM resolved the elaboration of idea "Single sign-on"`},
				{"report_created", idea, `PM generated a new report on idea "Single sign-on"`},
			}, got("agent", adminUUID), "the idea's creator")
			require.ElementsMatch(t, []note{
				{"elaboration_answered", idea, `Admin Agent answered elaboration questions for idea "Single sign-on"`},
				{"proposal_rejected", proposal, `Proposal "SSO rollout" has been rejected. Reason: Split the API work`},
				{"proposal_approved", proposal, `Proposal "SSO rollout" has been approved. Note: Go`},
				{"task_status_changed", task, `Dev changed the status of task "Schema"`},
				{"comment_added", task, `Dev commented on "Schema"`},
				{"task_submitted_for_verify", task, `Dev submitted task "Schema" for verification`},
				{"task_submitted_for_verify", task, `Dev submitted task "Schema" for verification`},
			}, got("agent", pm.uuid), "the assignee of the idea, creator of the proposal and its tasks")
			require.ElementsMatch(t, []note{
				{"task_assigned", task, `PM assigned you to task "Schema"`},
				{"task_reopened", task, `Task "Schema" has been reopened`},
				{"task_verified", task, `Task "Schema" has been verified`},
			}, got("agent", dev.uuid), "the task's assignee")
			require.ElementsMatch(t, []note{
				{"elaboration_requested", idea, `PM requested elaboration on idea "Single sign-on"`},
				{"task_submitted_for_verify", task, `Dev submitted task "Schema" for verification`},
				{"task_submitted_for_verify", task, `Dev submitted task "Schema" for verification`},
				{"report_created", idea, `PM generated a new report on idea "Single sign-on"`},
			}, got("user", e.owner), "the owner user of the actors")

			// The developer reads its three through MCP, newest first; reading marks them read.
			var inbox NotificationList
			ok(t, dev.s, "chorus_get_notifications", nil, &inbox)
			require.Equal(t, 3, inbox.UnreadCount)
			require.Equal(t, 3, inbox.Total)
			require.Equal(t, []string{"task_verified", "task_reopened", "task_assigned"},
				[]string{inbox.Notifications[0].Action, inbox.Notifications[1].Action, inbox.Notifications[2].Action})
			n := inbox.Notifications[2]
			require.Equal(t, "Apollo", n.ProjectName)
			require.Equal(t, project, *n.ProjectUUID)
			require.Equal(t, "task", n.EntityType)
			require.Equal(t, "Schema", n.EntityTitle)
			require.Equal(t, "PM", n.ActorName)
			require.Equal(t, pm.uuid, n.ActorUUID)
			require.NotNil(t, n.ReadAt)
			ok(t, dev.s, "chorus_get_notifications", nil, &inbox)
			require.Zero(t, inbox.UnreadCount)
			require.Empty(t, inbox.Notifications)
			e.requireAgreement()
		})
	}
}

// chorus_get_notifications and chorus_mark_notification_read (docs/rules.md §4.16), and the
// notification part of chorus_checkin (§4.1).
func TestReadingNotifications(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		dev := e.member("Dev", e.owner, perm.DeveloperAgent)
		other := e.member("Other", e.owner, perm.DeveloperAgent)
		project := createProject(t, admin, "Apollo")
		// Eight mentions of Dev, each on a document of its own (mentions of one reader about one
		// document merge, §7.2), then one of Other; doc is the newest document.
		var doc string
		for i := 1; i <= 8; i++ {
			doc = createDocument(t, admin, project)
			ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": doc,
				"content": fmt.Sprintf("%d %s", i, mention("Dev", "agent", dev.uuid))}, nil)
		}
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": doc,
			"content": mention("Other", "agent", other.uuid)}, nil)
		message := func(n NotificationRow) string { return n.Message }

		// autoMarkRead false: a page without marking; limit/offset make page and pageSize.
		var inbox NotificationList
		ok(t, dev.s, "chorus_get_notifications", map[string]any{"limit": 3, "offset": 3, "autoMarkRead": false}, &inbox)
		require.Equal(t, 8, inbox.UnreadCount)
		require.Equal(t, 8, inbox.Total)
		require.Equal(t, 2, inbox.Page)
		require.Equal(t, 3, inbox.PageSize)
		require.Equal(t, 3, inbox.Returned)
		require.Equal(t, `Admin Agent mentioned you: "5 @Dev"`, message(inbox.Notifications[0]))
		require.Nil(t, inbox.Notifications[0].ReadAt)
		ok(t, dev.s, "chorus_get_notifications", map[string]any{"status": "read"}, &inbox)
		require.Zero(t, inbox.Total)

		// Check-in takes the five newest unread ones, marks them read and counts what is left.
		var ci CheckinOut
		ok(t, dev.s, "chorus_checkin", nil, &ci)
		require.Equal(t, 3, ci.Notifications.Unread)
		require.Len(t, ci.Notifications.Recent, 5)
		require.Equal(t, "mentioned", ci.Notifications.Recent[0].Action)
		require.Equal(t, `Admin Agent mentioned you: "8 @Dev"`, ci.Notifications.Recent[0].Message)
		require.Equal(t, EntityRef{Type: "document", UUID: doc}, ci.Notifications.Recent[0].Entity)
		require.Equal(t, "Admin Agent", ci.Notifications.Recent[0].Actor)

		// The default reads the unread ones and marks them read; unreadCount is from before.
		ok(t, dev.s, "chorus_get_notifications", map[string]any{"limit": 2}, &inbox)
		require.Equal(t, 3, inbox.UnreadCount)
		require.Equal(t, 3, inbox.Total)
		require.Equal(t, []string{`Admin Agent mentioned you: "3 @Dev"`, `Admin Agent mentioned you: "2 @Dev"`},
			[]string{message(inbox.Notifications[0]), message(inbox.Notifications[1])})
		require.NotNil(t, inbox.Notifications[0].ReadAt)
		ok(t, dev.s, "chorus_get_notifications", map[string]any{"status": "all", "limit": 100}, &inbox)
		require.Equal(t, 1, inbox.UnreadCount)
		require.Equal(t, 8, inbox.Total)
		require.Nil(t, inbox.Notifications[7].ReadAt, "status all does not mark")
		last := inbox.Notifications[7].UUID
		ok(t, dev.s, "chorus_get_notifications", map[string]any{"status": "all"}, &inbox)
		require.Equal(t, 1, inbox.UnreadCount)

		// Marking one: only one's own; again changes nothing.
		var marked MarkedRead
		require.Equal(t, "Notification not found", fails(t, other.s, "chorus_mark_notification_read", map[string]any{"notificationUuid": last}))
		require.Equal(t, "Notification not found", fails(t, dev.s, "chorus_mark_notification_read", map[string]any{"notificationUuid": store.NewUUID()}))
		ok(t, dev.s, "chorus_mark_notification_read", map[string]any{"notificationUuid": last}, &marked)
		require.Equal(t, MarkedRead{Success: true, Marked: 1}, marked)
		ok(t, dev.s, "chorus_mark_notification_read", map[string]any{"notificationUuid": last}, &marked)
		require.Equal(t, MarkedRead{Success: true, Marked: 0}, marked)
		ok(t, dev.s, "chorus_get_notifications", map[string]any{"status": "read", "limit": 100}, &inbox)
		require.Equal(t, 8, inbox.Total)
		require.Zero(t, inbox.UnreadCount)

		// Neither argument: a clear error naming the fix.
		require.Contains(t, fails(t, other.s, "chorus_mark_notification_read", nil), "notificationUuid is required unless all is true")
		require.Contains(t, fails(t, other.s, "chorus_get_notifications", map[string]any{"status": "archived"}), "status")
		require.Contains(t, fails(t, other.s, "chorus_get_notifications", map[string]any{"limit": 101}), "limit")
		ok(t, other.s, "chorus_mark_notification_read", map[string]any{"all": true}, &marked)
		require.Equal(t, MarkedRead{Success: true, Marked: 1}, marked)
		ok(t, other.s, "chorus_get_notifications", nil, &inbox)
		require.Zero(t, inbox.UnreadCount)
	})
}

// checkinBarrier holds each check-in's update of the agent row until two have arrived (or two
// seconds passed), so two first check-ins both read the agent before either records it.
type checkinBarrier struct {
	mu      sync.Mutex
	arrived int
	both    chan struct{}
}

func (b *checkinBarrier) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if !strings.HasPrefix(ev.Query, `UPDATE "agents"`) || !strings.Contains(ev.Query, "last_active_at") {
		return ctx
	}
	b.mu.Lock()
	b.arrived++
	if b.arrived == 2 {
		close(b.both)
	}
	b.mu.Unlock()
	select {
	case <-b.both:
	case <-time.After(2 * time.Second): // SQLite: the second transaction waits for the first's lock
	}
	return ctx
}

func (b *checkinBarrier) AfterQuery(context.Context, *bun.QueryEvent) {}

// An agent's first check-in notifies its owner once, even when two first check-ins race (on
// PostgreSQL both read the agent as never checked in).
func TestFirstCheckinNotifiesTheOwnerOnce(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		p := e.process(&checkinBarrier{both: make(chan struct{})})
		_, key, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: "Dev",
			Roles: []string{perm.DeveloperAgent}, OwnerUUID: &e.owner})
		require.NoError(t, err)
		dev := person{uuid: e.agentID("Dev"), s: p.client(key)}
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := dev.s.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "chorus_checkin"})
				if err == nil && res.IsError {
					err = fmt.Errorf("%s", text(res))
				}
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		ok(t, dev.s, "chorus_checkin", nil, nil)
		var got []string
		for _, n := range notes(t, e, "user", e.owner) {
			if n.EntityUUID == dev.uuid {
				got = append(got, n.Action)
			}
		}
		require.Equal(t, []string{"agent_checkin"}, got)
	})
}

// chorus_get_activity (docs/rules.md §4.17): per project and per entity, newest first (rows of
// one change in the order they were written), 50 to a page by default, with actor names and
// session fields.
func TestActivityStream(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		dev := e.member("Dev", e.owner, perm.DeveloperAgent)
		project := createProject(t, admin, "Apollo")
		other := createProject(t, admin, "Other")
		task := createTask(t, admin, project)
		doc := createDocument(t, admin, project)
		ok(t, dev.s, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		ok(t, dev.s, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": doc,
			"content": "see " + mention("Admin", "agent", e.agentID("Admin Agent"))}, nil)
		ok(t, dev.s, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, nil)

		var acts ActivityList
		ok(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": project}, &acts)
		require.Equal(t, 50, acts.PageSize)
		require.Equal(t, 1, acts.Page)
		require.Equal(t, 5, acts.Total)
		var seen []string
		for _, a := range acts.Activities {
			seen = append(seen, a.TargetType+":"+a.Action)
		}
		require.Equal(t, []string{"task:status_changed", "document:mentioned", "document:comment_added", "task:assigned", "task:created"}, seen,
			"newest first; a comment's mention after its comment")
		top := acts.Activities[0]
		require.Equal(t, task, top.TargetUUID)
		require.Equal(t, "agent", top.ActorType)
		require.Equal(t, dev.uuid, top.ActorUUID)
		require.Equal(t, "Dev", top.ActorName)
		require.Equal(t, "in_progress", decodeValue(t, top.Value)["status"])
		require.Nil(t, top.SessionUUID)
		require.Nil(t, top.SessionName)
		require.Equal(t, "Admin Agent", acts.Activities[4].ActorName)
		require.True(t, slices.IsSortedFunc(acts.Activities, func(a, b ActivityRow) int { return b.CreatedAt.Compare(a.CreatedAt) }))

		// One entity.
		ok(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": project, "targetType": "task", "targetUuid": task}, &acts)
		require.Equal(t, 3, acts.Total)
		require.Equal(t, "status_changed", acts.Activities[0].Action)
		ok(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": project, "targetType": "task", "targetUuid": task,
			"page": 2, "pageSize": 2}, &acts)
		require.Equal(t, 1, acts.Returned)
		require.Equal(t, "created", acts.Activities[0].Action)

		// An entity of another project, or the wrong type, is not found; half a target is refused.
		require.Equal(t, "Task not found", fails(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": other, "targetType": "task", "targetUuid": task}))
		require.Equal(t, "Idea not found", fails(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": project, "targetType": "idea", "targetUuid": task}))
		require.Contains(t, fails(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": project, "targetUuid": task}), "targetType and targetUuid go together")
		require.Contains(t, fails(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": project, "pageSize": 101}), "pageSize")
		ok(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": other}, &acts)
		require.Zero(t, acts.Total)
		require.NotNil(t, acts.Activities)
	})
}
