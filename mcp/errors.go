package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/vocab"
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

// AsRefusal reads a userError as the refusal it is: app.Classify words and counts it.
func (e *userError) AsRefusal() *app.Refusal {
	kind := vocab.RefusalKind(e.kind)
	if kind == "" {
		kind = vocab.RefusedPrecondition
	}
	return &app.Refusal{Kind: kind, Msg: e.msg}
}

// AsRefusal reads an inputError as a refusal of kind invalid_input.
func (e *inputError) AsRefusal() *app.Refusal {
	return &app.Refusal{Kind: vocab.RefusedInvalid, Msg: e.Error()}
}

// agentMessage returns the text an agent sees for err, and whether err is one of the known kinds.
// It reads app.Classify, as the metrics do (classify).
func agentMessage(err error) (string, bool) {
	v := app.Classify(err)
	return v.Msg, v.Known()
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
