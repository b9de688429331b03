package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// quickTasks creates tasks in one call; each spec is "title:priority" and may name earlier
// titles it depends on after a '>' ("B:high>A").
func quickTasks(t *testing.T, s *mcpsdk.ClientSession, project string, specs ...string) map[string]string {
	t.Helper()
	var tasks []map[string]any
	for _, sp := range specs {
		head, deps, _ := strings.Cut(sp, ">")
		title, prio, _ := strings.Cut(head, ":")
		task := map[string]any{"title": title, "draftUuid": title, "priority": prio,
			"acceptanceCriteriaItems": []map[string]any{{"description": "done"}}}
		if deps != "" {
			task["dependsOnDraftUuids"] = strings.Split(deps, ",")
		}
		tasks = append(tasks, task)
	}
	var created CreatedTasks
	ok(t, s, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks}, &created)
	require.Empty(t, created.Warnings)
	out := map[string]string{}
	for _, c := range created.Tasks {
		out[c.Title] = c.UUID
	}
	return out
}

// chorus_claim_next_task claims by priority, oldest first among equals, never a blocked task,
// a task someone holds or a task of a project the caller cannot edit (docs/rules.md §4.14).
func TestClaimNextTaskOrder(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		// An agent without an owner reaches public projects only.
		_, key, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: "Dev",
			Roles: []string{perm.DeveloperAgent}})
		require.NoError(t, err)
		dev := e.client(key)
		other := e.client(e.agent("Other", perm.DeveloperAgent))
		pm := e.client(e.agent("PM", perm.PMAgent))

		project := createProject(t, admin, "Apollo")
		var private CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Secret", "visibility": "private"}, &private)
		quickTasks(t, admin, private.UUID, "Hidden:high")
		ids := quickTasks(t, admin, project, "Low:low")
		for k, v := range quickTasks(t, admin, project, "H1:high", "Mid:medium", "Blocked:high>Mid", "Taken:high") {
			ids[k] = v
		}
		ok(t, other, "chorus_claim_task", map[string]any{"taskUuid": ids["Taken"]}, nil)
		for k, v := range quickTasks(t, admin, project, "H3:high") {
			ids[k] = v
		}

		want := []string{"H1", "H3", "Mid", "Low"}
		for i, title := range want {
			args := map[string]any{}
			if i%2 == 0 {
				args["projectUuid"] = project
			}
			var v TaskView
			ok(t, dev, "chorus_claim_next_task", args, &v)
			require.Equal(t, title, v.Title, "claim %d", i+1)
			require.Equal(t, "assigned", v.Status)
			require.Equal(t, "Dev", v.Assignee.Name)
		}
		msg := fails(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project})
		require.Equal(t, "No task is available to claim in this project: every open task is held by another agent or blocked by "+
			"unfinished dependencies. See chorus_get_available_tasks, or try again later.", msg)
		msg = fails(t, dev, "chorus_claim_next_task", nil)
		require.Contains(t, msg, "No task is available to claim in the projects where you may edit tasks")
		var v TaskView
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": ids["Blocked"]}, &v)
		require.Equal(t, "open", v.Status, "a blocked task is never claimed")
		require.Equal(t, "Project not found", fails(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": private.UUID}))
		require.Equal(t, "Proposal not found", fails(t, dev, "chorus_claim_next_task", map[string]any{"proposalUuids": []string{store.NewUUID()}}),
			"an unknown proposal is named, not answered with \"no task\"")

		// The blocked task becomes claimable once its dependency is closed; _hints as for a claim.
		ok(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": ids["Mid"]}, nil)
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project}, &v)
		require.Equal(t, "Blocked", v.Title)

		// The private project's task goes to an agent whose owner may edit it.
		ok(t, pm, "chorus_claim_next_task", nil, &v)
		require.Equal(t, "Hidden", v.Title)

		// Gated by task:write.
		reader := e.client(func() string {
			_, k, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: "Reader",
				Permissions: []string{"task:read"}})
			require.NoError(t, err)
			return k
		}())
		require.Equal(t, "Tool chorus_claim_next_task not found", fails(t, reader, "chorus_claim_next_task", nil))
		e.requireAgreement()
	})
}

