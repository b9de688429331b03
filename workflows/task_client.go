package workflows

import (
	"context"
	"errors"
	"github.com/chorus-dev/chorus/vocab"
	"go.temporal.io/sdk/temporal"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// CreateTasks runs one chorus_create_tasks batch and waits for its result. A retry of the same
// batch (same BatchUUID) returns the first run's result; after a failed run (which wrote
// nothing) it runs the batch again.
func (c *Client) CreateTasks(ctx context.Context, in CreateTasksInput) (CreateTasksResult, error) {
	var out CreateTasksResult
	id := TaskBatchID(in.BatchUUID)
	err := c.retryTransient(ctx, vocab.EntityTask, "", func() error {
		run, err := c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: c.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
			StaticSummary:            "Create tasks",
			// Operators find a project's batches (ChorusEntity = "task_batch"); entity queries for
			// "task" keep to the tasks themselves.
			TypedSearchAttributes: temporal.NewSearchAttributes(EntityKey.ValueSet(TaskBatchEntity),
				ProjectUUIDKey.ValueSet(in.ProjectUUID)),
			Memo: batchMemo(in)}, CreateTasksWorkflowName, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &out) // an earlier attempt finished
		}
		if err != nil {
			return err
		}
		return run.Get(ctx, &out)
	})
	return out, err
}
