// The run loop of ProposalWorkflow: its start, its handlers and the commit step that writes each
// change and adopts it (docs/write-path.md).

package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// current is the state, for the rules bound with on.
func (w *proposalWorkflow) current() ProposalState { return w.state }

type proposalWorkflow struct {
	state ProposalState
	mu    *commandLock
	// memo is the mark of the memo this run last published (publishShown).
	memo memoMark
	// abandoned: the create update failed, so this run holds no proposal and ends.
	abandoned bool
}

// ProposalWorkflow is the long-lived workflow of one proposal (id "proposal/<uuid>"): it owns
// the proposal's status, drafts and review fields; approval materializes the drafts into
// documents and tasks in one transaction and makes sure a TaskWorkflow runs for each task;
// revoke closes them again. It stays open in every status, so that a command to a closed
// proposal is refused with its state rather than as unknown.
func ProposalWorkflow(ctx workflow.Context, in ProposalRun) error {
	w := &proposalWorkflow{mu: newCommandLock(ctx)}
	if in.State != nil {
		w.state = *in.State
	}
	if err := w.register(ctx); err != nil {
		return err
	}
	pendingFinished := receiveSignals(ctx, w.mu, SignalTaskFinished, w.taskFinished)
	pendingMoves := receiveMoves(ctx, w.mu, w.followMove)
	if w.state.Created {
		w.publish(ctx)
	} else if ok, err := awaitCreated(ctx, func() bool { return w.state.Created || w.abandoned }); err != nil || !ok {
		return err
	}
	again, err := awaitContinueAsNew(ctx, w.mu, func() bool { return w.abandoned })
	if err != nil || !again {
		return err
	}
	pendingMoves(ctx)
	pendingFinished(ctx)
	return workflow.NewContinueAsNewError(ctx, ProposalWorkflowName, ProposalRun{State: &w.state})
}

// taskFinished tallies a task of this proposal that reached done or closed; like every handler
// that touches state, it holds the mutex.
func (w *proposalWorkflow) taskFinished(ctx workflow.Context, sig TaskFinished) {
	if err := w.mu.Lock(ctx); err != nil {
		return
	}
	defer w.mu.Unlock()
	if !slices.Contains(w.state.Finished, sig.TaskUUID) && len(w.state.Finished) < maxTaskDrafts {
		w.state.Finished = append(w.state.Finished, sig.TaskUUID)
		w.publish(ctx)
	}
}

func (w *proposalWorkflow) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (ProposalState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The proposal's workflow state: status, draft uuids, approvals, row version."}); err != nil {
		return err
	}
	recent := func() *Recent { return &w.state.Recent }
	return firstErr(
		registerUpdate(ctx, w.mu, recent, CreateProposal, on(w.current, ProposalState.checkCreate), w.create),
		registerUpdate(ctx, w.mu, recent, AddDocumentDraft, func(in DocumentDraftInput) error { return w.state.checkDocumentDraft("add", false, in) }, w.addDocumentDraft),
		registerUpdate(ctx, w.mu, recent, AddTaskDraft, on(w.current, ProposalState.checkAddTaskDraft), w.addTaskDraft),
		registerUpdate(ctx, w.mu, recent, UpdateDocumentDraft, func(in DocumentDraftInput) error { return w.state.checkDocumentDraft("update", true, in) }, w.updateDocumentDraft),
		registerUpdate(ctx, w.mu, recent, UpdateTaskDraft, on(w.current, ProposalState.checkUpdateTaskDraft), w.updateTaskDraft),
		registerUpdate(ctx, w.mu, recent, RemoveDocumentDraft, func(RemoveDraftInput) error { return w.state.checkRemove("document") }, w.removeDocumentDraft),
		registerUpdate(ctx, w.mu, recent, RemoveTaskDraft, func(RemoveDraftInput) error { return w.state.checkRemove("task") }, w.removeTaskDraft),
		registerUpdate(ctx, w.mu, recent, SubmitProposal, on(w.current, ProposalState.checkSubmit), w.submit),
		registerUpdate(ctx, w.mu, recent, RejectProposal, on(w.current, ProposalState.checkReject), w.reject),
		registerUpdate(ctx, w.mu, recent, ApproveProposal, on(w.current, ProposalState.checkApprove), w.approve),
		registerUpdate(ctx, w.mu, recent, CloseProposal, on(w.current, ProposalState.checkClose), w.close),
		registerUpdate(ctx, w.mu, recent, RevokeProposal, on(w.current, ProposalState.checkRevoke), w.revoke),
		w.gateKeeper().register(ctx, recent, RequestProposalGate, DecideProposalGate),
	)
}

