package activities

import (
	"context"
	"slices"

	"github.com/chorus-dev/chorus/store"
)

// ApplyTaskChange writes one task command's change by the write protocol (docs/write-path.md).
// A task of a proposal that is deleted or moves to a status its proposal's input ideas count
// (taskRefreshes) asks them to refresh their progress.
func (a *Activities) ApplyTaskChange(ctx context.Context, c store.TaskChange) (store.TaskOutcome, error) {
	out, err := a.Store.ApplyTaskChange(ctx, c)
	if err != nil {
		return out, outcome(err)
	}
	moved := slices.Contains(taskRefreshes, c.NewStatus())
	if p := c.Proposal(); p != nil && (c.Delete || moved) {
		return out, a.refreshProposalIdeas(ctx, *p)
	}
	return out, nil
}

// ChangeApplied reports whether the change journal lists changeID for the row entityUUID
// (store.ChangeApplied): a read that guards the guards of a re-applied command.
func (a *Activities) ChangeApplied(ctx context.Context, changeID, entityUUID string) (bool, error) {
	return a.Store.ChangeApplied(ctx, changeID, entityUUID)
}

// TaskRows reads the rows of the tasks of uuids that exist, with their criteria, in the order
// of uuids: the tasks an approval a reset re-applies made.
func (a *Activities) TaskRows(ctx context.Context, uuids []string) (store.TaskRows, error) {
	return a.Store.TaskRows(ctx, uuids)
}

// Blockers reads the unresolved dependencies of a task (docs/rules.md §5.3).
func (a *Activities) Blockers(ctx context.Context, taskUUID string) ([]store.TaskLink, error) {
	return a.Store.Blockers(ctx, taskUUID)
}

// CreateTaskBatch writes a chorus_create_tasks batch in one transaction and returns the
// warnings of the dependencies that could not be added.
func (a *Activities) CreateTaskBatch(ctx context.Context, b store.TaskBatch) ([]string, error) {
	out, err := a.Store.CreateTaskBatch(ctx, b)
	if err != nil {
		return out, outcome(err)
	}
	return out, a.refreshBatchIdeas(ctx, b)
}

// refreshBatchIdeas: tasks created in a proposal count for its input ideas (docs/rules.md §5.1).
func (a *Activities) refreshBatchIdeas(ctx context.Context, b store.TaskBatch) error {
	var proposals []string
	for _, t := range b.Tasks {
		if t.ProposalUUID != nil && !slices.Contains(proposals, *t.ProposalUUID) {
			proposals = append(proposals, *t.ProposalUUID)
		}
	}
	return a.refreshProposalIdeas(ctx, proposals...)
}

// TaskBatchStart is a chorus_create_tasks batch and the starts of its tasks' workflows.
type TaskBatchStart struct {
	Batch  store.TaskBatch `json:"batch"`
	Starts []WorkflowStart `json:"starts"`
}

// CreateTaskBatchAndStart writes the batch as CreateTaskBatch does, then starts its tasks'
// workflows as StartWorkflows does, in one activity: one dispatch and one workflow task fewer
// per chorus_create_tasks call than the two activities one after the other. A retry after the
// write committed finds the batch applied (its change id, docs/write-path.md) and goes on to
// the starts, which leave running workflows alone; a refused write starts nothing.
func (a *Activities) CreateTaskBatchAndStart(ctx context.Context, in TaskBatchStart) ([]string, error) {
	out, err := a.Store.CreateTaskBatch(ctx, in.Batch)
	if err != nil {
		return nil, outcome(err)
	}
	if err := a.StartWorkflows(ctx, in.Starts); err != nil {
		return nil, err
	}
	return out, a.refreshBatchIdeas(ctx, in.Batch)
}