// 20 agents call chorus_claim_next_task at once: each gets a different task, the tasks claimed
// are exactly the first ones in claim order, and once the tasks run out the rest are told none
// is available. Every claim took effect once, and every workflow agrees with its row.
func TestClaimNextTaskRace(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Race")
		var specs []string
		for i := range 25 {
			specs = append(specs, fmt.Sprintf("T%02d:%s", i, []string{"low", "medium", "high"}[i%3]))
		}
		quickTasks(t, admin, project, specs...)
		order, err := e.st.ClaimCandidates(ctx, []string{project}, nil, nil, 100)
		require.NoError(t, err)
		require.Len(t, order, 25)

		const racers = 20
		agents := make([]*mcpsdk.ClientSession, 2*racers)
		for i := range agents {
			agents[i] = e.client(e.agent(fmt.Sprintf("Racer %02d", i), perm.DeveloperAgent))
		}
		race := func(round []*mcpsdk.ClientSession) (claimed map[string]string, refused int) {
			claimed = map[string]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i, s := range round {
				wg.Go(func() {
					res := call(t, s, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "next"})
					// An agent told "Still in progress" retries with the same requestId, as the
					// answer says. On a starved machine the Temporal dev server can hold a new
					// workflow's first task back for about a minute (its transfer queue backs off
					// on busy errors), longer than a call waits; the retry must still end in one
					// claim or "none available", never a second claim.
					for retry := 0; retry < 3 && res.IsError && strings.HasPrefix(text(res), "Still in progress"); retry++ {
						res = call(t, s, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "next"})
					}
					mu.Lock()
					defer mu.Unlock()
					if res.IsError {
						require.Contains(t, text(res), "No task is available to claim", "racer %d", i)
						refused++
						return
					}
					v := decode[TaskView](t, res)
					require.NotContains(t, claimed, v.UUID, "two agents got the same task")
					claimed[v.UUID] = v.Assignee.UUID
				})
			}
			wg.Wait()
			return claimed, refused
		}

		first, refused := race(agents[:racers])
		require.Zero(t, refused)
		require.Len(t, first, racers)
		for _, t0 := range order[:racers] {
			require.Contains(t, first, t0.UUID, "the highest-priority tasks are claimed first")
		}
		second, refused := race(agents[racers:])
		require.Len(t, second, 5)
		require.Equal(t, racers-5, refused)

		// One claim per task, on the row and in the activity stream.
		for _, t0 := range order {
			var row store.Task
			require.NoError(t, e.st.DB.NewSelect().Model(&row).Where("uuid = ?", t0.UUID).Scan(ctx))
			require.Equal(t, "assigned", string(row.Status))
			holder := first[t0.UUID] + second[t0.UUID]
			require.Equal(t, holder, *row.AssigneeUUID)
			require.Equal(t, 1, activityCount(t, e.st, t0.UUID, "assigned"))
		}
		e.requireAgreement()
	})
}

// A call whose outcome was lost after its claim committed (its API process died before the
// requestId ledger recorded the result) is retried with the same requestId: the retry asks the
// task it was trying, finds the claim made, and answers it; it never claims a second task.
func TestClaimNextTaskRetriedAfterLostOutcome(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		ids := quickTasks(t, admin, project, "A:high", "B:high", "C:low")
		args := map[string]any{"projectUuid": project, "requestId": "next-1"}
		var first, again TaskView
		ok(t, dev, "chorus_claim_next_task", args, &first)
		require.Equal(t, ids["A"], first.UUID)
		ok(t, dev, "chorus_claim_next_task", args, &again)
		require.Equal(t, first.UUID, again.UUID, "a retry answers from the ledger")

		// The ledger row as a call that crashed after its claim leaves it: running, no result,
		// its lease lapsed.
		_, err := e.st.DB.NewUpdate().Table("tool_requests").Set("state = 'running'").Set("result = NULL").
			Set("running_until = NULL").Set("running_by = NULL").Where("request_id = ?", "next-1").Exec(ctx)
		require.NoError(t, err)
		ok(t, dev, "chorus_claim_next_task", args, &again)
		require.Equal(t, first.UUID, again.UUID, "the retry finds the claim its first call made")
		var v TaskView
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": ids["B"]}, &v)
		require.Equal(t, "open", v.Status, "and claims nothing more")
		require.Equal(t, 1, activityCount(t, e.st, ids["A"], "assigned"))

		// A new requestId claims the next task; refusals do not bind a requestId.
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "next-2"}, &v)
		require.Equal(t, ids["B"], v.UUID)
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "next-3"}, &v)
		require.Equal(t, ids["C"], v.UUID)
		require.Contains(t, fails(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "next-4"}),
			"No task is available")
		more := quickTasks(t, admin, project, "D:low")
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "next-4"}, &v)
		require.Equal(t, more["D"], v.UUID, "a refused requestId runs again once work appears")
		e.requireAgreement()
	})
}
