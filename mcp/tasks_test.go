package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// markAll marks every criterion of a task with status (admin) using s.
func markAll(t *testing.T, s *mcpsdk.ClientSession, task string, v TaskView, status string) CriteriaOut {
	t.Helper()
	var items []map[string]any
	for _, c := range v.AcceptanceCriteriaItems {
		items = append(items, map[string]any{"uuid": c.UUID, "status": status, "evidence": "checked"})
	}
	var out CriteriaOut
	ok(t, s, "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": task, "criteria": items}, &out)
	return out
}

// work takes a claimed task through in_progress, self-check and submission.
func work(t *testing.T, dev *mcpsdk.ClientSession, task string) {
	t.Helper()
	var v TaskView
	ok(t, dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, &v)
	require.Equal(t, "in_progress", v.Status)
	var items []map[string]any
	for _, c := range v.AcceptanceCriteriaItems {
		items = append(items, map[string]any{"uuid": c.UUID, "devStatus": "passed", "devEvidence": "tests pass"})
	}
	var cs CriteriaOut
	ok(t, dev, "chorus_report_criteria_self_check", map[string]any{"taskUuid": task, "criteria": items}, &cs)
	require.Equal(t, "not_started", cs.Status, "self-checks never decide acceptance")
	res := call(t, dev, "chorus_report_work", map[string]any{"taskUuid": task, "report": "implemented and tested"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "Work report recorded: implemented and tested", text(res))
	var st StatusOut
	ok(t, dev, "chorus_submit_for_verify", map[string]any{"taskUuid": task, "summary": "ready"}, &st)
	require.Equal(t, "to_verify", st.Status)
}

func TestIdeaToDone(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev1 := e.client(e.agent("Dev One", perm.DeveloperAgent))
		dev2 := e.client(e.agent("Dev Two", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, dev1, project, "Single sign-on")
		proposal, drafts := fullProposal(t, pm, project, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		task := map[string]string{}
		for i, m := range pv.MaterializedTasks {
			require.Equal(t, drafts[i], m.DraftUUID)
			task[m.Title] = m.TaskUUID
		}
		schema, api, ui := task["Schema"], task["API"], task["UI"]

		// The PM is active on the idea: check-in and the tracker show it.
		var ci CheckinOut
		ok(t, pm, "chorus_checkin", nil, &ci)
		require.Equal(t, map[string]ActiveProject{project: {Name: "Apollo", ActiveIdeaCount: 1}}, ci.ActiveProjects)
		var tracker MyAssignments
		ok(t, pm, "chorus_get_my_assignments", nil, &tracker)
		require.Len(t, tracker.IdeaTracker[project].Ideas, 1)
		require.Equal(t, 3, tracker.IdeaTracker[project].Ideas[0].Tasks)

		// Only Schema can start; the others wait for their dependency.
		var list TaskList
		ok(t, dev1, "chorus_get_unblocked_tasks", map[string]any{"projectUuid": project}, &list)
		require.Equal(t, 1, list.Total)
		require.Equal(t, schema, list.Tasks[0].UUID)

		var v TaskView
		ok(t, dev2, "chorus_claim_task", map[string]any{"taskUuid": api}, &v)
		require.Equal(t, "assigned", v.Status)
		require.Equal(t, "Dev Two", v.Assignee.Name)
		require.Len(t, v.Hints, 2, "blocked by Schema, awaited by UI")
		require.Contains(t, v.Hints[0], `"Schema" (open)`)
		msg := fails(t, dev2, "chorus_update_task", map[string]any{"taskUuid": api, "status": "in_progress"})
		require.True(t, strings.HasPrefix(msg, "Cannot move to in_progress: 1 dependency not resolved.\n\nBlockers:\n1. \"Schema\" (status: open, assignee: none"), msg)
		require.Contains(t, msg, "Tip: Use chorus_get_unblocked_tasks")
		ok(t, dev1, "chorus_claim_task", map[string]any{"taskUuid": schema}, &v)
		ok(t, dev1, "chorus_claim_task", map[string]any{"taskUuid": ui}, &v)

		// Schema: worked, refused verification until its required criterion passes, verified.
		work(t, dev1, schema)
		msg = fails(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": schema})
		require.Equal(t, "Cannot verify task: Not all required acceptance criteria are passed. Required: 1, Passed: 0, Failed: 0, Pending: 1. "+
			"Mark them with chorus_mark_acceptance_criteria, or reopen the task.", msg)
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": schema}, &v)
		cs := markAll(t, admin, schema, v, "passed")
		require.Equal(t, "passed", cs.Status)
		var st StatusOut
		ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": schema}, &st)
		require.Equal(t, "done", st.Status)

		// API can now start; it is reopened once and verified again.
		work(t, dev2, api)
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": api}, &v)
		markAll(t, admin, api, v, "failed")
		ok(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": api}, &st)
		require.Equal(t, "in_progress", st.Status)
		ok(t, dev2, "chorus_get_task", map[string]any{"taskUuid": api}, &v)
		require.Equal(t, "not_started", v.AcceptanceStatus, "reopening resets every mark")
		for _, c := range v.AcceptanceCriteriaItems {
			require.Equal(t, "pending", c.Status)
			require.Equal(t, "pending", c.DevStatus)
		}
		ok(t, dev2, "chorus_submit_for_verify", map[string]any{"taskUuid": api}, nil)
		markAll(t, admin, api, v, "passed")
		ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": api}, nil)

		// UI last.
		work(t, dev1, ui)
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": ui}, &v)
		markAll(t, admin, ui, v, "passed")
		var iv IdeaView
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Equal(t, "human_conduct_required", iv.DerivedStatus, "a task waits for verification")
		ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": ui}, nil)

		// The PM reports completion; the idea is done and leaves the PM's tracker.
		var rep CreatedReport
		ok(t, pm, "chorus_create_report", map[string]any{"proposalUuid": proposal, "title": "SSO shipped", "content": "All three tasks verified."}, &rep)
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Equal(t, "done", iv.DerivedStatus)
		var mine MyAssignments
		ok(t, pm, "chorus_get_my_assignments", nil, &mine)
		require.Empty(t, mine.IdeaTracker)
		mine = MyAssignments{}
		var after CheckinOut // a fresh value: decoding merges into an existing map
		ok(t, pm, "chorus_checkin", nil, &after)
		require.Empty(t, after.ActiveProjects, "a done idea is no longer active")
		ok(t, dev1, "chorus_get_my_assignments", nil, &mine)
		require.Empty(t, mine.TaskTracker, "done tasks leave the tracker")

		// The audit trail has each step.
		for action, n := range map[string]int{"assigned": 1, "status_changed": 1, "submitted": 2, "verified": 1, "reopened": 1} {
			require.Equal(t, n, activityCount(t, e.st, api, action), action)
		}
		// The assignee was told about verification and reopening.
		var notes []store.Notification
		require.NoError(t, e.st.DB.NewSelect().Model(&notes).Where("entity_uuid = ?", api).Where("recipient_type = 'agent'").Scan(ctx))
		actions := map[string]bool{}
		for _, n := range notes {
			actions[n.Action] = true
		}
		require.True(t, actions["task_verified"] && actions["task_reopened"], "%v", actions)
		e.requireAgreement()
	})
}

func TestQuickTask(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")

		// All or nothing: one task without criteria refuses the whole batch.
		msg := fails(t, dev, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Good", "acceptanceCriteriaItems": []map[string]any{{"description": "works"}}},
			{"title": "Bad", "acceptanceCriteriaItems": []map[string]any{{"description": " "}}},
		}})
		require.Equal(t, `Task "Bad": Acceptance criteria are required: provide at least one acceptanceCriteriaItems entry with a non-blank description`, msg)
		var list TaskList
		ok(t, dev, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
		require.Equal(t, 0, list.Total)

		var created CreatedTasks
		ok(t, dev, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Fix login", "priority": "low", "draftUuid": "a", "acceptanceCriteriaItems": []map[string]any{{"description": "login works"}}},
			{"title": "Fix logout", "priority": "high", "dependsOnDraftUuids": []string{"a", "zzz"},
				"acceptanceCriteriaItems": []map[string]any{{"description": "logout works"}}},
		}}, &created)
		require.Len(t, created.Tasks, 2)
		require.Equal(t, []string{`Task "Fix logout": draftUuid "zzz" not found in this batch`}, created.Warnings)
		ok(t, dev, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
		require.Equal(t, "Fix logout", list.Tasks[0].Title, "high priority first")
		require.Equal(t, 1, activityCount(t, e.st, created.Tasks[0].UUID, "created"))

		task := created.Tasks[0].UUID
		ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		work(t, dev, task)
		var v TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		markAll(t, admin, task, v, "passed")
		var st StatusOut
		ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, &st)
		require.Equal(t, "done", st.Status)
		ok(t, dev, "chorus_get_unblocked_tasks", map[string]any{"projectUuid": project}, &list)
		require.Equal(t, 1, list.Total, "Fix logout is unblocked once Fix login is done")

		// A retried create with the same requestId creates nothing more.
		args := map[string]any{"projectUuid": project, "requestId": "batch-1", "tasks": []map[string]any{
			{"title": "Once", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}
		var a, b CreatedTasks
		ok(t, dev, "chorus_create_tasks", args, &a)
		ok(t, dev, "chorus_create_tasks", args, &b)
		require.Equal(t, a.Tasks, b.Tasks)
		ok(t, dev, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
		require.Equal(t, 3, list.Total)
		e.requireAgreement()
	})
}

func TestTwentyAgentsClaimOneTask(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "Hot task", "acceptanceCriteriaItems": []map[string]any{{"description": "done"}}}}}, &created)
	task := created.Tasks[0].UUID

	const n = 20
	sessions := make([]*mcpsdk.ClientSession, n)
	for i := range sessions {
		sessions[i] = e.client(e.agent(fmt.Sprintf("racer-%02d", i), perm.DeveloperAgent))
	}
	results := make([]*mcpsdk.CallToolResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = call(t, sessions[i], "chorus_claim_task", map[string]any{"taskUuid": task})
		}()
	}
	close(start)
	wg.Wait()

	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
	winners := 0
	for _, r := range results {
		if !r.IsError {
			winners++
			continue
		}
		require.Equal(t, "Task is already assigned to "+v.Assignee.Name+"; ask an admin to reassign it", text(r))
	}
	require.Equal(t, 1, winners)
	require.Equal(t, 1, activityCount(t, e.st, task, "assigned"))
	e.requireAgreement()
}

