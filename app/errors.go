package app

import (
	"context"
	"errors"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Verdict is what an error means to a caller: how the call ended, its kind (a vocab.RefusalKind
// for a refusal, a vocab.FailureKind for an error, "" for success) and the sentence an agent
// reads (docs/rules.md §3.7). An internal error has no sentence: the front end words it with a
// reference to its log line.
type Verdict struct {
	Outcome vocab.Outcome
	Kind    string
	Msg     string
}

// Known reports whether the verdict is an answer a front end shows as is: a refusal, or an
// error Chorus can explain (still running, unavailable).
func (v Verdict) Known() bool {
	return v.Outcome == vocab.OutcomeRefused || v.Outcome == vocab.OutcomeError && v.Kind != string(vocab.FailedInternal)
}

// AsRefusal is implemented by a front end's own refusal types (mcp's input errors) so that
// Classify reads them as the Refusal they stand for.
type AsRefusal interface {
	AsRefusal() *Refusal
}

// The sentences of the errors Chorus can explain.
const (
	msgStillRunning = "Still in progress: Chorus has not finished this call yet and it may still complete. Retry with the " +
		"same requestId to get its outcome (without a requestId, read the entity back before you retry)."
	msgUnavailable = "Chorus cannot reach its database right now. Retry in a few seconds with the same requestId: a call " +
		"that already took effect is not applied twice."
)

// workflowKinds maps the kinds a refusal carries through Temporal to the refusal kinds; a
// workflow refusal of a kind not listed here is a conflict.
var workflowKinds = map[workflows.Kind]vocab.RefusalKind{
	workflows.KindInvalid:        vocab.RefusedInvalid,
	workflows.KindNotFound:       vocab.RefusedNotFound,
	workflows.KindForbidden:      vocab.RefusedForbidden,
	workflows.KindConflict:       vocab.RefusedConflict,
	workflows.KindDiverged:       vocab.RefusedDiverged,
	workflows.KindAlreadyApplied: vocab.RefusedAlreadyApplied,
	workflows.KindRolledBack:     vocab.RefusedRolledBack,
}

// RefusalKindOf is the refusal kind of a workflow refusal kind.
func RefusalKindOf(k workflows.Kind) vocab.RefusalKind {
	if r, ok := workflowKinds[k]; ok {
		return r
	}
	return vocab.RefusedConflict
}

// Classify is the one reading of an error for callers: every front end words its answer and
// counts its metrics from it. A lookup that failed because the database is unreachable is
// unavailable, never "not found": only a missing row is (store's mapErr).
func Classify(err error) Verdict {
	if err == nil {
		return Verdict{Outcome: vocab.OutcomeOK}
	}
	if r := refusalOf(err); r != nil {
		return Verdict{Outcome: vocab.OutcomeRefused, Kind: string(r.Kind), Msg: r.Msg}
	}
	switch {
	case errors.Is(err, workflows.ErrStillRunning), errors.Is(err, store.ErrRequestInProgress),
		errors.Is(err, context.DeadlineExceeded):
		return Verdict{Outcome: vocab.OutcomeError, Kind: string(vocab.FailedStillRunning), Msg: msgStillRunning}
	case store.IsUnavailable(err):
		return Verdict{Outcome: vocab.OutcomeError, Kind: string(vocab.FailedUnavailable), Msg: msgUnavailable}
	}
	return Verdict{Outcome: vocab.OutcomeError, Kind: string(vocab.FailedInternal)}
}

// refusalOf is the refusal err stands for, or nil when it is not one.
func refusalOf(err error) *Refusal {
	var (
		as  AsRefusal
		ar  *Refusal
		nf  *store.NotFoundError
		wfe *workflows.Error
	)
	switch {
	case errors.As(err, &as):
		return as.AsRefusal()
	case errors.As(err, &ar):
		return ar
	case errors.As(err, &nf):
		return &Refusal{Kind: vocab.RefusedNotFound, Msg: nf.Error()}
	case errors.Is(err, store.ErrForbidden):
		return &Refusal{Kind: vocab.RefusedForbidden, Msg: store.ErrForbidden.Error()}
	case errors.As(err, &wfe):
		return &Refusal{Kind: RefusalKindOf(wfe.Kind), Msg: wfe.Message}
	}
	return nil
}

// Refused reports whether err is a refusal: an answer that changed nothing, so a retry with the
// same requestId may run the command anew (docs/write-path.md, "Exactly once"). An error whose
// outcome is unknown (still running, deadline, outage) is not, nor is a final outcome that
// names an earlier application (already applied, rolled back), nor a divergence found because
// the workflow ended with the command in flight (MayHaveApplied): its retry after the repair
// must reach the same update. A divergence the workflow itself answered (its write met a row
// elsewhere and wrote nothing) is a refusal.
func Refused(err error) bool {
	if errors.Is(err, workflows.ErrStillRunning) || errors.Is(err, context.DeadlineExceeded) || store.IsUnavailable(err) {
		return false
	}
	var wfe *workflows.Error
	if errors.As(err, &wfe) {
		return wfe.Kind != workflows.KindAlreadyApplied && wfe.Kind != workflows.KindRolledBack &&
			!(wfe.Kind == workflows.KindDiverged && wfe.MayHaveApplied)
	}
	return Classify(err).Known()
}
