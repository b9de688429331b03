package mcp

import (
	"context"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store/storetest"
)

// chorus_get_unblocked_tasks reads each task's kept count of unresolved dependencies
// (store/unresolved.go), which every write keeps in its own transaction. These tests drive the
// writes that move it through the tools, with the acknowledgement of each write lost once (it
// commits, then reports failure, and the retry finds it applied), and check after each that the
// unblocked tasks are the rule's (docs/rules.md §5.3) and that chorus ops check, which compares
// every count with a recount, is clean.

// unblocked returns the uuids of the project's unblocked tasks, in order, and checks the total.
func unblocked(t *testing.T, s *mcpsdk.ClientSession, project string) []string {
	t.Helper()
	var list TaskList
	ok(t, s, "chorus_get_unblocked_tasks", map[string]any{"projectUuid": project}, &list)
	out := []string{}
	for _, r := range list.Tasks {
		out = append(out, r.UUID)
	}
	require.Equal(t, len(out), list.Total)
	return out
}

func TestUnblockedTasksFollowEveryWriteExactlyOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true})
			admin := e.client(e.adminKey)
			dev := e.client(e.agent("Dev", perm.DeveloperAgent))
			project := createProject(t, admin, "Apollo")
			lost := func(kind string) func() {
				before := e.faults.Injected(kind)
				e.faults.FailAfterCommit(kind, 1)
				return func() {
					t.Helper()
					require.Equal(t, before+1, e.faults.Injected(kind), "%s had its acknowledgement lost once", kind)
					e.requireAgreement()
				}
			}

			// A batch: B depends on A, C on A and B. Only A is unblocked.
			done := lost("CreateTaskBatchAndStart")
			var batch CreatedTasks
			ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "requestId": "batch", "tasks": []map[string]any{
				{"title": "A", "draftUuid": "a", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
				{"title": "B", "draftUuid": "b", "dependsOnDraftUuids": []string{"a"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
				{"title": "C", "dependsOnDraftUuids": []string{"a", "b"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &batch)
			require.Empty(t, batch.Warnings)
			done()
			a, b, c := batch.Tasks[0].UUID, batch.Tasks[1].UUID, batch.Tasks[2].UUID
			require.Equal(t, []string{a}, unblocked(t, dev, project))

			// A is worked and verified: B is unblocked; C still waits for B.
			ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": a}, nil)
			require.Equal(t, []string{a}, unblocked(t, dev, project), "an assigned task is unblocked")
			work(t, dev, a)
			require.Empty(t, unblocked(t, dev, project), "a task to verify is not, nor what waits for it")
			var v TaskView
			ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": a}, &v)
			markAll(t, admin, a, v, "passed")
			done = lost("ApplyTaskChange")
			ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": a, "requestId": "verify"}, nil)
			done()
			require.Equal(t, []string{b}, unblocked(t, dev, project))

			// A new task D, then C depends on D too: C waits for B and D.
			var d CreatedTasks
			ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
				{"title": "D", "priority": "low", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &d)
			done = lost("ApplyTaskChange")
			ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": c, "addDependsOn": []string{d.Tasks[0].UUID},
				"requestId": "add"}, &v)
			require.Empty(t, v.Warnings)
			done()
			require.Equal(t, []string{b, d.Tasks[0].UUID}, unblocked(t, dev, project))

			// B is deleted: its edge from C goes with it; C still waits for D.
			done = lost("ApplyTaskChange")
			ok(t, admin, "chorus_admin_delete_task", map[string]any{"taskUuid": b, "requestId": "delete"}, nil)
			done()
			require.Equal(t, []string{d.Tasks[0].UUID}, unblocked(t, dev, project))

			// D is closed: C is unblocked at last.
			done = lost("ApplyTaskChange")
			ok(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": d.Tasks[0].UUID, "requestId": "close"}, nil)
			done()
			require.Equal(t, []string{c}, unblocked(t, dev, project))

			// Each retry under its requestId gets the first outcome and changes nothing.
			ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": a, "requestId": "verify"}, nil)
			ok(t, admin, "chorus_admin_delete_task", map[string]any{"taskUuid": b, "requestId": "delete"}, nil)
			ok(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": d.Tasks[0].UUID, "requestId": "close"}, nil)
			require.Equal(t, []string{c}, unblocked(t, dev, project))
			e.requireAgreement()
		})
	}
}

// A count written behind Chorus's back is a finding of chorus ops check, and repair recounts it.
func TestOpsRepairRecountsADriftedCount(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		var batch CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "A", "draftUuid": "a", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "B", "dependsOnDraftUuids": []string{"a"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &batch)
		a, b := batch.Tasks[0].UUID, batch.Tasks[1].UUID
		require.Equal(t, []string{a}, unblocked(t, admin, project))

		_, err := e.st.DB.NewUpdate().Table("tasks").Set("unresolved_deps = 0").Where("uuid = ?", b).Exec(context.Background())
		require.NoError(t, err)
		require.Len(t, unblocked(t, admin, project), 2, "the read follows the kept count")
		f, did := e.repairOnly(t, ops.UnresolvedCount)
		require.Equal(t, "task/"+b, f.WorkflowID)
		require.True(t, strings.Contains(f.Detail, "is 0, but 1 of its dependencies"), f.Detail)
		require.Equal(t, "recounted the task's unresolved dependencies from its dependencies", did)
		require.Equal(t, []string{a}, unblocked(t, admin, project))
		e.requireAgreement()
		found, err := e.ops().Check(context.Background(), "task/"+b)
		require.NoError(t, err)
		require.Empty(t, found)
	})
}
