package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/vocab"
)

// What every entity workflow shares: the caller of a command, deterministic ids, update
// registration with a mutex, and how activities that write or read the store are run.

// Actor is who sends a command: an agent of a company, with its owner (for project access and
// "assignee is my owner" checks) and the admin bits that change a guard's outcome.
type Actor struct {
	Type        string `json:"type"` // "agent"
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	CompanyUUID string `json:"companyUuid"`
	OwnerUUID   string `json:"ownerUuid,omitempty"`
	// ProposalAdmin: holds proposal:admin, which lifts the own-proposal check of reject and revoke.
	ProposalAdmin bool `json:"proposalAdmin,omitempty"`
}

// DerivedUUID returns a uuid determined by parts (see activities.DerivedUUID).
func DerivedUUID(parts ...string) string { return vocab.DerivedUUID(parts...) }

// stamp is the workflow's clock for rows: UTC, in microseconds (what both databases keep).
func stamp(ctx workflow.Context) time.Time { return workflow.Now(ctx).UTC().Truncate(time.Microsecond) }

// QueryState is the name of every workflow's read-only state query, for operators and tests.
const QueryState = "state"

// Writes are regular activities, never local ones: a local activity runs inside a workflow
// task, and when concurrent updates make Temporal discard that task and redo it with other
// updates, the discarded attempt's writes would stay in the database. A regular activity is
// scheduled only once the workflow task that accepted the update is recorded in history.
//
// persist runs a writing activity and retries it until its outcome is known: the write protocol
// makes a retry of a committed change a no-op, so there is no attempt limit (docs/write-path.md).
// Chorus refusals and projection conflicts are outcomes, not failures to retry.
func persist(ctx workflow.Context, activity any, args ...any) workflow.Future {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        200 * time.Millisecond,
			BackoffCoefficient:     2,
			MaximumInterval:        10 * time.Second,
			NonRetryableErrorTypes: nonRetryable,
		},
	}), activity, args...)
}

var nonRetryable = []string{string(KindNotFound), string(KindConflict), string(KindInvalid), string(KindForbidden),
	activities.ErrProjectionConflict}

// read runs a read-only local activity (a guard that needs the database). Being read-only, it
// is safe to run again in a redone workflow task; like writes, it is retried until it answers,
// so a database outage delays a command instead of failing it.
func read(ctx workflow.Context, activity any, args ...any) workflow.Future {
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// Without a schedule-to-close timeout the SDK stops retrying after the start-to-close one.
		ScheduleToCloseTimeout: readPatience,
		StartToCloseTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 10 * time.Second, NonRetryableErrorTypes: nonRetryable},
	}), activity, args...)
}

// readPatience is how long a guard's read keeps retrying: longer than any outage worth riding
// out, so in practice until the database answers.
const readPatience = 7 * 24 * time.Hour

// commandLock serialises an entity's commands and signals (a workflow.Mutex) and counts the
// update handlers that have started and not finished, and the signals received and not yet
// applied (receiveSignals).
type commandLock struct {
	workflow.Mutex
	running int
	// signals counts the signals a coroutine has received and is still applying: one waiting for
	// the lock is counted from the moment it left its channel, so continue-as-new waits for it
	// (awaitContinueAsNew) instead of losing it with the run.
	signals int
}

// receiveSignals applies every signal named name with apply, in a coroutine of its own, each
// counted in mu.signals from the moment it is received until apply returns (apply takes the
// command lock). It returns a function that applies the signals still buffered in the channel:
// call it before continuing as new, after awaitContinueAsNew.
func receiveSignals[T any](ctx workflow.Context, mu *commandLock, name string, apply func(workflow.Context, T)) func(workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, name)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			// Not ch.Receive: a receive blocked on the channel takes a signal the moment it is
			// delivered, before this coroutine runs again, so a run deciding to continue as new in
			// that workflow task would see neither the signal in the channel nor it counted.
			if err := workflow.Await(ctx, func() bool { return ch.Len() > 0 }); err != nil {
				return
			}
			var sig T
			if !ch.ReceiveAsync(&sig) {
				continue
			}
			mu.signals++
			apply(ctx, sig)
			mu.signals--
		}
	})
	return func(ctx workflow.Context) {
		for {
			var sig T
			if !ch.ReceiveAsync(&sig) {
				return
			}
			apply(ctx, sig)
		}
	}
}

