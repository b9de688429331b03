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
	"github.com/chorus-dev/chorus/vocab"
)

// Client sends lifecycle commands to the entity workflows as updates and waits for their
// results. It is what the MCP layer uses; no caller names a workflow or update by hand.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	// Applied says whether the change journal holds a change of the update with this key, and
	// whether a repair rolled it back (store.Store.UpdateOutcome). With it, a retried call whose
	// workflow forgot its update is answered instead of applied again; nil disables that check
	// (tests without a database).
	Applied func(ctx context.Context, updateKey string) (store.UpdateOutcome, error)
	// Rows tells a workflow that ended under its row from an entity that is gone; nil answers
	// "not found" for both.
	Rows Rows
	// SealText starts workflows with their title and assignee's name kept out of the search
	// attributes (SealedTitle): set it when payloads are encrypted.
	SealText bool
}

// Rows is what Client asks the database: whether the row of a lifecycle entity exists. kind
// is the Entity ("idea", "proposal", "task"). *store.Store implements it (LifecycleRowExists).
type Rows interface {
	LifecycleRowExists(ctx context.Context, kind, uuid string) (bool, error)
}

// NewClient wraps a Temporal client; new workflows start on taskQueue ("" means TaskQueue).
// rows answers whether an entity's row exists (see Client.Rows); it may be nil.
func NewClient(c client.Client, taskQueue string, rows Rows) *Client {
	if taskQueue == "" {
		taskQueue = TaskQueue
	}
	return &Client{Temporal: c, TaskQueue: taskQueue, Rows: rows}
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
func (c *Client) update(ctx context.Context, entity vocab.Entity, uuid, name string, call Call, id string, arg, out any) error {
	note(ctx, vocab.WorkflowID(entity, uuid), id)
	if done, err := c.recall(ctx, entity, uuid, call, id, out); done || err != nil {
		return err
	}
	opts := client.UpdateWorkflowOptions{WorkflowID: vocab.WorkflowID(entity, uuid), UpdateName: name, UpdateID: id,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted}
	return c.retryTransient(ctx, entity, uuid, func() error {
		h, err := c.Temporal.UpdateWorkflow(ctx, opts)
		if err == nil {
			err = h.Get(ctx, out)
		}
		return err
	})
}

// updateWithStart starts the entity's workflow if needed and sends its create update
// ("update-with-start", docs/write-path.md, "Every row has its workflow"); a second call for the
// same entity attaches to the running workflow.
func (c *Client) updateWithStart(ctx context.Context, entity vocab.Entity, uuid, workflowType string, runArg any,
	start client.StartWorkflowOptions, name string, call Call, id string, arg, out any) error {
	note(ctx, vocab.WorkflowID(entity, uuid), id)
	if done, err := c.recall(ctx, entity, uuid, call, id, out); done || err != nil {
		return err
	}
	start.ID = vocab.WorkflowID(entity, uuid)
	start.TaskQueue = c.TaskQueue
	start.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	start.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	return c.retryTransient(ctx, entity, uuid, func() error {
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
	})
}

// ErrAlreadyApplied answers a retried call whose update was applied earlier but whose result no
// workflow keeps any more (docs/write-path.md, "Exactly once"): it is not applied again.
var ErrAlreadyApplied = Refuse(KindAlreadyApplied, "This requestId's command was already carried out by an "+
	"earlier call, and its result is no longer kept; nothing was changed now. Read the entity to see where it stands.")

// ErrRolledBack answers a retried call whose update was applied and then rolled back by chorus
// ops repair (docs/write-path.md, "Check and repair"): it is the call's final outcome, not a
// refusal, so the requestId keeps it.
var ErrRolledBack = Refuse(KindRolledBack, "This requestId's command was applied and then rolled back by an operator's "+
	"repair (chorus ops repair set its entity back to an earlier state), so it is not in effect now; what it recorded "+
	"beside the entity (comments, activity) remains. Read the entity; to apply the command again, call again with a "+
	"new requestId.")

// recall answers a retried call (call.Retry) whose update was already applied, without sending
// it again: Temporal keeps an update's outcome only in the run that applied it, and a workflow's
// state lists only its latest updates (Recent), so after a continue-as-new the update could
// otherwise apply twice. It reports whether the call is answered (out filled, or the error to
// return). The change journal decides whether the update was applied; the result comes from the
// run that applied it, else from the workflow's Recent list, else ErrAlreadyApplied.
func (c *Client) recall(ctx context.Context, entity vocab.Entity, uuid string, call Call, id string, out any) (bool, error) {
	if !call.Retry || c.Applied == nil {
		return false, nil
	}
	wid := vocab.WorkflowID(entity, uuid)
	outcome, err := c.Applied(ctx, store.UpdateKey(wid, id))
	switch {
	case err != nil || outcome == store.UpdateNotApplied:
		return false, err
	case outcome == store.UpdateRolledBack:
		return true, ErrRolledBack
	}
	h := c.Temporal.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: wid, UpdateID: id})
	err = h.Get(ctx, out)
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return true, nil
	case !errors.As(err, &nf):
		return true, c.retryTransient(ctx, entity, uuid, func() error { return h.Get(ctx, out) })
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

