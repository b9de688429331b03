package workflows

import (
	"slices"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
)

// NewWorker returns a worker polling taskQueue ("" means TaskQueue) with every Chorus workflow
// and activity registered. Start it with Start (or Run) and stop it with Stop. Every activity's
// work ends before its timeout does (activityDeadline), after opts' interceptors.
func NewWorker(c client.Client, taskQueue string, a *activities.Activities, opts worker.Options) worker.Worker {
	if taskQueue == "" {
		taskQueue = TaskQueue
	}
	opts.Interceptors = append(slices.Clone(opts.Interceptors), &activityDeadline{})
	w := worker.New(c, taskQueue, opts)
	Register(w, a)
	return w
}

// Register registers every Chorus workflow and the activities on r (a worker or a replayer).
func Register(r worker.Registry, a *activities.Activities) {
	r.RegisterWorkflowWithOptions(IdeaWorkflow, workflow.RegisterOptions{Name: IdeaWorkflowName})
	r.RegisterWorkflowWithOptions(ProposalWorkflow, workflow.RegisterOptions{Name: ProposalWorkflowName})
	r.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: TaskWorkflowName})
	r.RegisterWorkflowWithOptions(CreateTasksWorkflow, workflow.RegisterOptions{Name: CreateTasksWorkflowName})
	r.RegisterWorkflowWithOptions(PruneWorkflow, workflow.RegisterOptions{Name: PruneWorkflowName})
	r.RegisterWorkflowWithOptions(WebhookDeliveryWorkflow, workflow.RegisterOptions{Name: WebhookDeliveryWorkflowName})
	r.RegisterActivity(a)
}

// NewReplayer is a workflow replayer with every Chorus workflow of this binary registered, as a
// worker registers them: `chorus ops replay` and the recorded-history test replay against it.
// It reads payloads in the clear; NewReplayerWith reads encrypted ones too.
func NewReplayer() (worker.WorkflowReplayer, error) { return NewReplayerWith(NewConverters(nil)) }

// NewReplayerWith is NewReplayer with the converters of the clients whose histories it replays
// (NewConverters: with payload keys, it opens encrypted payloads).
func NewReplayerWith(conv Converters) (worker.WorkflowReplayer, error) {
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: conv.Data,
		FailureConverter: conv.Failure})
	if err != nil {
		return nil, err
	}
	r.RegisterWorkflowWithOptions(IdeaWorkflow, workflow.RegisterOptions{Name: IdeaWorkflowName})
	r.RegisterWorkflowWithOptions(ProposalWorkflow, workflow.RegisterOptions{Name: ProposalWorkflowName})
	r.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: TaskWorkflowName})
	r.RegisterWorkflowWithOptions(CreateTasksWorkflow, workflow.RegisterOptions{Name: CreateTasksWorkflowName})
	r.RegisterWorkflowWithOptions(PruneWorkflow, workflow.RegisterOptions{Name: PruneWorkflowName})
	r.RegisterWorkflowWithOptions(WebhookDeliveryWorkflow, workflow.RegisterOptions{Name: WebhookDeliveryWorkflowName})
	return r, nil
}
