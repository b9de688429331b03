package activities

import (
	"context"

	"github.com/chorus-dev/chorus/store"
)

// ApplyTaskChange writes one task command's change by the write protocol (docs/write-path.md).
func (a *Activities) ApplyTaskChange(ctx context.Context, c store.TaskChange) (store.TaskOutcome, error) {
	out, err := a.Store.ApplyTaskChange(ctx, c)
	return out, outcome(err)
}

// Blockers reads the unresolved dependencies of a task (docs/rules.md §5.3).
func (a *Activities) Blockers(ctx context.Context, taskUUID string) ([]store.TaskLink, error) {
	return a.Store.Blockers(ctx, taskUUID)
}

// CreateTaskBatch writes a chorus_create_tasks batch in one transaction and returns the
// warnings of the dependencies that could not be added.
func (a *Activities) CreateTaskBatch(ctx context.Context, b store.TaskBatch) ([]string, error) {
	out, err := a.Store.CreateTaskBatch(ctx, b)
	return out, outcome(err)
}