// next starts a change: a copy of the state, and the write that will move the row.
func (w *proposalWorkflow) next(ctx workflow.Context) (ProposalState, store.Write) {
	return w.state.clone(), nextWrite(ctx, w.state.Row, stamp(ctx))
}

// statusChange is the change that moves the proposal's status to n's.
func statusChange(n ProposalState) store.ProposalChange {
	return store.ProposalChange{Patch: store.ProposalPatch{Status: ptr(n.status())}}
}

func (w *proposalWorkflow) activity(n ProposalState, wr store.Write, a Actor, action string, value any) store.Activity {
	return store.Activity{UUID: derivedFrom(wr, "activity", action), CompanyUUID: n.CompanyUUID, ProjectUUID: n.ProjectUUID,
		TargetType: "proposal", TargetUUID: n.UUID, ActorType: a.Type, ActorUUID: a.UUID, Action: action,
		Value: activities.MarshalValue(value), CreatedAt: wr.At}
}

func (w *proposalWorkflow) notifyCreator(n ProposalState, wr store.Write, a Actor, action, message string) store.NotifySpec {
	return store.NotifySpec{Seed: derivedFrom(wr, "notify", action), ProjectUUID: n.ProjectUUID, Action: action,
		EntityType: "proposal", EntityUUID: n.UUID, EntityTitle: n.Title, Message: message, ActorType: a.Type,
		ActorUUID: a.UUID, ActorName: a.Name, Recipients: []store.Recipient{{Type: n.CreatedBy.Type, UUID: n.CreatedBy.UUID}}}
}

// adopt makes n (after the write wr) the state and tells operators.
func (w *proposalWorkflow) adopt(ctx workflow.Context, n ProposalState, wr store.Write) {
	n.Row = mark(wr)
	w.state = n
	w.publish(ctx)
}

// failed words an activity failure: refusals pass, conflicts become the divergence refusal.
func (w *proposalWorkflow) failed(ctx workflow.Context, what string, err error) error {
	if refusal := w.adoptMove(ctx, err); refusal != nil {
		return refusal
	}
	if err = diverged(ctx, vocab.EntityProposal, err); isChorusError(err) {
		return err
	}
	return fmt.Errorf("could not %s: %w", what, err)
}

// commit writes c (made on n by wr) and adopts n.
func (w *proposalWorkflow) commit(ctx workflow.Context, n ProposalState, wr store.Write, c store.ProposalChange) error {
	var a *activities.Activities
	c.Write, c.UUID, c.CompanyUUID = wr, n.UUID, n.CompanyUUID
	if err := persist(ctx, a.ApplyProposalChange, c).Get(ctx, nil); err != nil {
		return w.failed(ctx, "save the proposal", err)
	}
	w.adopt(ctx, n, wr)
	return nil
}

func (w *proposalWorkflow) result() ProposalResult {
	return ProposalResult{UUID: w.state.UUID, Status: w.state.Status}
}

