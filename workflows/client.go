package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/store"
)

// Client sends lifecycle commands to the entity workflows as updates and waits for their
// results. It is what the MCP layer uses; no caller names a workflow or update by hand.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	// Applied reports whether the change journal holds a change of the update with this key
	// (store.Store.UpdateApplied). With it, a retried call whose workflow forgot its update is
	// answered instead of applied again; nil disables that check (tests without a database).
	Applied func(ctx context.Context, updateKey string) (bool, error)
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
	// Retry: an earlier call with this requestId and generation started and its outcome is not
	// known (the requestId ledger says so). Its update may have been applied already.
	Retry bool
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
func (c *Client) update(ctx context.Context, entity Entity, uuid, name string, call Call, id string, arg, out any) error {
	if done, err := c.recall(ctx, entity, uuid, call, id, out); done || err != nil {
		return err
	}
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
	start client.StartWorkflowOptions, name string, call Call, id string, arg, out any) error {
	if done, err := c.recall(ctx, entity, uuid, call, id, out); done || err != nil {
		return err
	}
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

// ErrAlreadyApplied answers a retried call whose update was applied earlier but whose result no
// workflow keeps any more (docs/write-path.md, "Exactly once"): it is not applied again.
var ErrAlreadyApplied = Refuse(KindAlreadyApplied, "This requestId's command was already carried out by an "+
	"earlier call, and its result is no longer kept; nothing was changed now. Read the entity to see where it stands.")

// recall answers a retried call (call.Retry) whose update was already applied, without sending
// it again: Temporal keeps an update's outcome only in the run that applied it, and a workflow's
// state lists only its latest updates (Recent), so after a continue-as-new the update could
// otherwise apply twice. It reports whether the call is answered (out filled, or the error to
// return). The change journal decides whether the update was applied; the result comes from the
// run that applied it, else from the workflow's Recent list, else ErrAlreadyApplied.
func (c *Client) recall(ctx context.Context, entity Entity, uuid string, call Call, id string, out any) (bool, error) {
	if !call.Retry || c.Applied == nil {
		return false, nil
	}
	wid := WorkflowID(entity, uuid)
	applied, err := c.Applied(ctx, store.UpdateKey(wid, id))
	if err != nil || !applied {
		return false, err
	}
	h := c.Temporal.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: wid, UpdateID: id})
	err = h.Get(ctx, out)
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return true, nil
	case !errors.As(err, &nf):
		return true, retryTransient(ctx, func() error { return h.Get(ctx, out) }, entity)
	}
	q, err := c.Temporal.QueryWorkflow(ctx, wid, "", QueryState)
	if err != nil {
		return true, mapClientError(err, entity)
	}
	var st struct {
		Recent Recent `json:"recent"`
	}
	if err := q.Get(&st); err != nil {
		return true, err
	}
	if u, ok := st.Recent.find(id); ok && u.Result != nil {
		return true, json.Unmarshal(u.Result, out)
	}
	return true, ErrAlreadyApplied
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
