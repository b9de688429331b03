package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
)

// A chorus_create_tasks batch whose run ends past its commit (an operator terminates it while
// its write's answer is on its way) is retried under the same requestId: the reuse policy lets
// the retry start a new run of the batch, which must find the batch written, create nothing
// twice, and answer with the tasks the first run wrote (docs/write-path.md, "One write
// protocol"). With task ids derived from the run, the retry created the whole batch again.
func TestBatchRetriedAfterItsRunEndedPastTheCommit(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := newFlowEnv(t, dialect)
			ctx := context.Background()
			admin := e.client(e.adminKey)
			project := createProject(t, admin, "Apollo")
			var agent string
			require.NoError(t, e.st.DB.NewSelect().Table("agents").Column("uuid").Where("name = ?", "Admin Agent").Scan(ctx, &agent))
			batch := workflows.TaskBatchID(workflows.DerivedUUID("create-tasks", agent, "batch", "0"))
			e.faults.OnceAfter("CreateTaskBatchAndStart", func() {
				require.NoError(t, e.tc.TerminateWorkflow(ctx, batch, "", "operator"))
			})
			args := map[string]any{"projectUuid": project, "requestId": "batch", "tasks": []map[string]any{
				{"title": "A", "draftUuid": "a", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
				{"title": "B", "dependsOnDraftUuids": []string{"a"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}
			require.Contains(t, fails(t, admin, "chorus_create_tasks", args), "internal error", "the run was terminated")
			requireEventually(t, func() bool { return e.faults.Injected("CreateTaskBatchAndStart") == 1 },
				"the write committed before the termination")

			var created CreatedTasks
			ok(t, admin, "chorus_create_tasks", args, &created)
			require.Len(t, created.Tasks, 2)
			var list TaskList
			ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
			require.Equal(t, 2, list.Total, "the retry created nothing twice")
			for _, tk := range created.Tasks {
				require.Equal(t, 1, activityCount(t, e.st, tk.UUID, "created"))
				ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": tk.UUID}, nil) // its workflow runs
			}
			e.requireAgreement()
		})
	}
}
