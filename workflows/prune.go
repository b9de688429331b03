package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

// Pruning runs on a Temporal schedule, one per deployment (task queue), which each worker makes
// sure exists when it starts: every interval it starts PruneWorkflow on the deployment's task
// queue, which runs the Prune activity (docs/write-path.md, "Bounded growth"). Operators see the
// schedule and its runs in the Temporal UI (`temporal schedule describe -s chorus-prune/<queue>`),
// and the pruned rows in the workers' metrics.

// PruneWorkflowName is the registered type of PruneWorkflow.
const PruneWorkflowName = "PruneWorkflow"

// PruneInterval is how often the schedule prunes unless configured otherwise
// (CHORUS_PRUNE_INTERVAL).
const PruneInterval = 5 * time.Minute

// PruneScheduleID is the id of the pruning schedule of the deployment on taskQueue; its runs'
// workflow ids start with it.
func PruneScheduleID(taskQueue string) string { return "chorus-prune/" + taskQueue }

// PruneWorkflow runs one pruning: the Prune activity, up to four minutes, tried three times (the
// next run of the schedule takes up whatever this one left).
func PruneWorkflow(ctx workflow.Context) (store.Pruned, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 4 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3}})
	var a *activities.Activities
	var out store.Pruned
	err := workflow.ExecuteActivity(ctx, a.Prune).Get(ctx, &out)
	return out, err
}

// EnsurePruneSchedule makes sure the deployment on taskQueue has its pruning schedule, running
// every interval (a run still going when the next is due is skipped), and updates the interval
// of one that exists with another.
func EnsurePruneSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("the pruning interval must be positive, not %s", every)
	}
	id := PruneScheduleID(taskQueue)
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: id, Spec: spec,
		Action: &client.ScheduleWorkflowAction{ID: id, Workflow: PruneWorkflowName, TaskQueue: taskQueue,
			WorkflowExecutionTimeout: 10 * time.Minute, StaticSummary: "Chorus: prune the requestId ledger and the change journal"},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Note:    "Deletes what is past its window from the requestId ledger, the change journal and the claim attempts (docs/write-path.md, \"Bounded growth\")"})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return c.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			if s.Spec != nil && len(s.Spec.Intervals) == 1 && s.Spec.Intervals[0].Every == every {
				return nil, temporal.ErrSkipScheduleUpdate // as it should be: no update
			}
			s.Spec = &spec
			return &client.ScheduleUpdate{Schedule: &s}, nil
		}})
}
