package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Moving an idea to another project (docs/rules.md §5.9, docs/write-path.md "Who writes what").
// The idea's workflow writes the whole cascade in one transaction: its own row by the write
// protocol, every other idea, proposal and task row it moves one version on, marked with the
// move's change id and journaled. Then an activity signals each of those rows' workflows,
// retried until every signal is delivered; each adopts the row (its project and version) when
// the row is ahead of its state. A workflow whose own write meets a moved row first adopts the
// move there and refuses the command (nothing was written), so the caller retries it in the new
// project. A crash anywhere leaves either nothing written or the committed cascade, whose signals
// the idea's workflow sends when it resumes; chorus ops repair adopts a move whose signal never
// came (ops.Repair).

// UpdateMoveIdea is chorus_move_idea's update.
const UpdateMoveIdea = "chorus_move_idea"

// SignalEntityMoved tells a workflow that a move of an idea moved its row (EntityMoved).
const SignalEntityMoved = activities.SignalEntityMoved

// EntityMoved is the payload of SignalEntityMoved.
type EntityMoved = activities.EntityMoved

// MoveIdeaInput moves an idea with its cascade to another project.
type MoveIdeaInput struct {
	Actor             Actor  `json:"actor"`
	TargetProjectUUID string `json:"targetProjectUuid"`
	// TargetProjectName is the target project's name, for the memos ("" in older histories).
	TargetProjectName string `json:"targetProjectName"`
}

// MoveIdea is chorus_move_idea.
var MoveIdea = Command[MoveIdeaInput, IdeaResult]{UpdateMoveIdea, vocab.EntityIdea}

const moveErrPrefix = "Failed to move Idea: "

func (s IdeaState) checkMove(in MoveIdeaInput) error {
	if err := s.exists(); err != nil {
		return Refuse(KindNotFound, moveErrPrefix+"Idea not found")
	}
	if in.TargetProjectUUID == s.ProjectUUID {
		return Refuse(KindConflict, moveErrPrefix+"Idea is already in the target project")
	}
	return nil
}

func (w *ideaWorkflow) move(ctx workflow.Context, in MoveIdeaInput) (IdeaResult, error) {
	n, wr := w.next(ctx)
	from := n.ProjectUUID
	n.ProjectUUID, n.ProjectName = in.TargetProjectUUID, in.TargetProjectName
	m := store.IdeaMove{Write: wr, UUID: n.UUID, CompanyUUID: n.CompanyUUID, FromProject: from, ToProject: in.TargetProjectUUID,
		Activity: w.activity(n, wr, in.Actor, "moved", nil)}
	var a *activities.Activities
	var out store.MoveOutcome
	if err := persist(ctx, a.MoveIdeaCascade, m).Get(ctx, &out); err != nil {
		if refusal := w.adoptMove(ctx, err); refusal != nil {
			return IdeaResult{}, refusal
		}
		if err = diverged(ctx, vocab.EntityIdea, err); isChorusError(err) {
			if e, ok := FromTemporal(err).(*Error); ok && e.Kind == KindNotFound {
				return IdeaResult{}, Refuse(e.Kind, moveErrPrefix+"%s", e.Message)
			}
			return IdeaResult{}, err
		}
		return IdeaResult{}, fmt.Errorf("could not move the idea: %w", err)
	}
	n.Row = mark(wr)
	w.state = n
	w.publish(ctx)
	if err := followMove(ctx, out.Rows, in.TargetProjectUUID, in.TargetProjectName); err != nil {
		return IdeaResult{}, err
	}
	res := result(w.state)
	res.Moved = &out.Counts
	return res, nil
}

// followMove tells every row's workflow where the move left its row, through an activity
// retried until all the signals are delivered. projectName is the project's name ("" when unknown).
func followMove(ctx workflow.Context, rows []store.MovedRow, project, projectName string) error {
	if len(rows) == 0 {
		return nil
	}
	signals := make([]activities.MovedSignal, 0, len(rows))
	for _, r := range rows {
		var id string
		switch r.Table {
		case "ideas":
			id = vocab.IdeaID(r.UUID)
		case "proposals":
			id = vocab.ProposalID(r.UUID)
		default:
			id = vocab.TaskID(r.UUID)
		}
		signals = append(signals, activities.MovedSignal{WorkflowID: id,
			Moved: EntityMoved{ProjectUUID: project, ProjectName: projectName, Version: r.Version, ChangeID: r.ChangeID,
				Status: r.Status}})
	}
	var a *activities.Activities
	if err := persist(ctx, a.FollowMove, signals).Get(ctx, nil); err != nil {
		return fmt.Errorf("could not tell the moved entities' workflows: %w", err)
	}
	return nil
}

// movedBy reports whether a conflict is a move of an idea (a change of another idea's workflow)
// that moved this entity's row ahead of row, the state's.
func movedBy(ctx workflow.Context, c *store.ProjectionConflict, row RowMark) bool {
	own := workflow.GetInfo(ctx).WorkflowExecution.ID + "#"
	return c.Found && c.Version > row.Version && c.ProjectUUID != "" &&
		strings.HasPrefix(c.ChangeID, string(vocab.EntityIdea)+"/") && !strings.HasPrefix(c.ChangeID, own)
}

