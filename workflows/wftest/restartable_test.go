package wftest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// tallyWorkflow counts "add" updates until a "done" update, then returns the count.
func tallyWorkflow(ctx workflow.Context) (int, error) {
	total, done := 0, false
	if err := workflow.SetUpdateHandler(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		total += n
		return total, nil
	}); err != nil {
		return 0, err
	}
	if err := workflow.SetUpdateHandler(ctx, "done", func(ctx workflow.Context) error {
		done = true
		return nil
	}); err != nil {
		return 0, err
	}
	if err := workflow.Await(ctx, func() bool { return done && workflow.AllHandlersFinished(ctx) }); err != nil {
		return 0, err
	}
	return total, nil
}

func update(ctx context.Context, t *testing.T, c client.Client, id, name string, args ...any) int {
	t.Helper()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name, Args: args,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var n int
	if name == "add" {
		require.NoError(t, h.Get(ctx, &n))
	} else {
		require.NoError(t, h.Get(ctx, nil))
	}
	return n
}

func TestRestartable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := wftest.Restartable(t)
	c := srv.Client()
	addr := srv.Address()

	requireSearchAttributes(ctx, t, c)

	queue := "restart-" + uuid.NewString()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(tallyWorkflow)
	require.NoError(t, w.Start())
	defer w.Stop()

	id := "tally-" + uuid.NewString()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.EntityKey.ValueSet("test"))}, tallyWorkflow)
	require.NoError(t, err)
	require.Equal(t, 2, update(ctx, t, c, id, "add", 2))

	start := time.Now()
	require.NoError(t, srv.Restart(ctx))
	t.Logf("restart took %s", time.Since(start))
	require.Equal(t, addr, srv.Address())
	requireSearchAttributes(ctx, t, c)

	desc, err := c.DescribeWorkflow(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	start = time.Now()
	require.Equal(t, 5, update(ctx, t, c, id, "add", 3), "the state survived the restart")
	t.Logf("first update after the restart took %s", time.Since(start))

	// An update sent while the server is down waits for it (the SDK retries while unavailable)
	// and completes once it is back.
	require.NoError(t, srv.Stop())
	got := make(chan int, 1)
	go func() {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "add", Args: []any{4},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			t.Errorf("update while down: %v", err)
			got <- -1
			return
		}
		var n int
		if err := h.Get(ctx, &n); err != nil {
			t.Errorf("update while down: %v", err)
		}
		got <- n
	}()
	time.Sleep(time.Second) // the length of the outage the update meets, not a wait for a condition
	start = time.Now()
	require.NoError(t, srv.Start(ctx))
	t.Logf("start took %s", time.Since(start))
	select {
	case n := <-got:
		require.Equal(t, 9, n)
		t.Logf("the update completed %s after the start", time.Since(start))
	case <-ctx.Done():
		t.Fatal("the update sent while the server was down never completed")
	}

	update(ctx, t, c, id, "done")
	var total int
	require.NoError(t, run.Get(ctx, &total))
	require.Equal(t, 9, total)
}

// requireSearchAttributes checks that the server has Chorus's search attributes, as Keywords.
func requireSearchAttributes(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: workflows.Namespace})
	require.NoError(t, err)
	for _, k := range workflows.SearchAttributeKeys {
		require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, have.GetCustomAttributes()[k.GetName()], k.GetName())
	}
}