func TestIllegalTaskTransitionsChangeNothing(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	other := e.client(e.agent("Other", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	var created CreatedTasks
	ok(t, dev, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "done"}}}}}, &created)
	task := created.Tasks[0].UUID
	snapshot := func() (string, int64) {
		var tk store.Task
		require.NoError(t, e.st.DB.NewSelect().Model(&tk).Where("uuid = ?", task).Scan(ctx))
		n, err := e.st.DB.NewSelect().Model((*store.Activity)(nil)).Where("target_uuid = ?", task).Count(ctx)
		require.NoError(t, err)
		return string(tk.Status), int64(n)
	}

	refusals := []struct {
		who  *mcpsdk.ClientSession
		tool string
		args map[string]any
		want string
	}{
		{dev, "chorus_release_task", nil, "Only the assignee can release a task (assignee: nobody)"},
		{dev, "chorus_submit_for_verify", nil, "Only the assignee can submit for verification"},
		{dev, "chorus_update_task", map[string]any{"status": "in_progress"}, "Only the assignee can update task status"},
		{admin, "chorus_admin_verify_task", nil, "Can only verify Tasks in to_verify status, current status: open"},
		{admin, "chorus_admin_reopen_task", nil, "Can only reopen Tasks in to_verify status, current status: open"},
		{dev, "chorus_report_work", map[string]any{"report": "x"}, "Only the assignee can report work"},
	}
	check := func() {
		for _, r := range refusals {
			status, acts := snapshot()
			args := map[string]any{"taskUuid": task}
			for k, v := range r.args {
				args[k] = v
			}
			require.Contains(t, fails(t, r.who, r.tool, args), r.want, r.tool)
			s2, a2 := snapshot()
			require.Equal(t, status, s2, r.tool)
			require.Equal(t, acts, a2, "%s wrote an activity", r.tool)
		}
	}
	check()

	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil) // re-claim: no-op
	require.Equal(t, 1, activityCount(t, e.st, task, "assigned"))
	refusals = []struct {
		who  *mcpsdk.ClientSession
		tool string
		args map[string]any
		want string
	}{
		{other, "chorus_claim_task", nil, "Task is already assigned to Dev; ask an admin to reassign it"},
		{other, "chorus_release_task", nil, "Only the assignee can release a task (assignee: Dev)"},
		{dev, "chorus_submit_for_verify", nil, "Can only submit for verification from in_progress status: this task is assigned; move it to in_progress with chorus_update_task first"},
		{dev, "chorus_update_task", map[string]any{"status": "to_verify"}, "Invalid status transition: assigned -> to_verify (from assigned the task may go to: open, in_progress, closed)"},
		{dev, "chorus_report_work", map[string]any{"report": "x", "status": "to_verify"}, "Cannot report work with status to_verify: the task is assigned"},
		{dev, "chorus_report_criteria_self_check", map[string]any{"criteria": []map[string]any{{"uuid": store.NewUUID(), "devStatus": "passed"}}}, "does not belong to task"},
	}
	check()

	ok(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": task}, nil)
	require.Equal(t, "Task is already in closed status", fails(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": task}))
	require.Contains(t, fails(t, dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}), "Invalid status transition: closed -> in_progress (from closed the task may go to: none)")

	res := call(t, admin, "chorus_admin_delete_task", map[string]any{"taskUuid": task})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "Task not found", fails(t, dev, "chorus_get_task", map[string]any{"taskUuid": task}))
	require.Equal(t, "Task not found", fails(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}))
	e.requireAgreement()
}