func (w *proposalWorkflow) publish(ctx workflow.Context) {
	s := w.state
	// A proposal has no assignee: ChorusAssignee (which named its creator before ChorusCreator) is
	// unset.
	checked, err := s.Checked()
	holds := s.Created && err == nil
	memo := withDigest(publishedMemo(s.Title, s.ProjectName), holds, checked, err, s.Row.Version)
	publishShown(ctx, shown{memo: memo, mark: newMemoMark(s.Title, s.ProjectName, s.Row.Version, holds), last: &w.memo,
		keywords: map[string]string{
			ProjectUUIDKey.GetName(): s.ProjectUUID, EntityKey.GetName(): string(vocab.EntityProposal), StatusKey.GetName(): s.Status,
			CreatorKey.GetName(): s.CreatedBy.UUID, TitleKey.GetName(): keywordValue(s.Title)},
		unset: []temporal.SearchAttributeKeyKeyword{AssigneeKey}})
	details := fmt.Sprintf("**Proposal** %q is **%s**: %d document draft(s), %d task draft(s), %d approval(s) so far",
		s.Title, s.Status, len(s.Documents), len(s.Tasks), s.Approvals)
	if s.Status == string(vocab.ProposalApproved) {
		details += fmt.Sprintf("; %d of %d task(s) finished", len(s.Finished), len(s.Tasks))
	}
	workflow.SetCurrentDetails(ctx, details+fmt.Sprintf(" (row version %d)", s.Row.Version))
}

func (w *proposalWorkflow) create(ctx workflow.Context, in CreateProposalInput) (ProposalResult, error) {
	if w.state.Created {
		return w.result(), nil
	}
	wr := nextWrite(ctx, RowMark{}, stamp(ctx))
	inputs := in.InputUUIDs
	if inputs == nil {
		inputs = []string{}
	}
	n := ProposalState{Created: true, UUID: in.UUID, CompanyUUID: in.Actor.CompanyUUID, ProjectUUID: in.ProjectUUID,
		ProjectName: in.ProjectName, Title: strings.TrimSpace(in.Title), Status: string(vocab.ProposalDraft), InputType: in.InputType, InputUUIDs: inputs,
		CreatedBy: Party{Type: in.Actor.Type, UUID: in.Actor.UUID}, Recent: w.state.Recent}
	row := n.Projection()
	row.Description, row.CreatedAt, row.UpdatedAt = in.Description, wr.At, wr.At
	if err := w.commit(ctx, n, wr, store.ProposalChange{Insert: &row}); err != nil {
		w.abandoned = true // nothing was created: end rather than linger as an empty workflow
		return ProposalResult{}, err
	}
	return w.result(), nil
}

func (w *proposalWorkflow) draftResult(uuid, title string) ProposalResult {
	r := w.result()
	r.DraftUUID, r.DraftTitle = uuid, title
	return r
}

// commitDraft writes a draft edit; a store refusal for size is worded for the agent.
func (w *proposalWorkflow) commitDraft(ctx workflow.Context, verb, kind string, n ProposalState, wr store.Write, c store.ProposalChange) error {
	err := w.commit(ctx, n, wr, c)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == activities.ErrDraftsTooLarge {
		return Refuse(KindInvalid, "Failed to %s %s draft: %s. Keep long material in documents (chorus_pm_create_document) "+
			"and shorten the drafts.", verb, kind, app.Message())
	}
	return err
}