func newCommandLock(ctx workflow.Context) *commandLock {
	return &commandLock{Mutex: workflow.NewMutex(ctx)}
}

// registerUpdate registers one command as a workflow update named after its tool. The validator
// runs first and cheaply (a rejection writes nothing to history); the handler takes the
// entity's lock so commands never interleave, validates again against the state it now holds,
// and runs. Refusals travel as ApplicationErrors of a Chorus kind.
//
// While another command's handler is running, the validator lets the update through: the state
// it would judge is about to change, and the handler judges it once the running commands are
// done. Updates that a `temporal workflow reset` re-applies arrive together in one workflow task,
// each depending on the ones before it (a claim, then a start); judged on the state before the
// first, the later ones would be rejected, leaving rows that had applied them ahead of the
// workflow (docs/write-path.md, "Check and repair").
//
// An update id that recent() lists (applied before a continue-as-new) is not applied again: it
// returns the recorded result (docs/write-path.md, "Exactly once").
func registerUpdate[In, Out any](ctx workflow.Context, mu *commandLock, recent func() *Recent, cmd Command[In, Out],
	validate func(In) error, run func(workflow.Context, In) (Out, error)) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, cmd.Name,
		func(ctx workflow.Context, in In) (Out, error) {
			var zero Out
			mu.running++
			defer func() { mu.running-- }()
			if err := mu.Lock(ctx); err != nil {
				return zero, err
			}
			defer mu.Unlock()
			id := workflow.GetCurrentUpdateInfo(ctx).ID
			if done, ok := recent().find(id); ok {
				return replayed[Out](done)
			}
			if err := validate(in); err != nil {
				return zero, ToApplicationError(err)
			}
			out, err := run(ctx, in)
			if err != nil {
				return zero, ToApplicationError(err)
			}
			recent().add(id, out)
			return out, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(ctx workflow.Context, in In) error {
				if _, ok := recent().find(workflow.GetCurrentUpdateInfo(ctx).ID); ok {
					return nil // applied before: the handler returns its result
				}
				if mu.running > 0 {
					return nil // the state is changing: the handler judges the command on where it ends
				}
				return ToApplicationError(validate(in))
			},
		})
}

// guardsChange is the workflow.GetVersion change id of commands asking the change journal
// before their guards that read other rows (alreadyApplied); histories recorded before it run the
// guards every time.
const guardsChange = "guards-skip-journaled-changes"

// alreadyApplied reports whether the change the running update would make to the entity's row
// (uuid, now at row) is in the change journal: a `temporal workflow reset` that re-applies an
// update re-runs its handler, and a guard that reads other rows (a task's blockers, a proposal's
// drafts, an idea's lineage) would judge it on today's rows, refusing a command that was
// accepted and applied, and every command after it would diverge. A command whose change is
// journaled passed its guards when it was applied: its caller skips them, and its write finds the
// change applied (docs/write-path.md, "Check and repair"). It must run in an update handler.
func alreadyApplied(ctx workflow.Context, uuid string, row RowMark) (bool, error) {
	if workflow.GetVersion(ctx, guardsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false, nil
	}
	var a *activities.Activities
	var applied bool
	if err := read(ctx, a.ChangeApplied, nextWrite(ctx, row, time.Time{}).ID, uuid).Get(ctx, &applied); err != nil {
		return false, fmt.Errorf("could not read the change journal: %w", err)
	}
	return applied, nil
}

// on binds a rule stated on an entity's state (a pure function, table-tested without Temporal)
// to the workflow's current state, as an update's validator.
func on[S, In any](current func() S, rule func(S, In) error) func(In) error {
	return func(in In) error { return rule(current(), in) }
}

