package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
)

// Kind is the class of a refusal. Only an ApplicationError's type and message survive a trip
// through Temporal, so the kinds travel as these stable type strings.
type Kind string

// The refusal kinds. The first four are the refusals an agent can act on; mcp words each as one
// sentence saying what failed, why and what to do (docs/rules.md §3.7).
const (
	KindInvalid   Kind = "chorus.InvalidInput" // bad input the schema could not catch
	KindNotFound  Kind = "chorus.NotFound"     // the entity does not exist or is hidden
	KindForbidden Kind = "chorus.Forbidden"    // the caller may not do this (not the assignee, ...)
	KindConflict  Kind = "chorus.Conflict"     // illegal transition for the current state
	// KindDiverged: the entity's row and its workflow disagree (docs/write-path.md); an operator
	// must repair it before it can change.
	KindDiverged Kind = "chorus.Diverged"
	// KindAlreadyApplied: a retried command was carried out before and its result is no longer
	// kept (docs/write-path.md, "Exactly once"). It is the call's final outcome, not a refusal.
	KindAlreadyApplied Kind = "chorus.AlreadyApplied"
	// KindRolledBack: a retried command was applied, then rolled back by chorus ops repair
	// (docs/write-path.md, "Check and repair"). It is the call's final outcome, not a refusal.
	KindRolledBack Kind = "chorus.RolledBack"
)

// Error is a refusal from a workflow: an agent-readable sentence and its kind.
type Error struct {
	Kind    Kind
	Message string
	// MayHaveApplied: the command may have been applied before the refusal (a divergence found
	// because the workflow ended while the command was in flight, Client.ended), so a retry must
	// reach the same update rather than run a new one. A refusal that travelled through Temporal
	// never has it: its workflow judged the command and changed nothing.
	MayHaveApplied bool
}

func (e *Error) Error() string { return e.Message }

// Refuse returns an Error of the given kind; the message should name the current state and
// what to do next.
func Refuse(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// ToApplicationError turns an Error into the non-retryable ApplicationError that carries it
// through Temporal; other errors pass through.
func ToApplicationError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return temporal.NewNonRetryableApplicationError(e.Message, string(e.Kind), nil)
	}
	return err
}

// FromTemporal recovers an *Error from an error returned by a Temporal client call (an update's
// rejection or failure); errors that are not Chorus refusals come back unchanged.
func FromTemporal(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && strings.HasPrefix(app.Type(), "chorus.") {
		return &Error{Kind: Kind(app.Type()), Message: app.Message()}
	}
	return err
}

// IsKind reports whether err is a refusal of kind k, as a workflow or the client returned it.
func IsKind(err error, k Kind) bool {
	e, ok := FromTemporal(err).(*Error)
	return ok && e.Kind == k
}
