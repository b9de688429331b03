package workflows

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Client sends lifecycle commands to the entity workflows as updates and waits for their
// results. It is what the MCP layer uses; no caller names a workflow or update by hand.
type Client struct {
	Temporal  client.Client
	TaskQueue string
}

// NewClient wraps a Temporal client; new workflows start on taskQueue ("" means TaskQueue).
func NewClient(c client.Client, taskQueue string) *Client {
	if taskQueue == "" {
		taskQueue = TaskQueue
	}
	return &Client{Temporal: c, TaskQueue: taskQueue}
}

// Call identifies one command: the idempotency key it carries (docs/rules.md §8.5) and that key's
// generation, which moves on each time a call with the key is refused (docs/write-path.md,
// "Exactly once").
type Call struct {
	// RequestID is the caller's requestId ("" for none). With it, a retried command has the same
	// update id, and Temporal returns the first outcome instead of applying it again.
	RequestID  string
	Generation int
}

// updateID names an update: "<tool>/<agent>/<requestId>/<generation>" for a call with a
// requestId, so the same key sent to another tool is another update, or fresh otherwise. The
// same id is used for every retry inside one call, so a retry after a lost reply cannot apply
// twice.
func updateID(agentUUID, tool string, c Call) string {
	if c.RequestID != "" {
		return fmt.Sprintf("%s/%s/%s/%d", tool, agentUUID, c.RequestID, c.Generation)
	}
	return "call/" + DerivedUUID(agentUUID, time.Now().String(), randomSuffix())
}

// ErrStillRunning is returned when a call's deadline passes before its workflow answered: the
// command may still complete, and a retry with the same requestId returns its outcome.
var ErrStillRunning = errors.New("the command is still in progress")

func randomSuffix() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// update sends one update and decodes its result into out. Transient refusals from the server
// (too many updates in flight on one workflow, a workflow busy continuing as new, a dropped
// connection) are retried with the same update id until ctx ends, so they never reach an agent.
func (c *Client) update(ctx context.Context, entity Entity, uuid, name, id string, arg, out any) error {
	opts := client.UpdateWorkflowOptions{WorkflowID: WorkflowID(entity, uuid), UpdateName: name, UpdateID: id,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted}
	return retryTransient(ctx, func() error {
		h, err := c.Temporal.UpdateWorkflow(ctx, opts)
		if err == nil {
			err = h.Get(ctx, out)
		}
		return err
	}, entity)
}

// updateWithStart starts the entity's workflow if needed and sends its create update
// ("update-with-start", docs/write-path.md, "Every row has its workflow"); a second call for the
// same entity attaches to the running workflow.
func (c *Client) updateWithStart(ctx context.Context, entity Entity, uuid, workflowType string, runArg any,
	start client.StartWorkflowOptions, name, id string, arg, out any) error {
	start.ID = WorkflowID(entity, uuid)
	start.TaskQueue = c.TaskQueue
	start.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	start.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	return retryTransient(ctx, func() error {
		op := c.Temporal.NewWithStartWorkflowOperation(start, workflowType, runArg)
		h, err := c.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: op,
			UpdateOptions: client.UpdateWorkflowOptions{UpdateName: name, UpdateID: id, Args: []any{arg},
				WaitForStage: client.WorkflowUpdateStageCompleted},
		})
		if err == nil {
			err = h.Get(ctx, out)
		}
		return err
	}, entity)
}

// retryTransient runs f until it succeeds, fails for good, or ctx ends; it maps the final error
// to a Chorus refusal where one applies.
func retryTransient(ctx context.Context, f func() error, entity Entity) error {
	backoff := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil && transient(err) {
			return fmt.Errorf("%w: %v", ErrStillRunning, err)
		}
		if !transient(err) {
			return mapClientError(err, entity)
		}
		sleep := backoff/2 + time.Duration(rand.Int64N(int64(backoff)))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrStillRunning, err)
		case <-time.After(sleep):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// transient: worth retrying with the same update id.
func transient(err error) bool {
	var exhausted *serviceerror.ResourceExhausted
	var unavailable *serviceerror.Unavailable
	var timeout *client.WorkflowUpdateServiceTimeoutOrCanceledError
	var aborted *serviceerror.Aborted
	var deadline *serviceerror.DeadlineExceeded
	var canceled *serviceerror.Canceled
	switch {
	case errors.As(err, &deadline), errors.As(err, &canceled):
		return true
	case errors.As(err, &exhausted), errors.As(err, &unavailable), errors.As(err, &aborted):
		return true
	case errors.As(err, &timeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "Workflow Update failed because the Workflow completed before the Update completed") ||
		strings.Contains(msg, "workflow is closing") || strings.Contains(msg, "ErrWorkflowClosing")
}

// mapClientError turns Temporal client errors into Chorus refusals where they mean something
// to an agent; anything else is returned as is (an internal error).
func mapClientError(err error, entity Entity) error {
	if e, ok := FromTemporal(err).(*Error); ok {
		return e
	}
	var nf *serviceerror.NotFound
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &nf) || errors.As(err, &started) || temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return Refuse(KindNotFound, "%s not found", entityTitle(entity))
	}
	if strings.Contains(err.Error(), "workflow execution already completed") {
		return Refuse(KindNotFound, "%s not found", entityTitle(entity))
	}
	return err
}

func entityTitle(e Entity) string {
	s := string(e)
	return strings.ToUpper(s[:1]) + s[1:]
}
