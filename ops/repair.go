package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// ErrSkipped is Repair's error when it left a finding alone on purpose: the entity was changing
// (a command was being applied, or its row or state moved between the repair's reads). Nothing
// was written; the error's text says why. Check again later.
var ErrSkipped = errors.New("skipped")

// ErrCannotRepair is Repair's error for a finding it cannot resolve (StuckActivity, LostRows);
// the error's text says what an operator can do.
var ErrCannotRepair = errors.New("cannot repair")

func skipped(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSkipped, fmt.Sprintf(format, args...))
}

// Repair resolves one finding and says what it did: a diverged or missing row is rewritten
// from its running workflow (the workflow is the truth, as after a `temporal workflow reset`);
// a missing or closed workflow gets a new run started from its rows.
//
// It checks the entity again first, and rewrites a row only when that check confirms the
// finding on a workflow with no change in flight; it then re-reads the workflow right before
// writing, and writes only if the row is still exactly what it checked (store.RowGuard). So it
// never overwrites a change made meanwhile, nor a row legitimately ahead of a workflow that is
// applying a command: it returns an ErrSkipped error saying why instead. A finding that no longer
// holds is left alone, with a nil error. StuckActivity and LostRows findings get an
// ErrCannotRepair error saying what to do.
func (o *Ops) Repair(ctx context.Context, f Finding) (string, error) {
	entity, uuid, err := vocab.ParseWorkflowID(f.WorkflowID)
	if err != nil {
		return "", err
	}
	switch f.Kind {
	case Diverged, MissingRow:
		return o.rewriteRow(ctx, entity, uuid)
	case MissingWorkflow, ClosedWorkflow:
		return o.restart(ctx, entity, uuid)
	case StuckActivity:
		return "", fmt.Errorf("%w: %s is stuck on a failing activity (%s). Look at the failure and fix its cause; or "+
			"terminate the workflow (temporal workflow terminate -w %s) and run chorus ops repair %s, which restarts it "+
			"from its rows", ErrCannotRepair, f.WorkflowID, f.Detail, f.WorkflowID, f.WorkflowID)
	case LostRows:
		return "", fmt.Errorf("%w: %s. Restore them from a backup of the database (then run chorus ops check %s)",
			ErrCannotRepair, f.Detail, f.WorkflowID)
	case UnresolvedCount:
		return o.recount(ctx, uuid)
	}
	return "", fmt.Errorf("no repair for a %q finding", f.Kind)
}

// recount recounts a task's unresolved dependencies from its edges, in one transaction with the
// project locked as every write that counts them (store.RecountUnresolved).
func (o *Ops) recount(ctx context.Context, uuid string) (string, error) {
	t, err := o.Store.TaskRow(ctx, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return "nothing to do: the task row is gone", nil
	} else if err != nil {
		return "", err
	}
	n, err := o.Store.RecountUnresolved(ctx, t.ProjectUUID, uuid)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "nothing to do: the count of unresolved dependencies agrees with the task's dependencies now", nil
	}
	return "recounted the task's unresolved dependencies from its dependencies", nil
}

