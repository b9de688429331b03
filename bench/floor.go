package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The floors: what the same Temporal server does for a workflow with nothing of Chorus in it,
// measured in the same run. The bench registers this workflow and its no-op activity on a task
// queue of its own, so Chorus's worker never sees them.
const (
	floorTaskQueue    = "chorus-bench-floor"
	floorWorkflowName = "ChorusBenchFloor"
	floorActivityName = "ChorusBenchNoop"
	floorUpdateLocal  = "local"   // handler runs one no-op local activity
	floorUpdateRemote = "regular" // handler runs one no-op regular activity
	floorSignalStop   = "stop"
)

// Names of the floors, as the tables cite them.
const (
	floorLocal    = "update+local activity"
	floorRegular  = "update+activity"
	floorStart    = "update-with-start"
	floorLocalN   = "update+local activity, concurrent"
	floorRegularN = "update+activity, concurrent"
	floorStartN   = "update-with-start, concurrent"
)

func benchNoop(context.Context) error { return nil }

// floorWorkflow answers both updates until it is signalled to stop; once (used by
// update-with-start) ends it after its first update.
func floorWorkflow(ctx workflow.Context, once bool) error {
	handled := 0
	local := func(ctx workflow.Context) error {
		defer func() { handled++ }()
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
		return workflow.ExecuteLocalActivity(ctx, benchNoop).Get(ctx, nil)
	}
	regular := func(ctx workflow.Context) error {
		defer func() { handled++ }()
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
		return workflow.ExecuteActivity(ctx, floorActivityName).Get(ctx, nil)
	}
	if err := workflow.SetUpdateHandler(ctx, floorUpdateLocal, local); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, floorUpdateRemote, regular); err != nil {
		return err
	}
	stop := false
	if !once {
		workflow.Go(ctx, func(ctx workflow.Context) {
			workflow.GetSignalChannel(ctx, floorSignalStop).Receive(ctx, nil)
			stop = true
		})
	}
	return workflow.Await(ctx, func() bool {
		return (stop || (once && handled > 0)) && workflow.AllHandlersFinished(ctx)
	})
}

// floorBench runs the floor measurements against one Temporal client.
type floorBench struct {
	tc      client.Client
	started []string // long-lived workflow ids, stopped by close
}

func startFloorWorker(tc client.Client) (worker.Worker, error) {
	w := worker.New(tc, floorTaskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(floorWorkflow, workflow.RegisterOptions{Name: floorWorkflowName})
	w.RegisterActivityWithOptions(benchNoop, activity.RegisterOptions{Name: floorActivityName})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the floor worker: %w", err)
	}
	return w, nil
}

func (f *floorBench) startFlow(ctx context.Context) (string, error) {
	id := "chorus-bench-floor/" + uuid.NewString()
	_, err := f.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: floorTaskQueue}, floorWorkflowName, false)
	if err != nil {
		return "", fmt.Errorf("start a floor workflow: %w", err)
	}
	f.started = append(f.started, id)
	return id, nil
}

func (f *floorBench) update(ctx context.Context, id, name string) error {
	h, err := f.tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

func (f *floorBench) updateWithStart(ctx context.Context) error {
	op := f.tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{ID: "chorus-bench-floor-start/" + uuid.NewString(),
		TaskQueue: floorTaskQueue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING},
		floorWorkflowName, true)
	h, err := f.tc.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{UpdateName: floorUpdateRemote, WaitForStage: client.WorkflowUpdateStageCompleted}})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// close signals every long-lived floor workflow to end and waits (a minute at most) until
// they have, so that their last workflow tasks run before the floor worker stops: left on the
// stopped worker's sticky queue, each would time out and be counted against a later phase.
func (f *floorBench) close(ctx context.Context) {
	for _, id := range f.started {
		_ = f.tc.SignalWorkflow(ctx, id, "", floorSignalStop, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, id := range f.started {
		_ = f.tc.GetWorkflow(ctx, id, "").Get(ctx, nil)
	}
}

// sequential sends n updates named name, one after another, to one fresh workflow.
func (f *floorBench) sequential(ctx context.Context, name string, n int) (*recorder, error) {
	id, err := f.startFlow(ctx)
	if err != nil {
		return nil, err
	}
	_ = f.update(ctx, id, name) // warm up: the first workflow task is not what we measure
	r := &recorder{}
	for range n {
		_ = r.time(func() error { return f.update(ctx, id, name) })
	}
	return r, nil
}

// concurrent has clients goroutines each send per updates to a workflow of its own (as agents
// each work their own task), and returns the recorder and the wall time.
func (f *floorBench) concurrent(ctx context.Context, name string, clients, per int) (*recorder, time.Duration, error) {
	ids := make([]string, clients)
	for i := range ids {
		id, err := f.startFlow(ctx)
		if err != nil {
			return nil, 0, err
		}
		ids[i] = id
		_ = f.update(ctx, id, name)
	}
	r := &recorder{}
	return r, parallel(clients, func(i int) {
		for range per {
			_ = r.time(func() error { return f.update(ctx, ids[i], name) })
		}
	}), nil
}

// starts has clients goroutines each run per update-with-starts of new workflows.
func (f *floorBench) starts(ctx context.Context, clients, per int) (*recorder, time.Duration) {
	_ = f.updateWithStart(ctx)
	r := &recorder{}
	return r, parallel(clients, func(int) {
		for range per {
			_ = r.time(func() error { return f.updateWithStart(ctx) })
		}
	})
}

// parallel runs f(0..n-1) at once and returns the wall time until all return.
func parallel(n int, f func(i int)) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
	return time.Since(start)
}