func (w *proposalWorkflow) addDocumentDraft(ctx workflow.Context, in DocumentDraftInput) (ProposalResult, error) {
	n, wr := w.next(ctx)
	d := store.DocumentDraft{UUID: derivedFrom(wr, "document-draft"), Type: *in.Type, Title: strings.TrimSpace(*in.Title), Content: *in.Content}
	n.Documents = append(n.Documents, d.UUID)
	if err := w.commitDraft(ctx, "add", "document", n, wr, store.ProposalChange{AddDocument: &d}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(d.UUID, d.Title), nil
}

func (w *proposalWorkflow) updateDocumentDraft(ctx workflow.Context, in DocumentDraftInput) (ProposalResult, error) {
	n, wr := w.next(ctx)
	p := store.DocumentDraftPatch{UUID: in.DraftUUID, Type: in.Type, Content: in.Content}
	title := ""
	if in.Title != nil {
		title = strings.TrimSpace(*in.Title)
		p.Title = &title
	}
	if err := w.commitDraft(ctx, "update", "document", n, wr, store.ProposalChange{UpdateDocument: &p}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, title), nil
}

func (w *proposalWorkflow) addTaskDraft(ctx workflow.Context, in TaskDraftInput) (ProposalResult, error) {
	n, wr := w.next(ctx)
	t := store.TaskDraft{UUID: derivedFrom(wr, "task-draft"), Title: strings.TrimSpace(*in.Title), Description: in.Description,
		StoryPoints: in.StoryPoints, Priority: in.Priority, Kind: in.Kind, AcceptanceCriteriaItems: NormalizeCriteria(in.Criteria),
		DependsOnDraftUUIDs: nilIfEmpty(in.DependsOn)}
	n.Tasks = append(n.Tasks, t.UUID)
	if err := w.commitDraft(ctx, "add", "task", n, wr, store.ProposalChange{AddTask: &t}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(t.UUID, t.Title), nil
}

func (w *proposalWorkflow) updateTaskDraft(ctx workflow.Context, in TaskDraftInput) (ProposalResult, error) {
	n, wr := w.next(ctx)
	p := store.TaskDraftPatch{UUID: in.DraftUUID, Description: in.Description, StoryPoints: in.StoryPoints,
		Priority: in.Priority, Kind: in.Kind, SetCriteria: in.SetCriteria, SetDependsOn: in.SetDependsOn,
		DependsOn: nilIfEmpty(in.DependsOn)}
	if in.SetCriteria {
		p.Criteria = NormalizeCriteria(in.Criteria)
	}
	title := ""
	if in.Title != nil {
		title = strings.TrimSpace(*in.Title)
		p.Title = &title
	}
	if err := w.commitDraft(ctx, "update", "task", n, wr, store.ProposalChange{UpdateTask: &p}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, title), nil
}

func (w *proposalWorkflow) removeDocumentDraft(ctx workflow.Context, in RemoveDraftInput) (ProposalResult, error) {
	if !slices.Contains(w.state.Documents, in.DraftUUID) {
		return w.draftResult(in.DraftUUID, ""), nil // removing an unknown draft changes nothing
	}
	n, wr := w.next(ctx)
	n.Documents = nilIfEmpty(slices.DeleteFunc(n.Documents, func(u string) bool { return u == in.DraftUUID }))
	if err := w.commit(ctx, n, wr, store.ProposalChange{RemoveDocument: in.DraftUUID}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, ""), nil
}

func (w *proposalWorkflow) removeTaskDraft(ctx workflow.Context, in RemoveDraftInput) (ProposalResult, error) {
	if !slices.Contains(w.state.Tasks, in.DraftUUID) {
		return w.draftResult(in.DraftUUID, ""), nil
	}
	n, wr := w.next(ctx)
	n.Tasks = nilIfEmpty(slices.DeleteFunc(n.Tasks, func(u string) bool { return u == in.DraftUUID }))
	if err := w.commit(ctx, n, wr, store.ProposalChange{RemoveTask: in.DraftUUID}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, ""), nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// drafts reads the proposal's row with its drafts back from the database.
func (w *proposalWorkflow) drafts(ctx workflow.Context) (store.Proposal, error) {
	var a *activities.Activities
	var p store.Proposal
	if err := read(ctx, a.ProposalDrafts, w.state.UUID).Get(ctx, &p); err != nil {
		return p, fmt.Errorf("could not read the proposal's drafts: %w", err)
	}
	return p, nil
}

// validate runs docs/rules.md §5.4 on the stored drafts, reading the input ideas.
func (w *proposalWorkflow) validate(ctx workflow.Context) (Validation, error) {
	p, err := w.drafts(ctx)
	if err != nil {
		return Validation{}, err
	}
	var inputs []store.IdeaFacts
	if w.state.InputType == "idea" {
		var a *activities.Activities
		if err := read(ctx, a.LoadInputIdeas, w.state.CompanyUUID, w.state.InputUUIDs).Get(ctx, &inputs); err != nil {
			return Validation{}, fmt.Errorf("could not read the input ideas: %w", err)
		}
	}
	return ValidateProposal(p, inputs), nil
}

func (w *proposalWorkflow) submit(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	// A submission a reset re-applies passed validation when it was applied (alreadyApplied);
	// today's drafts and ideas may no longer pass it.
	v := Validation{Valid: true, Issues: []Issue{}}
	applied, err := alreadyApplied(ctx, w.state.UUID, w.state.Row)
	if err != nil {
		return ProposalResult{}, err
	}
	if !applied {
		if v, err = w.validate(ctx); err != nil {
			return ProposalResult{}, err
		}
	}
	if !v.Valid {
		return ProposalResult{}, Refuse(KindConflict, "Failed to submit Proposal: %s", FailedValidationMessage(v))
	}
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.ProposalSubmit)
	n.Status = string(to)
	if err := w.commit(ctx, n, wr, statusChange(n)); err != nil {
		return ProposalResult{}, err
	}
	r := w.result()
	r.Validation = &v
	return r, nil
}

// reviewed moves n to status to, reviewed by a at wr.At with note, and returns the change.
func (w *proposalWorkflow) reviewed(n *ProposalState, wr store.Write, a Actor, to vocab.ProposalStatus, note *string) store.ProposalChange {
	at := wr.At
	n.Status, n.ReviewedBy, n.ReviewedAt = string(to), a.UUID, &at
	c := statusChange(*n)
	c.Patch.Review = &store.ProposalReview{By: a.UUID, At: at, Note: note}
	return c
}

func (w *proposalWorkflow) reject(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.ProposalReject)
	c := w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "rejected_to_draft", reviewedValue{ReviewNote: in.ReviewNote})}
	c.Notifications = []store.NotifySpec{w.notifyCreator(n, wr, in.Actor, "proposal_rejected",
		fmt.Sprintf("Proposal %q has been rejected. Reason: %s", n.Title, deref(in.ReviewNote)))}
	if err := w.commit(ctx, n, wr, c); err != nil {
		return ProposalResult{}, err
	}
	return w.result(), nil
}