// rewriteRow resolves a Diverged or MissingRow finding (Repair): it checks the entity again and
// decides what the finding calls for (nothing, a skip, adopting a move or revoke, restarting the
// workflow from rows ahead of it, ending a run whose entity its own change deleted), and
// otherwise writes the row from the workflow (writeFromWorkflow).
func (o *Ops) rewriteRow(ctx context.Context, entity vocab.Entity, uuid string) (string, error) {
	v, err := o.inspect(ctx, entity, uuid)
	if err != nil {
		return "", err
	}
	ob := v.last
	if v.busy != "" {
		return "", skipped("%s is changing (%s); check it again later", v.id, v.busy)
	}
	kinds := map[string]bool{}
	for _, f := range v.findings {
		kinds[f.Kind] = true
	}
	switch {
	case kinds[StuckActivity]:
		return "", skipped("%s is stuck on a failing activity; its row is not rewritten while a change is in flight", v.id)
	case !kinds[Diverged] && !kinds[MissingRow] && kinds[LostRows]:
		return o.Repair(ctx, v.findings[slices.IndexFunc(v.findings, func(f Finding) bool { return f.Kind == LostRows })])
	case !kinds[Diverged] && !kinds[MissingRow]:
		return "nothing to do: the row agrees with its workflow now", nil
	case len(ob.run.pending) > 0:
		return "", skipped("%s has %s pending: it is applying a change", v.id, ob.run.pending[0].Type)
	}
	if ownNextChange(ob) && ob.run.pendingTask {
		return "", skipped("the row holds %s's own next change (%s), which the workflow may still record; if it stays so, "+
			"terminate the workflow and run chorus ops repair %s to restart it from its rows", v.id, ob.row.changeID, v.id)
	}
	// A move or revoke that is all the workflow lacks (the row one version ahead) is adopted through
	// its signal, as its delivery would have.
	if mover, ok := ob.movedRow(); ok && ob.row.version == ob.wf.version+1 {
		return o.adoptMove(ctx, ob, mover)
	}
	if ob.revokedRow() && ob.row.version == ob.wf.version+1 {
		return o.adoptRevoke(ctx, ob)
	}
	// Rows that hold changes Chorus applied (the change journal lists the row's) and the workflow
	// lost (a reset that dropped updates or signals, a move or revoke never delivered): agents were
	// told those commands succeeded, so the rows are the truth, and the workflow follows them
	// forward instead of the rows being rolled back.
	if forward, err := o.rowsAhead(ctx, ob, uuid); err != nil {
		return "", err
	} else if forward {
		return o.restartFromRows(ctx, ob, entity, uuid)
	}
	// A move or revoke further ahead that the journal does not list (a revoke written before
	// revokes were journaled) is adopted through its signal too.
	if mover, ok := ob.movedRow(); ok {
		return o.adoptMove(ctx, ob, mover)
	}
	if ob.revokedRow() {
		return o.adoptRevoke(ctx, ob)
	}
	if deletedBy, err := o.deletedByOwnChange(ctx, ob, uuid); err != nil {
		return "", err
	} else if deletedBy != "" {
		return o.endDeleted(ctx, ob, deletedBy)
	}
	return o.writeFromWorkflow(ctx, v, entity, uuid)
}

// writeFromWorkflow writes v's entity's row from its workflow's state, after re-verifying right
// before writing that the run is the one observed, with nothing in flight and the same state, and
// that the state's project is in this database. The write is guarded by the row as observed
// (store.RowGuard): a row that moved meanwhile is skipped, nothing written.
func (o *Ops) writeFromWorkflow(ctx context.Context, v verdict, entity vocab.Entity, uuid string) (string, error) {
	ob := v.last
	// Re-verify right before writing: the same run, nothing in flight, the same state.
	again, err := o.describe(ctx, v.id)
	if err != nil {
		return "", err
	}
	if again.runID != ob.run.runID || len(again.pending) > 0 {
		return "", skipped("%s started a change while it was being repaired", v.id)
	}
	wf, state, err := o.queryState(ctx, entity, v.id)
	if err != nil {
		return "", err
	}
	if !wf.same(ob.wf) {
		return "", skipped("%s's state moved while it was being repaired", v.id)
	}
	if project := wf.Values["project_uuid"]; project != "" {
		if exists, err := o.Store.LifecycleProjectExists(ctx, project); err != nil {
			return "", err
		} else if !exists {
			return "", foreignWorkflow(v.id, entity, project)
		}
	}
	r, lostDrafts := rowRepair(ob, entity, uuid, state)
	lost := 0
	for p := range wf.Parts {
		if _, ok := ob.row.Parts[p]; !ok && lostable(p) {
			lost++
		}
	}
	if err := o.Store.RepairRow(ctx, r); errors.Is(err, store.ErrRowMoved) {
		return "", skipped("%s's row changed since it was checked; nothing was written", v.id)
	} else if store.IsConstraintViolation(err) {
		return "", fmt.Errorf("%w: the database refused %s's row as its workflow holds it (%v): a row it refers to (its "+
			"project, parent idea or proposal) is not in this database. If the workflow is not this deployment's, terminate it "+
			"(temporal workflow terminate -w %s --reason ...); if rows were deleted by hand, restore them from a backup. "+
			"Running repair again changes nothing", ErrCannotRepair, v.id, err, v.id)
	} else if err != nil {
		return "", err
	}
	return repairedMessage(entity, ob, wf.version, r, lost, lostDrafts), nil
}

