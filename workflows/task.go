package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/store"
)

// TaskWorkflowName is the registered type of TaskWorkflow.
const TaskWorkflowName = "TaskWorkflow"

// SignalProposalRevoked tells a task's workflow that its proposal was revoked: the cascade has
// already closed the task's row, and the workflow follows.
const SignalProposalRevoked = "proposal_revoked"

// ProposalRevoked is the payload of SignalProposalRevoked.
type ProposalRevoked struct {
	ProposalUUID string
	At           time.Time
}

// TaskState is everything TaskWorkflow knows; it is what continue-as-new carries.
type TaskState struct {
	Created  bool
	Deleted  bool
	Task     store.Task // the row as this workflow last wrote it (or as approval created it)
	Criteria []CriterionState
}

// CriterionState is what the workflow keeps of an acceptance criterion.
type CriterionState struct {
	UUID      string
	Required  bool
	Status    string // admin verification: pending | passed | failed
	DevStatus string // developer self-check: pending | passed | failed
}

func (s TaskState) clone() TaskState {
	c := s
	c.Criteria = slices.Clone(s.Criteria)
	return c
}

func (s TaskState) status() TaskStatus { return TaskStatus(s.Task.Status) }

// TaskRun is TaskWorkflow's input: the task's state (approval and create pass the new task).
type TaskRun struct {
	State *TaskState
}

type taskWorkflow struct {
	state TaskState
	mu    workflow.Mutex
}

// TaskWorkflow is the long-lived workflow of one task (id "task/<uuid>"). It is started by
// proposal approval for every materialized task and follows the proposal's revoke.
func TaskWorkflow(ctx workflow.Context, in TaskRun) error {
	w := &taskWorkflow{mu: workflow.NewMutex(ctx)}
	if in.State != nil {
		w.state = *in.State
	}
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (TaskState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The task's workflow state: row and acceptance criteria."}); err != nil {
		return err
	}
	revoked := workflow.GetSignalChannel(ctx, SignalProposalRevoked)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var sig ProposalRevoked
			revoked.Receive(ctx, &sig)
			_ = w.mu.Lock(ctx)
			if w.state.status() != TaskClosed {
				n := w.state.clone()
				n.Task.Status = string(TaskClosed)
				n.Task.UpdatedAt = sig.At
				w.state = n // the revoke cascade already wrote the row
				w.publish(ctx)
			}
			w.mu.Unlock()
		}
	})
	if w.state.Created {
		w.publish(ctx)
	}
	again, err := awaitContinueAsNew(ctx, func() bool { return w.state.Deleted })
	if err != nil || !again {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, TaskWorkflowName, TaskRun{State: &w.state})
}

func (w *taskWorkflow) publish(ctx workflow.Context) {
	t := w.state.Task
	_ = workflow.UpsertTypedSearchAttributes(ctx, ProjectUUIDKey.ValueSet(t.ProjectUUID),
		EntityKey.ValueSet(string(EntityTask)), StatusKey.ValueSet(t.Status), AssigneeKey.ValueSet(deref(t.AssigneeUUID)))
	_ = workflow.UpsertMemo(ctx, map[string]any{"title": t.Title})
	details := fmt.Sprintf("**Task** %q is **%s** (priority %s)", t.Title, t.Status, t.Priority)
	if t.AssigneeUUID != nil {
		details += ", assigned to " + *t.AssigneeUUID
	}
	workflow.SetCurrentDetails(ctx, details)
}