func (w *proposalWorkflow) close(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.ProposalClose)
	c := w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "closed", reviewedValue{ReviewNote: in.ReviewNote})}
	if err := w.commit(ctx, n, wr, c); err != nil {
		return ProposalResult{}, err
	}
	return w.result(), nil
}

// approve materializes the stored drafts (docs/rules.md §5.6) in one transaction, then makes sure a
// TaskWorkflow runs for every new task (docs/write-path.md, "Every row has its workflow").
func (w *proposalWorkflow) approve(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	applied, err := alreadyApplied(ctx, w.state.UUID, w.state.Row)
	if err != nil {
		return ProposalResult{}, err
	}
	p, err := w.drafts(ctx)
	if err != nil {
		return ProposalResult{}, err
	}
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.ProposalApprove)
	n.Approvals++
	n.Finished = nil
	ap := store.Approval{Change: w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)}
	var value any
	if in.ReviewNote != nil {
		value = reviewedValue{ReviewNote: in.ReviewNote}
	}
	ap.Change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "approved", value)}
	msg := fmt.Sprintf("Proposal %q has been approved", n.Title)
	if in.ReviewNote != nil && *in.ReviewNote != "" {
		msg += ". Note: " + *in.ReviewNote
	}
	ap.Change.Notifications = []store.NotifySpec{w.notifyCreator(n, wr, in.Actor, "proposal_approved", msg)}
	ap.Change.Write, ap.Change.UUID, ap.Change.CompanyUUID = wr, n.UUID, n.CompanyUUID
	mat := materialize(&ap, p, wr)

	var a *activities.Activities
	if err := persist(ctx, a.ApplyApproval, ap).Get(ctx, nil); err != nil {
		return ProposalResult{}, w.failed(ctx, "materialize the approval", err)
	}
	w.adopt(ctx, n, wr)
	if applied {
		// A reset re-applies an approval that committed: its tasks are the rows it wrote, as they
		// stand now. Drafts edited since (after a revoke) name tasks it never made, whose
		// workflows must not start without rows.
		if mat, err = w.approvedRows(ctx, &ap, mat); err != nil {
			return ProposalResult{}, err
		}
	} else {
		for i := range ap.Tasks { // as the store wrote them: version 1, marked with the approval
			ap.Tasks[i].Version, ap.Tasks[i].ChangeID = 1, wr.ID
		}
	}
	if err := ensureTaskWorkflows(ctx, ap.Tasks, ap.Criteria, n.ProjectName); err != nil {
		return ProposalResult{}, err
	}
	r := w.result()
	r.Materialized = mat
	return r, nil
}