// retryTransient runs f, a command to the workflow of the entity uuid ("" for a workflow that
// is not an entity's), until it succeeds, fails for good, or ctx ends; it maps the final error
// to a Chorus refusal where one applies. When f fails because the workflow is closed or
// closing, the workflow's latest run decides (Client.ended): if it runs (the closing run
// continued as new, and the new run takes the command), f is retried; if not, the call ends at
// once with a divergence refusal (the entity's row remains) or "not found" (docs/write-path.md,
// "Check and repair").
func (c *Client) retryTransient(ctx context.Context, entity vocab.Entity, uuid string, f func() error) error {
	backoff := 50 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if uuid != "" && closed(err) {
			if refusal := c.ended(ctx, entity, uuid); refusal != nil {
				return refusal
			}
		} else if !transient(err) {
			return inWorkflow(mapClientError(err, entity), entity, uuid)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrStillRunning, err)
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

// closed reports whether err says that the workflow a command went to is closed or closing:
// it completed (or was terminated) before an accepted update completed, it is closing, it is
// not running (a command to a closed workflow), or it exists closed (an update-with-start that
// may not start it again).
func closed(err error) bool {
	var nf *serviceerror.NotFound
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &nf) || errors.As(err, &started) || temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "Workflow Update failed because the Workflow completed before the Update completed") ||
		strings.Contains(msg, "workflow is closing") || strings.Contains(msg, "ErrWorkflowClosing") ||
		strings.Contains(msg, "workflow execution already completed")
}

// ended looks at the latest run of the entity's workflow after a command found it closed. It
// returns nil when that run is running (the command should be sent again) or cannot be looked
// at now (the caller retries until its deadline). Otherwise the workflow ended (terminated,
// failed, timed out, canceled, completed without continuing as new) or is missing, and it
// returns a KindDiverged refusal naming `chorus ops repair <workflow id>` when the entity's row
// still exists, or a KindNotFound refusal when it does not (or Rows is nil); an error reading
// the row is returned as is.
func (c *Client) ended(ctx context.Context, entity vocab.Entity, uuid string) error {
	id := vocab.WorkflowID(entity, uuid)
	how := "is missing"
	desc, err := c.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
	case err != nil:
		return nil
	default:
		switch st := desc.GetWorkflowExecutionInfo().GetStatus(); st {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			return nil
		case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
			how = "was terminated"
		case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
			how = "failed"
		case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
			how = "timed out"
		case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
			how = "was canceled"
		default:
			how = "completed"
		}
	}
	if c.Rows == nil {
		return entityNotFound(entity)
	}
	exists, err := c.Rows.LifecycleRowExists(ctx, string(entity), uuid)
	switch {
	case err != nil:
		return fmt.Errorf("read the %s row of the closed workflow %s: %w", entity, id, err)
	case !exists:
		return entityNotFound(entity)
	}
	refusal := Refuse(KindDiverged, "This %s cannot change now: its workflow %s %s while the %s remains, so commands "+
		"cannot reach it. An operator must run `chorus ops repair %s` (chorus ops check lists it), which restarts "+
		"the workflow from the stored %s; then retry, with the same requestId if you sent one.", entity, id, how, entity, id, entity)
	refusal.MayHaveApplied = true // the command may have been in flight when the workflow ended
	return refusal
}

// entityNotFound is the refusal for an entity whose workflow is gone or was never started.
func entityNotFound(entity vocab.Entity) *Error {
	return Refuse(KindNotFound, "%s not found", entityTitle(entity))
}

// mapClientError turns Temporal client errors into Chorus refusals where they mean something
// to an agent; anything else is returned as is (an internal error).
func mapClientError(err error, entity vocab.Entity) error {
	if e, ok := FromTemporal(err).(*Error); ok {
		return e
	}
	var nf *serviceerror.NotFound
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &nf) || errors.As(err, &started) || temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return entityNotFound(entity)
	}
	if strings.Contains(err.Error(), "workflow execution already completed") {
		return entityNotFound(entity)
	}
	return err
}

// inWorkflow adds the workflow id to an error that is not a Chorus refusal, so the log line of
// the internal error it becomes names the workflow whose command failed.
func inWorkflow(err error, entity vocab.Entity, uuid string) error {
	if _, ok := err.(*Error); ok || uuid == "" {
		return err
	}
	return fmt.Errorf("workflow %s: %w", vocab.WorkflowID(entity, uuid), err)
}

func entityTitle(e vocab.Entity) string {
	s := string(e)
	return strings.ToUpper(s[:1]) + s[1:]
}