// rowRepair is the store.RowRepair that writes state (the workflow's, as queried) over ob's row,
// guarded by the row as observed, and how many of the drafts the workflow holds the row lacks
// (proposals only).
func rowRepair(ob observation, entity vocab.Entity, uuid string, state any) (store.RowRepair, int) {
	r := store.RowRepair{UUID: uuid, Guard: store.RowGuard{Missing: !ob.row.exists, Version: ob.row.version, ChangeID: ob.row.changeID},
		Undo: rollbackActivity(entity, uuid, state, ob.row.version)}
	var lostDrafts int
	switch s := state.(type) {
	case workflows.IdeaState:
		p := s.Projection()
		r.Table, r.Model, r.Columns, r.Rounds = "ideas", &p, workflows.IdeaColumns, map[string]string{}
		for _, rd := range s.Rounds {
			r.Rounds[rd.UUID] = rd.Status
		}
	case workflows.ProposalState:
		p := s.Projection()
		r.Table, r.Model, r.Columns = "proposals", &p, workflows.ProposalColumns
		r.Drafts = &store.DraftLists{Documents: s.Documents, Tasks: s.Tasks}
		lostDrafts = missingDrafts(ob.row.Parts["document drafts"], s.Documents) +
			missingDrafts(ob.row.Parts["task drafts"], s.Tasks)
	case workflows.TaskState:
		p := s.Projection()
		r.Table, r.Model, r.Columns = "tasks", &p, workflows.TaskColumns
		for _, c := range s.Criteria {
			r.Criteria = append(r.Criteria, store.CriterionMarks{UUID: c.UUID, Status: c.Status, DevStatus: c.DevStatus})
		}
	}
	return r, lostDrafts
}

// repairedMessage says what writing r did: the row rewritten or re-inserted from its workflow (at
// version), what could not be recreated (lost owned rows, lostDrafts drafts, the columns the
// workflow does not hold) and the changes it rolled back.
func repairedMessage(entity vocab.Entity, ob observation, version int64, r store.RowRepair, lost, lostDrafts int) string {
	owned := "acceptance criteria"
	if entity == vocab.EntityIdea {
		owned = "elaboration rounds"
	}
	msg := fmt.Sprintf("rewrote the %s row from its workflow (version %d)", entity, version)
	switch {
	case r.Guard.Missing && lost > 0:
		msg = fmt.Sprintf("re-inserted the %s row from its workflow (version %d). What lived only in the database cannot be "+
			"recreated; restore it from a backup: the columns the workflow does not hold (its description or content, among "+
			"others) and the %d %s rows that went with the row", entity, version, lost, owned)
	case r.Guard.Missing:
		msg = fmt.Sprintf("re-inserted the %s row from its workflow (version %d). The columns the workflow does not hold "+
			"(its description or content, among others) are empty: restore them from a backup", entity, version)
	case lost > 0:
		msg += fmt.Sprintf(". %d %s rows are gone and cannot be recreated (their text lived only in the database): restore "+
			"them from a backup", lost, owned)
	}
	if lostDrafts > 0 && !r.Guard.Missing {
		msg += fmt.Sprintf(". The row lost %d of the drafts the workflow holds; their text lived only in the database, so "+
			"they cannot be recreated: restore them from a backup, or remove them with the draft tools", lostDrafts)
	}
	if n := r.Undo.Undone; n > 0 {
		msg += fmt.Sprintf(". This rolled back %d change(s) Chorus had applied (row version %d): the row's history past the "+
			"workflow cannot be adopted, since it does not end in a change Chorus made. Their change journal entries are marked "+
			"rolled back, a retry of their calls with the same requestId is told so, and a rolled_back activity on the %s "+
			"records it", n, ob.row.version, entity)
	}
	return msg
}

// foreignWorkflow is the error of a repair whose workflow holds an entity of a project this
// database does not have.
func foreignWorkflow(id string, entity vocab.Entity, project string) error {
	return fmt.Errorf("%w: %s holds a %s of project %s, which is not in this database: the workflow belongs to another "+
		"deployment (one using the same Temporal namespace and task queue), or its project was deleted behind Chorus's back. "+
		"Terminate it (temporal workflow terminate -w %s --reason \"not this deployment's\"), or restore the project from a "+
		"backup. Running repair again changes nothing", ErrCannotRepair, id, entity, project, id)
}

