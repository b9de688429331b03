package mcp

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// crashingWorker is a worker whose ApplyApproval commits its transaction and then hangs,
// like a process that dies before it can report the result.
func crashingWorker(t *testing.T, e *env, committed chan<- struct{}) worker.Worker {
	acts := activities.New(e.st, wftest.Server(t).Client())
	w := worker.New(wftest.Server(t).Client(), e.queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.IdeaWorkflow, workflow.RegisterOptions{Name: workflows.IdeaWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.ProposalWorkflow, workflow.RegisterOptions{Name: workflows.ProposalWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.TaskWorkflow, workflow.RegisterOptions{Name: workflows.TaskWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.CreateTasksWorkflow, workflow.RegisterOptions{Name: workflows.CreateTasksWorkflowName})
	v := reflect.ValueOf(acts)
	for i := range v.NumMethod() {
		name := v.Type().Method(i).Name
		if name != "ApplyApproval" {
			w.RegisterActivityWithOptions(v.Method(i).Interface(), activity.RegisterOptions{Name: name})
		}
	}
	var once sync.Once
	w.RegisterActivityWithOptions(func(ctx context.Context, ap store.Approval) error {
		if err := acts.ApplyApproval(ctx, ap); err != nil {
			return err
		}
		once.Do(func() { close(committed) })
		<-ctx.Done() // the "crash": the result is never reported
		return ctx.Err()
	}, activity.RegisterOptions{Name: "ApplyApproval"})
	return w
}

func TestApprovalSurvivesAWorkerCrash(t *testing.T) {
	for _, dialect := range []string{"sqlite", "pg"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := newFlowEnvNoWorker(t, dialect)
			committed := make(chan struct{})
			crashing := crashingWorker(t, e, committed)
			require.NoError(t, crashing.Start())

			admin := e.client(e.adminKey)
			pm := e.pmWithIdeaAdmin("PM")
			project := createProject(t, admin, "Apollo")
			idea := elaboratedIdea(t, pm, admin, project, "Big idea")
			proposal, _ := fullProposal(t, pm, project, idea)
			for i := range 37 {
				ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": fmt.Sprintf("Task %02d", i),
					"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, nil)
			}
			ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)

			type result struct {
				pv  ProposalView
				err string
			}
			done := make(chan result, 1)
			go func() {
				res := call(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal})
				var r result
				if res.IsError {
					r.err = text(res)
				} else {
					r.pv = decode[ProposalView](t, res)
				}
				done <- r
			}()

			select {
			case <-committed:
			case <-time.After(30 * time.Second):
				t.Fatal("the approval never reached its transaction")
			}
			crashing.Stop() // the worker dies with the approval committed but unreported
			healthy := workflows.NewWorker(wftest.Server(t).Client(), e.queue, activities.New(e.st, wftest.Server(t).Client()), worker.Options{})
			require.NoError(t, healthy.Start())
			t.Cleanup(healthy.Stop)

			var r result
			select {
			case r = <-done:
			case <-time.After(90 * time.Second):
				t.Fatal("the approval did not finish after the worker restarted")
			}
			require.Empty(t, r.err)
			require.Len(t, r.pv.MaterializedTasks, 40)

			n, err := e.st.DB.NewSelect().Model((*store.Task)(nil)).Where("proposal_uuid = ?", proposal).Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 40, n, "exactly one set of tasks")
			n, err = e.st.DB.NewSelect().Model((*store.Document)(nil)).Where("proposal_uuid = ?", proposal).Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 2, n)
			n, err = e.st.DB.NewSelect().Model((*store.AcceptanceCriterion)(nil)).
				Where("task_uuid IN (SELECT uuid FROM tasks WHERE proposal_uuid = ?)", proposal).Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 3*2+37, n)
			require.Equal(t, 1, activityCount(t, e.st, proposal, "approved"))
			for _, m := range r.pv.MaterializedTasks {
				desc, err := wftest.Server(t).Client().DescribeWorkflow(ctx, vocab.TaskID(m.TaskUUID), "")
				require.NoError(t, err)
				require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.RawResponse.WorkflowExecutionInfo.Status)
			}
		})
	}
}