// approvedRows replaces ap's tasks and criteria with the rows of those tasks that exist, and
// keeps in mat only the tasks that exist.
func (w *proposalWorkflow) approvedRows(ctx workflow.Context, ap *store.Approval, mat *Materialized) (*Materialized, error) {
	uuids := make([]string, len(ap.Tasks))
	for i, t := range ap.Tasks {
		uuids[i] = t.UUID
	}
	var a *activities.Activities
	var rows store.TaskRows
	if err := read(ctx, a.TaskRows, uuids).Get(ctx, &rows); err != nil {
		return nil, fmt.Errorf("could not read the approval's tasks: %w", err)
	}
	ap.Tasks, ap.Criteria = rows.Tasks, rows.Criteria
	mat.Tasks = slices.DeleteFunc(mat.Tasks, func(m MaterializedItem) bool {
		return !slices.ContainsFunc(rows.Tasks, func(t store.Task) bool { return t.UUID == m.UUID })
	})
	return mat, nil
}

// materialize fills ap with the documents, tasks, criteria and edges docs/rules.md §5.6 makes of p's
// drafts, their ids derived from the approval's write, and lists them in draft order.
func materialize(ap *store.Approval, p store.Proposal, wr store.Write) *Materialized {
	now := wr.At
	mat := &Materialized{Tasks: []MaterializedItem{}, Documents: []MaterializedItem{}}
	for _, d := range p.DocumentDrafts {
		doc := store.Document{UUID: derivedFrom(wr, "document", d.UUID), CompanyUUID: p.CompanyUUID, ProjectUUID: p.ProjectUUID,
			Type: d.Type, Title: d.Title, Content: emptyToNil(&d.Content), Version: 1, ProposalUUID: &p.UUID,
			CreatedByType: p.CreatedByType, CreatedByUUID: p.CreatedByUUID, CreatedAt: now, UpdatedAt: now}
		if doc.Type == "" {
			doc.Type = "prd"
		}
		ap.Documents = append(ap.Documents, doc)
		mat.Documents = append(mat.Documents, MaterializedItem{DraftUUID: d.UUID, UUID: doc.UUID, Title: doc.Title})
	}
	byDraft := map[string]string{}
	for i, d := range p.TaskDrafts {
		t := store.Task{UUID: derivedFrom(wr, "task", d.UUID), CompanyUUID: p.CompanyUUID, ProjectUUID: p.ProjectUUID,
			Title: d.Title, Description: emptyToNil(d.Description), Status: vocab.TaskOpen, Priority: "medium",
			ProposalUUID: &p.UUID, CreatedByType: p.CreatedByType, CreatedByUUID: p.CreatedByUUID, Version: 1,
			CreatedAt: now.Add(time.Duration(i) * time.Microsecond), UpdatedAt: now}
		if d.Priority != nil {
			t.Priority = *d.Priority
		}
		if d.StoryPoints != nil && *d.StoryPoints != 0 {
			t.StoryPoints = d.StoryPoints
		}
		byDraft[d.UUID] = t.UUID
		ap.Tasks = append(ap.Tasks, t)
		for k, c := range NormalizeCriteria(d.AcceptanceCriteriaItems) {
			ap.Criteria = append(ap.Criteria, store.AcceptanceCriterion{UUID: DerivedUUID(t.UUID, "criterion", strconv.Itoa(k)),
				TaskUUID: t.UUID, Description: c.Description, Required: c.Required, DevStatus: "pending", Status: "pending",
				SortOrder: k, CreatedAt: now, UpdatedAt: now})
		}
		mat.Tasks = append(mat.Tasks, MaterializedItem{DraftUUID: d.UUID, UUID: t.UUID, Title: t.Title})
	}
	for _, d := range p.TaskDrafts {
		for _, dep := range d.DependsOnDraftUUIDs {
			from, okFrom := byDraft[d.UUID]
			to, okTo := byDraft[dep]
			if okFrom && okTo && from != to && !slices.ContainsFunc(ap.Dependencies, func(e store.TaskDependency) bool {
				return e.TaskUUID == from && e.DependsOnUUID == to
			}) {
				ap.Dependencies = append(ap.Dependencies, store.TaskDependency{TaskUUID: from, DependsOnUUID: to, CreatedAt: now})
			}
		}
	}
	return mat
}