func TestTaskDependencyEdits(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	other := createProject(t, admin, "Zeus")
	mk := func(p, title string) string {
		var c CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": p, "tasks": []map[string]any{
			{"title": title, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &c)
		return c.Tasks[0].UUID
	}
	a, b, foreign := mk(project, "A"), mk(project, "B"), mk(other, "F")

	var v TaskView
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": a, "addDependsOn": []string{b}}, &v)
	require.Len(t, v.DependsOn, 1)
	require.Empty(t, v.Warnings)
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": b, "addDependsOn": []string{a, b, foreign}, "title": "B2"}, &v)
	require.Equal(t, "B2", v.Title)
	require.Equal(t, []string{
		`addDependsOn "` + a + `": Adding this dependency would create a cycle`,
		`addDependsOn "` + b + `": A task cannot depend on itself`,
		`addDependsOn "` + foreign + `": Tasks must belong to the same project`,
	}, v.Warnings)
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": a, "addDependsOn": []string{b}}, &v)
	require.Equal(t, []string{`addDependsOn "` + b + `": Dependency already exists`}, v.Warnings)
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": a, "removeDependsOn": []string{b}}, &v)
	require.Empty(t, v.DependsOn)

	// Replacing criteria needs at least one; it discards every mark.
	require.Contains(t, fails(t, admin, "chorus_update_task", map[string]any{"taskUuid": a,
		"acceptanceCriteriaItems": []map[string]any{{"description": ""}}}), "Acceptance criteria are required")
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": a,
		"acceptanceCriteriaItems": []map[string]any{{"description": "one"}, {"description": "two", "required": false}}}, &v)
	require.Len(t, v.AcceptanceCriteriaItems, 2)
	require.Equal(t, 1, v.AcceptanceSummary.Required)

	// Reopen is refused while a dependency is open, unless forced.
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": a, "addDependsOn": []string{b}}, &v)
	ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": a}, nil)
	res := call(t, admin, "chorus_report_work", map[string]any{"taskUuid": a, "report": "started", "status": "in_progress"})
	require.False(t, res.IsError, text(res)) // docs/rules.md §4.9: report_work does not check dependencies
	ok(t, admin, "chorus_submit_for_verify", map[string]any{"taskUuid": a}, nil)
	msg := fails(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": a})
	var blocked struct {
		Error    string `json:"error"`
		Message  string `json:"message"`
		Blockers []struct {
			UUID   string `json:"uuid"`
			Title  string `json:"title"`
			Status string `json:"status"`
		} `json:"blockers"`
	}
	require.NoError(t, json.Unmarshal([]byte(msg), &blocked), msg)
	require.Equal(t, "blocked_by_dependencies", blocked.Error)
	require.Equal(t, "Task is blocked by 1 unresolved dependency(ies). Use force=true to bypass.", blocked.Message)
	require.Equal(t, b, blocked.Blockers[0].UUID)
	var st StatusOut
	ok(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": a, "force": true}, &st)
	require.Equal(t, "in_progress", st.Status)
	require.Equal(t, 1, activityCount(t, e.st, a, "force_status_change"))
	require.Equal(t, 1, activityCount(t, e.st, a, "reopened"))
	e.requireAgreement()
}

// A chorus_create_tasks batch workflow carries its project: operators find a project's batches
// with ChorusEntity = "task_batch" AND ChorusProjectUuid = "<project>".
func TestTaskBatchCarriesItsProject(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	createTask(t, admin, project)
	query := fmt.Sprintf(`ChorusEntity = %q AND ChorusProjectUuid = %q`, workflows.TaskBatchEntity, project)
	requireEventually(t, func() bool {
		res, err := e.tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		require.NoError(t, err)
		return len(res.Executions) == 1 && strings.HasPrefix(res.Executions[0].Execution.WorkflowId, "task-batch/")
	}, "the batch is found by its project")
}
