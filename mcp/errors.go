package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Errors reach an agent as an isError tool result whose text says what failed, why, and what to
// do next (docs/rules.md §3.7). There are four kinds an agent can act on; anything else is a bug or
// an outage, logged with a reference and shown as "internal error (ref <id>)".

// userError is a refusal a handler words itself (a guard, a precondition, a conflict).
type userError struct {
	msg string
	// kind is the refusal's kind for metrics (RefusalKinds); empty means "precondition".
	kind string
}

func (e *userError) Error() string { return e.msg }

// refuse returns a userError; the text goes to the agent as is.
func refuse(format string, args ...any) error { return &userError{msg: fmt.Sprintf(format, args...)} }

// refuseAs returns a userError of a given kind (one of RefusalKinds: "invalid_input",
// "not_found", "forbidden", ...), for a refusal a handler words itself that is not a precondition.
func refuseAs(kind, format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// toolNotFound is the answer for a tool that is unknown or hidden by permissions (docs/rules.md §3.3).
func toolNotFound(name string) error { return &userError{msg: "Tool " + name + " not found"} }

// agentMessage returns the text an agent sees for err, and whether err is one of the known kinds.
// It is the only switch from error to tool result.
func agentMessage(err error) (string, bool) {
	var (
		in  *inputError
		ue  *userError
		nf  *store.NotFoundError
		wfe *workflows.Error
		ar  *app.Refusal
	)
	switch {
	case errors.As(err, &in):
		return in.Error(), true
	case errors.As(err, &ar):
		return ar.Msg, true
	case errors.As(err, &ue):
		return ue.msg, true
	case errors.As(err, &nf):
		return nf.Error(), true
	case errors.Is(err, store.ErrForbidden):
		return store.ErrForbidden.Error(), true
	case errors.As(err, &wfe):
		return wfe.Message, true
	case errors.Is(err, workflows.ErrStillRunning), errors.Is(err, store.ErrRequestInProgress),
		errors.Is(err, context.DeadlineExceeded):
		return "Still in progress: Chorus has not finished this call yet and it may still complete. Retry with the " +
			"same requestId to get its outcome (without a requestId, read the entity back before you retry).", true
	case store.IsUnavailable(err):
		return "Chorus cannot reach its database right now. Retry in a few seconds with the same requestId: a call " +
			"that already took effect is not applied twice.", true
	}
	return "", false
}

// toolErrorText maps err to the isError text, logging unknown errors with a reference id.
func toolErrorText(ctx context.Context, log *slog.Logger, toolName string, err error) string {
	if msg, ok := agentMessage(err); ok {
		return msg
	}
	ref := refFrom(ctx)
	log.ErrorContext(ctx, "tool failed", "tool", toolName, "ref", ref, "err", err)
	return fmt.Sprintf("internal error (ref %s); the operators can look it up in the server log", ref)
}

// RequestIDHeader is the response header that carries a request's ref, the id its log lines carry.
const RequestIDHeader = "X-Request-Id"

type refKey struct{}

func withRef(ctx context.Context, ref string) context.Context {
	return context.WithValue(ctx, refKey{}, ref)
}

// refFrom is the request's ref (set by the auth middleware), or a new one for a request that has
// none (a handler called outside the HTTP endpoint).
func refFrom(ctx context.Context) string {
	if ref, ok := ctx.Value(refKey{}).(string); ok {
		return ref
	}
	return newRef()
}

func newRef() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
