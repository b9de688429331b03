package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/chorus-dev/chorus/store"
)

// ApplyIdeaChange writes one idea command's change by the write protocol (docs/write-path.md),
// then asks the ideas whose derived status it may change to refresh their progress.
func (a *Activities) ApplyIdeaChange(ctx context.Context, c store.IdeaChange) error {
	var former string
	if c.Delete || c.SetsParent() {
		var err error
		if former, err = a.formerParent(ctx, c.UUID); err != nil {
			return err
		}
	}
	if err := a.Store.ApplyIdeaChange(ctx, c); err != nil {
		return outcome(err)
	}
	return a.ideaRefreshes(ctx, c, former)
}

// IdeaLineage reads what docs/rules.md §5.5 needs to accept parentUUID as the parent of ideaUUID.
func (a *Activities) IdeaLineage(ctx context.Context, companyUUID, ideaUUID, parentUUID string) (store.Lineage, error) {
	return a.Store.IdeaLineage(ctx, companyUUID, ideaUUID, parentUUID)
}

// MoveIdeaCascade writes a move of an idea with its cascade in one transaction (docs/rules.md
// §5.9) and reports what it moved. The idea leaves its parent, whose roll-up loses a child, and
// reads its own progress again in its new project.
func (a *Activities) MoveIdeaCascade(ctx context.Context, m store.IdeaMove) (store.MoveOutcome, error) {
	former, err := a.formerParent(ctx, m.UUID)
	if err != nil {
		return store.MoveOutcome{}, err
	}
	out, err := a.Store.MoveIdeaCascade(ctx, m)
	if err != nil {
		return out, outcome(err)
	}
	return out, a.refreshIdeas(ctx, former, m.UUID)
}

// SignalEntityMoved is the signal that tells a lifecycle entity's workflow that a move of an
// idea moved its row (EntityMoved).
const SignalEntityMoved = "entity_moved"

// EntityMoved is the payload of SignalEntityMoved: the row's project and where the move left it.
// A workflow adopts it when the row is ahead of its state (docs/write-path.md, "Who writes what").
type EntityMoved struct {
	ProjectUUID string `json:"projectUuid"`
	// ProjectName is the project's name, for the workflow's memo; "" when unknown (older signals).
	ProjectName string `json:"projectName,omitempty"`
	Version     int64  `json:"version"`
	ChangeID    string `json:"changeId"`
	// Status is the row's status after the move, "" when unknown: for a task its proposal's revoke
	// had closed just before, the close the workflow has not adopted yet.
	Status string `json:"status,omitempty"`
}

// MovedSignal is one workflow to tell about a move.
type MovedSignal struct {
	WorkflowID string      `json:"workflowId"`
	Moved      EntityMoved `json:"moved"`
}

// FollowMove signals each moved entity's workflow, retried until every signal is delivered. A
// workflow that does not run (deleted meanwhile, or ended under its row) is left out: chorus ops
// check lists a row without its running workflow, and repair restarts it from the moved row.
func (a *Activities) FollowMove(ctx context.Context, signals []MovedSignal) error {
	if a.Temporal == nil {
		return errors.New("no Temporal client: the worker was built without one")
	}
	for i, s := range signals {
		err := a.Temporal.SignalWorkflow(ctx, s.WorkflowID, "", SignalEntityMoved, s.Moved)
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			return fmt.Errorf("signal %s (%d of %d): %w", s.WorkflowID, i+1, len(signals), err)
		}
		activity.RecordHeartbeat(ctx, i)
	}
	return nil
}