// rollbackActivity is what a repair that rolls the row back from version from records
// (store.RowRepair.Undo): an activity on the entity, its actor Chorus itself.
func rollbackActivity(entity vocab.Entity, uuid string, state any, from int64) *store.Rollback {
	var company, project string
	var to int64
	switch s := state.(type) {
	case workflows.IdeaState:
		company, project, to = s.CompanyUUID, s.ProjectUUID, s.Row.Version
	case workflows.ProposalState:
		company, project, to = s.CompanyUUID, s.ProjectUUID, s.Row.Version
	case workflows.TaskState:
		company, project, to = s.CompanyUUID, s.ProjectUUID, s.Row.Version
	}
	return &store.Rollback{Activity: store.Activity{UUID: workflows.DerivedUUID("rolled-back", uuid, fmt.Sprint(from), fmt.Sprint(to)),
		CompanyUUID: company, ProjectUUID: project, TargetType: string(entity), TargetUUID: uuid, ActorType: "system",
		ActorUUID: workflows.SystemActorUUID, Action: "rolled_back"}}
}

// rowsAhead reports whether the row is ahead of the workflow's state with a change the change
// journal lists at the row's version: a change Chorus applied (and an agent was told of) that the
// workflow no longer holds.
func (o *Ops) rowsAhead(ctx context.Context, ob observation, uuid string) (bool, error) {
	if !ob.row.exists || !ob.wf.exists || ob.row.version <= ob.wf.version {
		return false, nil
	}
	ok, err := o.Store.ChangeAppliedAt(ctx, ob.row.changeID, uuid, ob.row.version)
	if err != nil {
		return false, fmt.Errorf("read the change journal of %s: %w", ob.id, err)
	}
	return ok, nil
}

