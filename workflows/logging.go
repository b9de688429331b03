package workflows

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/activities"
)

// QuietOutcomes wraps the logger given to the Temporal SDK so that ERROR stays an alert signal.
// The SDK logs every activity that returns an error as "Activity error." at ERROR, including
// the outcomes Chorus returns as errors on purpose: a refusal (a non-retryable ApplicationError
// of a "chorus." type, such as a parent idea deleted meanwhile) and a projection conflict a task
// adopts from its proposal's revoke. Those records are lowered to INFO. A real divergence is
// still logged at ERROR by the workflow ("projection conflict ..."), and an activity failing with
// anything else (the database down, a bug) keeps its level, except a webhook delivery's failed
// attempt (the receiver's failure, retried and recorded on its row), which is a WARN.
func QuietOutcomes(l *slog.Logger) *slog.Logger { return slog.New(quietOutcomes{l.Handler()}) }

type quietOutcomes struct{ h slog.Handler }

func (q quietOutcomes) Enabled(ctx context.Context, l slog.Level) bool { return q.h.Enabled(ctx, l) }

func (q quietOutcomes) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && r.Message == "Activity error." {
		lower := slog.LevelError
		switch {
		case chorusOutcome(r):
			lower = slog.LevelInfo
		case hasErrorType(r, activities.ErrWebhookAttempt):
			lower = slog.LevelWarn // a receiver that failed an attempt: its problem, retried, on the delivery's row
		}
		if lower < slog.LevelError {
			r = r.Clone()
			r.Level = lower
			if !q.h.Enabled(ctx, r.Level) {
				return nil
			}
		}
	}
	return q.h.Handle(ctx, r)
}

func (q quietOutcomes) WithAttrs(as []slog.Attr) slog.Handler {
	return quietOutcomes{q.h.WithAttrs(as)}
}
func (q quietOutcomes) WithGroup(g string) slog.Handler { return quietOutcomes{q.h.WithGroup(g)} }

// chorusOutcome reports whether the record's error is a non-retryable ApplicationError of a
// Chorus type.
func chorusOutcome(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		err, ok := a.Value.Any().(error)
		if !ok {
			return true
		}
		var app *temporal.ApplicationError
		found = errors.As(err, &app) && app.NonRetryable() && strings.HasPrefix(app.Type(), "chorus.")
		return !found
	})
	return found
}

// hasErrorType reports whether the record's error is an ApplicationError of type typ.
func hasErrorType(r slog.Record, typ string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			var app *temporal.ApplicationError
			found = errors.As(err, &app) && app.Type() == typ
		}
		return !found
	})
	return found
}
