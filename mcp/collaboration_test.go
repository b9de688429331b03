package mcp

import (
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
)

// The collaboration surface end to end: two developer agents in sessions work dependent tasks
// of an approved proposal, a PM comments on one and mentions the other, notifications arrive
// exactly once, the activity stream tells the story with session names, search finds a task by
// a word of its description, and the idea moves to another project with its proposal and tasks.
func TestAgentsCollaborateOnDependentTasks(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		devA := e.client(e.agent("Dev A", perm.DeveloperAgent))
		devB := e.client(e.agent("Dev B", perm.DeveloperAgent))
		whoIs := func(s *mcpsdk.ClientSession) string {
			var me CheckinOut
			ok(t, s, "chorus_checkin", map[string]any{}, &me)
			return me.Agent.UUID
		}
		b := whoIs(devB)

		project := createProject(t, admin, "Apollo")
		idea, tasks := approvedIdea(t, pm, admin, project)
		schema, api := tasks[0], tasks[1] // API depends on Schema

		sa, sb := createSessionFor(t, devA, "a-worktree").UUID, createSessionFor(t, devB, "b-worktree").UUID
		ok(t, devA, "chorus_session_checkin_task", map[string]any{"sessionUuid": sa, "taskUuid": schema}, nil) // claims it
		ok(t, devB, "chorus_session_checkin_task", map[string]any{"sessionUuid": sb, "taskUuid": api}, nil)
		var tv TaskView
		ok(t, devA, "chorus_update_task", map[string]any{"taskUuid": schema, "status": "in_progress", "sessionUuid": sa}, &tv)
		require.Equal(t, "in_progress", tv.Status)

		// B cannot start yet: the refusal names the blocker, its holder and A's session.
		msg := fails(t, devB, "chorus_update_task", map[string]any{"taskUuid": api, "status": "in_progress", "sessionUuid": sb})
		require.Contains(t, msg, `"Schema" (status: in_progress, assignee: Dev A [agent], session: a-worktree)`)

		// The PM comments on A's task and mentions B; a retry of the same call adds nothing.
		comment := map[string]any{"targetType": "task", "targetUuid": schema, "requestId": "review-note",
			"content": fmt.Sprintf("Schema looks close. @[Dev B](agent:%s) the API can start once this is verified.", b)}
		ok(t, pm, "chorus_add_comment", comment, nil)
		ok(t, pm, "chorus_add_comment", comment, nil)
		var comments struct {
			Comments []struct {
				Content string `json:"content"`
			} `json:"comments"`
		}
		ok(t, devA, "chorus_get_comments", map[string]any{"targetType": "task", "targetUuid": schema}, &comments)
		require.Len(t, comments.Comments, 1)

		inbox := func(s *mcpsdk.ClientSession) map[string]int {
			var l NotificationList
			ok(t, s, "chorus_get_notifications", map[string]any{"status": "all", "limit": 100}, &l)
			n := map[string]int{}
			for _, r := range l.Notifications {
				if r.EntityUUID == schema || r.EntityUUID == api {
					n[r.Action]++
				}
			}
			return n
		}
		require.Equal(t, 1, inbox(devB)["mentioned"], "B is told once that the PM mentioned it")
		require.Equal(t, 1, inbox(devA)["comment_added"], "A, the assignee, is told once of the comment")
		require.Zero(t, inbox(pm)["mentioned"]+inbox(pm)["comment_added"], "no one is notified of their own comment")

		// A finishes; the admin verifies; B starts and works in its session.
		var items []map[string]any
		for _, c := range tv.AcceptanceCriteriaItems {
			items = append(items, map[string]any{"uuid": c.UUID, "devStatus": "passed", "devEvidence": "migration runs"})
		}
		ok(t, devA, "chorus_report_criteria_self_check", map[string]any{"taskUuid": schema, "criteria": items}, nil)
		ok(t, devA, "chorus_submit_for_verify", map[string]any{"taskUuid": schema, "summary": "ready"}, nil)
		var v TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": schema}, &v)
		markAll(t, admin, schema, v, "passed")
		ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": schema}, nil)
		ok(t, devB, "chorus_update_task", map[string]any{"taskUuid": api, "status": "in_progress", "sessionUuid": sb}, &tv)
		require.Equal(t, "in_progress", tv.Status)
		ok(t, devB, "chorus_report_work", map[string]any{"taskUuid": api, "sessionUuid": sb,
			"report": "Endpoints drafted; the pagination cursor is stored as an opaque token."}, nil)

		// The activity stream, newest first, says who did what in which session.
		var acts ActivityList
		ok(t, admin, "chorus_get_activity", map[string]any{"projectUuid": project, "pageSize": 100}, &acts)
		var story []string
		for i := len(acts.Activities) - 1; i >= 0; i-- {
			r := acts.Activities[i]
			if r.TargetUUID != schema && r.TargetUUID != api {
				continue
			}
			line := r.ActorName + " " + r.Action
			if r.SessionName != nil {
				line += " in " + *r.SessionName
			}
			story = append(story, line)
		}
		requireSubsequence(t, story, []string{
			"Dev A status_changed in a-worktree",
			"PM comment_added",
			"Dev B status_changed in b-worktree",
			"Dev B comment_added in b-worktree",
		})
		for i := 1; i < len(acts.Activities); i++ {
			require.False(t, acts.Activities[i].CreatedAt.After(acts.Activities[i-1].CreatedAt), "newest first")
		}

		// Search finds B's task by a word of its description.
		ok(t, pm, "chorus_update_task", map[string]any{"taskUuid": api, "description": "Expose the ledger through paginated endpoints"}, nil)
		var found SearchOut
		ok(t, devA, "chorus_search", map[string]any{"query": "paginated", "entityTypes": []string{"task"}}, &found)
		require.Len(t, found.Results, 1)
		require.Equal(t, api, found.Results[0].UUID)

		// The idea moves to another project; its proposal and tasks follow, rows and workflows.
		other := createProject(t, admin, "Hermes")
		ok(t, pm, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": other}, nil)
		var iv IdeaView
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Equal(t, other, iv.Project.UUID)
		for _, task := range []string{schema, api} {
			ok(t, devB, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
			require.Equal(t, other, v.Project.UUID, "the task moved with its idea")
		}
		var moved TaskList
		ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": other}, &moved)
		require.Equal(t, 3, moved.Total)
		ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &moved)
		require.Zero(t, moved.Total)
		// B keeps working on the moved task: its workflow follows the move.
		ok(t, devB, "chorus_report_work", map[string]any{"taskUuid": api, "sessionUuid": sb, "report": "Moved along with the idea."}, nil)
		e.requireAgreement()
	})
}

// requireSubsequence checks that want appears in got in order, other entries between allowed.
func requireSubsequence(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	require.Equal(t, len(want), i, "expected, in this order: %s\ngot: %s", strings.Join(want, "; "), strings.Join(got, "; "))
}