// ensureTaskWorkflows makes sure a TaskWorkflow runs for each task, through an activity that
// is retried until every one has started (so a crash after the approval committed never leaves
// a task without its workflow). projectName is the tasks' project's name ("" when unknown).
func ensureTaskWorkflows(ctx workflow.Context, tasks []store.Task, criteria []store.AcceptanceCriterion, projectName string) error {
	if len(tasks) == 0 {
		return nil
	}
	var a *activities.Activities
	if err := persist(ctx, a.StartWorkflows, taskStarts(tasks, criteria, projectName)).Get(ctx, nil); err != nil {
		return fmt.Errorf("could not start the tasks' workflows: %w", err)
	}
	return nil
}

// taskStarts are the starts of the tasks' workflows, each from the task's first state, in the
// project named projectName.
func taskStarts(tasks []store.Task, criteria []store.AcceptanceCriterion, projectName string) []activities.WorkflowStart {
	starts := make([]activities.WorkflowStart, 0, len(tasks))
	for _, t := range tasks {
		st := NewTaskState(t, criteria)
		st.ProjectName = projectName
		starts = append(starts, taskStart(st))
	}
	return starts
}

// taskStart is the start of a task's workflow from its state.
func taskStart(st TaskState) activities.WorkflowStart {
	//workflowcheck:ignore (a struct marshals the same way every time)
	input, _ := json.Marshal(TaskRun{State: &st})
	return activities.WorkflowStart{ID: vocab.TaskID(st.UUID), Type: TaskWorkflowName, Input: input, Summary: "Task: " + st.Title,
		Memo:     taskStartMemo(st),
		Keywords: initialKeywords(vocab.EntityTask, st.ProjectUUID, st.Title, st.Status, st.CreatedBy.UUID)}
}

// revoke runs the cascade of docs/rules.md §5.7 in one transaction, then tells each closed task's
// workflow where its row now stands.
func (w *proposalWorkflow) revoke(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.ProposalRevoke)
	c := w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "revoked", nil)}
	c.Write, c.UUID, c.CompanyUUID = wr, n.UUID, n.CompanyUUID
	var a *activities.Activities
	var out store.Revoked
	if err := persist(ctx, a.RevokeCascade, c, in.ReviewNote).Get(ctx, &out); err != nil {
		return ProposalResult{}, w.failed(ctx, "revoke the proposal", err)
	}
	w.adopt(ctx, n, wr)
	var signals []workflow.Future
	for _, t := range out.ClosedTasks {
		signals = append(signals, workflow.SignalExternalWorkflow(ctx, vocab.TaskID(t.UUID), "", SignalProposalRevoked,
			ProposalRevoked{ProposalUUID: n.UUID, Row: RowMark{Version: t.Version, ChangeID: wr.ID}, At: wr.At}))
	}
	for _, f := range signals {
		_ = f.Get(ctx, nil) // a task whose workflow is gone has nothing to adopt; ops check reports it
	}
	r := w.result()
	r.Revoked = &out
	return r, nil
}