// restartFromRows ends the workflow's run and starts a new one from the rows (the workflow
// follows the rows forward), after checking once more that the run is the one observed and has
// nothing in flight.
func (o *Ops) restartFromRows(ctx context.Context, ob observation, entity vocab.Entity, uuid string) (string, error) {
	again, err := o.describe(ctx, ob.id)
	if err != nil {
		return "", err
	}
	if again.runID != ob.run.runID || len(again.pending) > 0 {
		return "", skipped("%s started a change while it was being repaired", ob.id)
	}
	reason := fmt.Sprintf("chorus ops repair: the rows hold changes this run lost (version %d, change %s; the run holds "+
		"version %d); restarting from the rows", ob.row.version, ob.row.changeID, ob.wf.version)
	if err := o.Flows.Temporal.TerminateWorkflow(ctx, ob.id, ob.run.runID, reason); err != nil {
		return "", fmt.Errorf("terminate %s: %w", ob.id, err)
	}
	did, err := o.restart(ctx, entity, uuid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("the rows hold changes Chorus applied that the workflow no longer held (row version %d, workflow "+
		"version %d, as after a reset): ended the run and %s, so commands agents were told succeeded stay in effect",
		ob.row.version, ob.wf.version, did), nil
}

// deletedByOwnChange returns the change that deleted the entity's row when the row is gone by a
// command of the entity's own workflow that the workflow no longer holds (a reset to before the
// delete), "" otherwise.
func (o *Ops) deletedByOwnChange(ctx context.Context, ob observation, uuid string) (string, error) {
	if ob.row.exists || !ob.wf.exists {
		return "", nil
	}
	change, version, err := o.Store.LastChange(ctx, uuid)
	if err != nil {
		return "", fmt.Errorf("read the change journal of %s: %w", ob.id, err)
	}
	if version > ob.wf.version && strings.HasPrefix(change, ob.id+"#") {
		return change, nil
	}
	return "", nil
}

// endDeleted ends the run of a workflow whose entity its own command deleted: the entity stays
// deleted, as its agent was told.
func (o *Ops) endDeleted(ctx context.Context, ob observation, change string) (string, error) {
	reason := fmt.Sprintf("chorus ops repair: the entity was deleted by %s, which this run lost", change)
	if err := o.Flows.Temporal.TerminateWorkflow(ctx, ob.id, ob.run.runID, reason); err != nil {
		return "", fmt.Errorf("terminate %s: %w", ob.id, err)
	}
	return fmt.Sprintf("the row was deleted by the workflow's own change %s, which the workflow no longer held (as after "+
		"a reset): ended the run, so the entity stays deleted as its agent was told", change), nil
}

// adoptRevoke tells a task's workflow about its proposal's revoke that its row holds and its state
// lacks (the signal never arrived): the revoke committed, and the task follows it.
func (o *Ops) adoptRevoke(ctx context.Context, ob observation) (string, error) {
	_, proposal, err := vocab.ParseWorkflowID(ob.proposalID)
	if err != nil {
		return "", err
	}
	sig := workflows.ProposalRevoked{ProposalUUID: proposal, Row: workflows.RowMark{Version: ob.row.version, ChangeID: ob.row.changeID},
		At: time.Now().UTC()}
	if err := o.Flows.Temporal.SignalWorkflow(ctx, ob.id, "", workflows.SignalProposalRevoked, sig); err != nil {
		return "", fmt.Errorf("signal %s: %w", ob.id, err)
	}
	return fmt.Sprintf("the row holds its proposal's revoke, which the workflow had not taken in: told the workflow, which "+
		"adopts it (closed, version %d)", sig.Row.Version), nil
}

// missingDrafts counts the draft uuids in held (the workflow's) that the row's comma-separated
// list lacks.
func missingDrafts(row string, held []string) int {
	have := strings.Split(row, ",")
	n := 0
	for _, id := range held {
		if !slices.Contains(have, id) {
			n++
		}
	}
	return n
}

// adoptMove tells a workflow about the move of an idea its row holds and its state lacks (the
// signal of the move never arrived): the row is the truth here, since the move committed and
// rewriting the row would undo it for this entity alone.
func (o *Ops) adoptMove(ctx context.Context, ob observation, mover string) (string, error) {
	sig := workflows.EntityMoved{ProjectUUID: ob.row.Values["project_uuid"], Version: ob.row.version, ChangeID: ob.row.changeID,
		Status: ob.row.status}
	name, err := o.Store.ProjectName(ctx, sig.ProjectUUID)
	if err != nil {
		return "", err
	}
	sig.ProjectName = name
	if err := o.Flows.Temporal.SignalWorkflow(ctx, ob.id, "", workflows.SignalEntityMoved, sig); err != nil {
		return "", fmt.Errorf("signal %s: %w", ob.id, err)
	}
	return fmt.Sprintf("the row holds a move by %s that the workflow had not taken in: told the workflow, which adopts "+
		"it (project %s, version %d)", mover, sig.ProjectUUID, sig.Version), nil
}

func (o *Ops) restart(ctx context.Context, entity vocab.Entity, uuid string) (string, error) {
	id := vocab.WorkflowID(entity, uuid)
	if r, err := o.describe(ctx, id); err != nil {
		return "", err
	} else if r.status == "running" {
		return "nothing to do: the workflow runs now", nil
	}
	var state any
	switch entity {
	case vocab.EntityIdea:
		i, err := o.Store.IdeaRow(ctx, uuid)
		if err != nil {
			return "", err
		}
		rounds, err := o.Store.Elaboration(ctx, uuid)
		if err != nil {
			return "", err
		}
		s := workflows.IdeaStateFromRows(i, rounds)
		if s.ProjectName, err = o.Store.ProjectName(ctx, s.ProjectUUID); err != nil {
			return "", err
		}
		state = s
	case vocab.EntityProposal:
		p, err := o.Store.ProposalDrafts(ctx, uuid)
		if err != nil {
			return "", err
		}
		s := workflows.ProposalStateFromRow(p)
		if s.ProjectName, err = o.Store.ProjectName(ctx, s.ProjectUUID); err != nil {
			return "", err
		}
		state = s
	default:
		t, err := o.Store.TaskRow(ctx, uuid)
		if err != nil {
			return "", err
		}
		criteria, err := o.Store.Criteria(ctx, uuid)
		if err != nil {
			return "", err
		}
		s := workflows.NewTaskState(t, criteria)
		if s.ProjectName, err = o.Store.ProjectName(ctx, s.ProjectUUID); err != nil {
			return "", err
		}
		state = s
	}
	run, err := o.Flows.StartFromState(ctx, state)
	if err != nil {
		return "", err
	}
	return "started a new run from the rows (run " + run + ")", nil
}
