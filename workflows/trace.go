package workflows

import (
	"context"
	"sync"
)

// Trace collects, for one tool call, which workflow its command went to and under which update
// id, so the call's log line can name them (docs/operations.md "Logs"). The Client fills it when ctx carries
// one (WithTrace); nothing else depends on it.
type Trace struct {
	mu         sync.Mutex
	workflowID string
	updateID   string
}

type traceKey struct{}

// WithTrace returns ctx carrying a new Trace, and the Trace.
func WithTrace(ctx context.Context) (context.Context, *Trace) {
	t := &Trace{}
	return context.WithValue(ctx, traceKey{}, t), t
}

// note records the workflow and update of a command sent under ctx (a later command wins).
func note(ctx context.Context, workflowID, updateID string) {
	if t, ok := ctx.Value(traceKey{}).(*Trace); ok {
		t.mu.Lock()
		t.workflowID, t.updateID = workflowID, updateID
		t.mu.Unlock()
	}
}

// Get returns the workflow id and update id of the last command sent ("" when none).
func (t *Trace) Get() (workflowID, updateID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.workflowID, t.updateID
}
