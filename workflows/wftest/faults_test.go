package wftest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/workflows/wftest"
)

// ledger stands for the database: Commit "commits" by counting, once per execution.
type ledger struct {
	mu      sync.Mutex
	commits map[string]int
}

// Commit records one more commit for key and returns how many there are.
func (l *ledger) Commit(_ context.Context, key string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commits[key]++
	return l.commits[key], nil
}

func (l *ledger) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.commits[key]
}

// commitWorkflow runs Commit once, with fast retries and a short StartToCloseTimeout so a
// dropped result is retried within seconds.
func commitWorkflow(ctx workflow.Context, key string) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 50 * time.Millisecond, MaximumAttempts: 5},
	})
	var l *ledger
	var n int
	err := workflow.ExecuteActivity(ctx, l.Commit, key).Get(ctx, &n)
	return n, err
}

// faultWorker starts a worker on its own task queue with the ledger registered as a struct,
// as workflows.Register registers Chorus's activities.
func faultWorker(t *testing.T, c client.Client, queue string, l *ledger, f *wftest.ActivityFaults) worker.Worker {
	t.Helper()
	opts := worker.Options{}
	if f != nil {
		opts.Interceptors = []interceptor.WorkerInterceptor{f}
	}
	w := worker.New(c, queue, opts)
	w.RegisterWorkflow(commitWorkflow)
	w.RegisterActivity(l)
	require.NoError(t, w.Start())
	return w
}

// secondAttempt returns the failure of the activity's first attempt, as recorded on its final
// attempt, which must be its second.
func secondAttempt(t *testing.T, c client.Client, workflowID string) *failurepb.Failure {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			require.EqualValues(t, 2, a.GetAttempt())
			require.NotNil(t, a.GetLastFailure())
			return a.GetLastFailure()
		}
	}
	t.Fatal("no ActivityTaskStarted event")
	return nil
}

func TestActivityName(t *testing.T) {
	var l *ledger
	require.Equal(t, "Commit", wftest.ActivityName(l.Commit))
	require.Equal(t, "Commit", wftest.ActivityName((*ledger).Commit))
	require.Equal(t, "commitWorkflow", wftest.ActivityName(commitWorkflow))
}

func TestFailAfterCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := wftest.Server(t).Client()
	queue := "faults-" + uuid.NewString()
	l := &ledger{commits: map[string]int{}}
	f := wftest.NewActivityFaults()
	w := faultWorker(t, c, queue, l, f)
	defer w.Stop()

	name := wftest.ActivityName(l.Commit)
	f.FailAfterCommit(name, 1)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fail-after-commit-" + uuid.NewString(), TaskQueue: queue},
		commitWorkflow, "k")
	require.NoError(t, err)
	var n int
	require.NoError(t, run.Get(ctx, &n))

	require.Equal(t, 2, n, "the workflow sees the second execution's result")
	require.Equal(t, 2, l.count("k"), "both executions committed")
	require.Equal(t, 2, f.Runs(name))
	require.Equal(t, 1, f.Injected(name))
	first := secondAttempt(t, c, run.GetID())
	require.Equal(t, wftest.InjectedFailureType, first.GetApplicationFailureInfo().GetType(), "first attempt: %v", first)

	// Disarmed now: the next run commits once.
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fail-after-commit-" + uuid.NewString(), TaskQueue: queue},
		commitWorkflow, "j")
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, &n))
	require.Equal(t, 1, n)
	require.Equal(t, 3, f.Runs(name))
}

func TestOnceAfter(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := wftest.Server(t).Client()
	queue := "faults-" + uuid.NewString()
	l := &ledger{commits: map[string]int{}}
	f := wftest.NewActivityFaults()
	crashing := faultWorker(t, c, queue, l, f)

	name := wftest.ActivityName(l.Commit)
	var hookRuns, commitsSeenByHook int // written by the hook before Injected counts it
	f.OnceAfter(name, func() {
		hookRuns++
		commitsSeenByHook = l.count("k")
		crashing.Stop() // the "kill": this worker polls no more
	})
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "once-after-" + uuid.NewString(), TaskQueue: queue},
		commitWorkflow, "k")
	require.NoError(t, err)

	require.NoError(t, pollUntil(ctx, func() bool { return f.Injected(name) == 1 }))
	healthy := faultWorker(t, c, queue, l, nil)
	defer healthy.Stop()
	var n int
	require.NoError(t, run.Get(ctx, &n))

	require.Equal(t, 1, hookRuns)
	require.Equal(t, 1, commitsSeenByHook, "the hook runs after the commit")
	require.Equal(t, 1, f.Runs(name), "the crashed worker ran it once")
	require.Equal(t, 2, n, "retried on the healthy worker, which committed again")
	require.Equal(t, 2, l.count("k"))
	first := secondAttempt(t, c, run.GetID())
	require.NotNil(t, first.GetTimeoutFailureInfo(), "the first attempt's result was never reported, so it timed out: %v", first)
}

// pollUntil polls cond until it holds or ctx ends.
func pollUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // poll interval
		}
	}
	return nil
}