// movedRefusal answers a command whose write met its entity's move.
func movedRefusal(entity vocab.Entity) *Error {
	return Refuse(KindConflict, "This %s was moved to another project, with its idea, while your call ran; nothing was "+
		"changed. Retry the call.", entity)
}

// receiveMoves runs follow for every SignalEntityMoved, in its own coroutine (receiveSignals),
// and returns a function that handles the signals still buffered (call it before continuing as
// new).
func receiveMoves(ctx workflow.Context, mu *commandLock, follow func(workflow.Context, EntityMoved)) func(workflow.Context) {
	return receiveSignals(ctx, mu, SignalEntityMoved, follow)
}

// ---- each workflow adopts a move ----

// placement is where a workflow's state says its row is: the project (uuid and name, the name
// for the memo) and the row mark. A move changes all three.
type placement struct {
	project, projectName *string
	row                  *RowMark
}

// adopt places the state in project (named projectName, "" when unknown) at row.
func (p placement) adopt(project, projectName string, row RowMark) {
	*p.project, *p.projectName, *p.row = project, projectName, row
}

// followMoveInto adopts a delivered move into a workflow's placement, under its command lock,
// unless the workflow is already past it; publish refreshes its search attributes and memo.
func followMoveInto(ctx workflow.Context, mu *commandLock, at placement, publish func(workflow.Context), sig EntityMoved) {
	if err := mu.Lock(ctx); err != nil {
		return
	}
	defer mu.Unlock()
	if sig.Version > at.row.Version {
		at.adopt(sig.ProjectUUID, sig.ProjectName, RowMark{Version: sig.Version, ChangeID: sig.ChangeID})
		publish(ctx)
	}
}

// adoptMoveInto adopts the move a failed write met and returns the refusal for entity; nil when
// err is not such a conflict.
func adoptMoveInto(ctx workflow.Context, err error, at placement, publish func(workflow.Context), entity vocab.Entity) *Error {
	c, ok := activities.AsProjectionConflict(err)
	if !ok || !movedBy(ctx, c, *at.row) {
		return nil
	}
	at.adopt(c.ProjectUUID, c.ProjectName, RowMark{Version: c.Version, ChangeID: c.ChangeID})
	publish(ctx)
	return movedRefusal(entity)
}

func (w *ideaWorkflow) placement() placement {
	return placement{&w.state.ProjectUUID, &w.state.ProjectName, &w.state.Row}
}

func (w *ideaWorkflow) followMove(ctx workflow.Context, sig EntityMoved) {
	followMoveInto(ctx, w.mu, w.placement(), w.publish, sig)
}

func (w *ideaWorkflow) adoptMove(ctx workflow.Context, err error) *Error {
	return adoptMoveInto(ctx, err, w.placement(), w.publish, vocab.EntityIdea)
}

func (w *proposalWorkflow) placement() placement {
	return placement{&w.state.ProjectUUID, &w.state.ProjectName, &w.state.Row}
}

func (w *proposalWorkflow) followMove(ctx workflow.Context, sig EntityMoved) {
	followMoveInto(ctx, w.mu, w.placement(), w.publish, sig)
}

func (w *proposalWorkflow) adoptMove(ctx workflow.Context, err error) *Error {
	return adoptMoveInto(ctx, err, w.placement(), w.publish, vocab.EntityProposal)
}

func (w *taskWorkflow) followMove(ctx workflow.Context, sig EntityMoved) {
	if err := w.mu.Lock(ctx); err != nil {
		return
	}
	defer w.mu.Unlock()
	if sig.Version > w.state.Row.Version {
		w.adoptTaskRow(sig.ProjectUUID, sig.ProjectName, RowMark{Version: sig.Version, ChangeID: sig.ChangeID}, sig.Status)
		w.publish(ctx)
	}
}

// adoptTaskRow takes on a row a move left: its project and mark, and the close of a revoke that
// came just before the move (a task's only other foreign change; closed is final), which ended
// the claim's lease as followRevoke does (the revoke wrote the row without one).
func (w *taskWorkflow) adoptTaskRow(project, projectName string, row RowMark, status string) {
	w.state.ProjectUUID, w.state.ProjectName, w.state.Row = project, projectName, row
	if status == string(vocab.TaskClosed) {
		w.state.Status, w.state.Lease = status, nil
	}
}

func (w *taskWorkflow) adoptMove(ctx workflow.Context, err error) *Error {
	c, ok := activities.AsProjectionConflict(err)
	if !ok || !movedBy(ctx, c, w.state.Row) {
		return nil
	}
	w.adoptTaskRow(c.ProjectUUID, c.ProjectName, RowMark{Version: c.Version, ChangeID: c.ChangeID}, c.Status)
	w.publish(ctx)
	return movedRefusal(vocab.EntityTask)
}
