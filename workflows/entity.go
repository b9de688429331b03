package workflows

import (
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
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
func DerivedUUID(parts ...string) string { return activities.DerivedUUID(parts...) }

// stamp is the workflow's clock for rows: UTC, in microseconds (what both databases keep).
func stamp(ctx workflow.Context) time.Time { return workflow.Now(ctx).UTC().Truncate(time.Microsecond) }

// QueryState is the name of every workflow's read-only state query, for operators and tests.
const QueryState = "state"

// Writes are regular activities, never local ones: a local activity runs inside a workflow
// task, and when concurrent updates make Temporal discard that task and redo it with other
// updates, the discarded attempt's writes would stay in the database. A regular activity is
// scheduled only once the workflow task that accepted the update is recorded in history.
//
// persist runs a writing activity: bounded retries, then the failure is reported rather than
// the caller left hanging. Chorus refusals (and a row closed meanwhile) are not retried.
func persist(ctx workflow.Context, activity any, args ...any) workflow.Future {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    200 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    8,
			NonRetryableErrorTypes: []string{string(KindNotFound), string(KindConflict), string(KindInvalid),
				string(KindForbidden), activities.ErrTaskClosed},
		},
	}), activity, args...)
}

// read runs a read-only local activity (a guard that needs the database). Being read-only, it
// is safe to run again in a redone workflow task.
func read(ctx workflow.Context, activity any, args ...any) workflow.Future {
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: time.Second, MaximumAttempts: 5},
	}), activity, args...)
}

// registerUpdate registers one command as a workflow update named after its tool. The validator
// runs first and cheaply (a rejection writes nothing to history); the handler takes the
// entity's mutex so commands never interleave, validates again against the state it now holds,
// and runs. Refusals travel as ApplicationErrors of a Chorus kind.
func registerUpdate[In, Out any](ctx workflow.Context, mu workflow.Mutex, name string,
	validate func(In) error, run func(workflow.Context, In) (Out, error)) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, name,
		func(ctx workflow.Context, in In) (Out, error) {
			var zero Out
			if err := mu.Lock(ctx); err != nil {
				return zero, err
			}
			defer mu.Unlock()
			if err := validate(in); err != nil {
				return zero, ToApplicationError(err)
			}
			out, err := run(ctx, in)
			if err != nil {
				return zero, ToApplicationError(err)
			}
			return out, nil
		},
		workflow.UpdateHandlerOptions{
			Validator: func(in In) error { return ToApplicationError(validate(in)) },
		})
}

// awaitContinueAsNew blocks until done() or Temporal suggests continuing as new, then waits for
// running handlers to finish. It reports whether the run should continue as new.
func awaitContinueAsNew(ctx workflow.Context, done func() bool) (bool, error) {
	err := workflow.Await(ctx, func() bool { return done() || workflow.GetInfo(ctx).GetContinueAsNewSuggested() })
	if err != nil {
		return false, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return false, err
	}
	return !done(), nil
}

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