// replayed returns the recorded result of an update applied before.
func replayed[Out any](u RecentUpdate) (Out, error) {
	var out Out
	if u.Result == nil {
		return out, ToApplicationError(ErrAlreadyApplied)
	}
	//workflowcheck:ignore (decoding recorded JSON into a struct is deterministic)
	if err := json.Unmarshal(u.Result, &out); err != nil {
		return out, err
	}
	return out, nil
}

// ProjectionConflictsMetric counts projection conflicts (docs/write-path.md) by entity through the
// Temporal SDK's metrics handler; Prometheus shows it as chorus_projection_conflicts_total.
const ProjectionConflictsMetric = "chorus_projection_conflicts"

// diverged turns a projection conflict into the refusal an agent sees, after telling operators
// (the worker log at ERROR and the workflow's current details). Other errors pass through.
func diverged(ctx workflow.Context, entity vocab.Entity, err error) error {
	c, ok := activities.AsProjectionConflict(err)
	if !ok {
		return err
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	// The SDK's handler skips metrics while replaying, so each conflict counts once.
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"entity": string(entity)}).Counter(ProjectionConflictsMetric).Inc(1)
	workflow.GetLogger(ctx).Error("projection conflict: the row and the workflow disagree; run chorus ops repair",
		"workflowId", id, "expectedVersion", c.Write.Expect, "changeId", c.Write.ID,
		"foundVersion", c.Version, "foundChangeId", c.ChangeID, "rowExists", c.Found)
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**Projection conflict**: the %s row is at version %d (change %q) "+
		"but this workflow expects version %d. Run `chorus ops repair %s`.", entity, c.Version, c.ChangeID, c.Write.Expect, id))
	return Refuse(KindDiverged, "Cannot change this %s now: its stored record and its workflow disagree, so nothing was "+
		"changed. The operators have been alerted (chorus ops check lists it; chorus ops repair %s fixes it).", entity, id)
}

// awaitCreated waits, in a workflow started by update-with-start, until the entity is created
// (or its create failed): at most createWindow for a create to arrive, then as long as a create
// handler still runs. It reports whether the entity exists; a run that holds none then ends
// (docs/write-path.md, "Every row has its workflow").
func awaitCreated(ctx workflow.Context, settled func() bool) (bool, error) {
	if _, err := workflow.AwaitWithTimeout(ctx, createWindow, settled); err != nil {
		return false, err
	}
	if err := workflow.Await(ctx, func() bool { return settled() || workflow.AllHandlersFinished(ctx) }); err != nil {
		return false, err
	}
	return settled(), nil
}

// awaitContinueAsNew blocks until done() or Temporal suggests continuing as new, then waits for
// running update handlers to finish and, for a run that continues, for the signals received and
// not yet applied (mu.signals): a move or revoke that arrived while the run's last command held
// the lock waits for that lock, and the run must carry its effect into the next one. It reports
// whether the run should continue as new.
func awaitContinueAsNew(ctx workflow.Context, mu *commandLock, done func() bool) (bool, error) {
	err := workflow.Await(ctx, func() bool { return done() || workflow.GetInfo(ctx).GetContinueAsNewSuggested() })
	if err != nil {
		return false, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return false, err
	}
	if done() {
		return false, nil
	}
	// Histories recorded before the wait continued as new without it (a signal waiting for the
	// lock then was lost with the run).
	if workflow.GetVersion(ctx, drainSignalsChange, workflow.DefaultVersion, 1) == 1 {
		if err := workflow.Await(ctx, func() bool { return mu.signals == 0 && workflow.AllHandlersFinished(ctx) }); err != nil {
			return false, err
		}
	}
	return !done(), nil
}

// drainSignalsChange is the workflow.GetVersion change id of continue-as-new waiting for the
// signals being applied (awaitContinueAsNew).
const drainSignalsChange = "continue-as-new-waits-for-signals"

// isChorusError reports whether err is already a refusal an agent can read.
func isChorusError(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return true
	}
	var app *temporal.ApplicationError
	return errors.As(err, &app) && strings.HasPrefix(app.Type(), "chorus.")
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
