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
)

// ProposalWorkflowName is the registered type of ProposalWorkflow.
const ProposalWorkflowName = "ProposalWorkflow"

// Update names of ProposalWorkflow, one per tool (docs/rules.md §4.6, §2.3).
const (
	UpdateCreateProposal      = "chorus_pm_create_proposal"
	UpdateAddDocumentDraft    = "chorus_pm_add_document_draft"
	UpdateAddTaskDraft        = "chorus_pm_add_task_draft"
	UpdateUpdateDocumentDraft = "chorus_pm_update_document_draft"
	UpdateUpdateTaskDraft     = "chorus_pm_update_task_draft"
	UpdateRemoveDocumentDraft = "chorus_pm_remove_document_draft"
	UpdateRemoveTaskDraft     = "chorus_pm_remove_task_draft"
	UpdateSubmitProposal      = "chorus_pm_submit_proposal"
	UpdateRejectProposal      = "chorus_pm_reject_proposal"
	UpdateApproveProposal     = "chorus_admin_approve_proposal"
	UpdateCloseProposal       = "chorus_admin_close_proposal"
	UpdateRevokeProposal      = "chorus_pm_revoke_proposal"
)

// ProposalState is everything ProposalWorkflow knows; it is what continue-as-new carries. The
// drafts live in the database (docs/write-path.md, "Bounded state and payloads"): the state
// keeps their uuids, and validation and approval read them back.
type ProposalState struct {
	Created     bool       `json:"created"`
	UUID        string     `json:"uuid"`
	CompanyUUID string     `json:"companyUuid"`
	ProjectUUID string     `json:"projectUuid"`
	ProjectName string     `json:"projectName,omitempty"` // for the memo; "" in older histories
	Title       string     `json:"title"`
	Status      string     `json:"status"`
	InputType   string     `json:"inputType"`
	InputUUIDs  []string   `json:"inputUuids"`
	CreatedBy   Party      `json:"createdBy"`
	ReviewedBy  string     `json:"reviewedBy,omitempty"`
	ReviewedAt  *time.Time `json:"reviewedAt,omitempty"`
	// Documents and Tasks are the uuids of the document and task drafts, in order.
	Documents []string `json:"documents,omitempty"`
	Tasks     []string `json:"tasks,omitempty"`
	// Approvals counts approvals so far.
	Approvals int `json:"approvals,omitempty"`
	// Finished lists the tasks of the current approval that reached done or closed, as their
	// workflows reported (for operators; the database is the truth).
	Finished []string `json:"finished,omitempty"`
	Row      RowMark  `json:"row"`
	Recent   Recent   `json:"recent,omitempty"`
}

func (s ProposalState) clone() ProposalState {
	c := s
	c.InputUUIDs = slices.Clone(s.InputUUIDs)
	c.Documents, c.Tasks = slices.Clone(s.Documents), slices.Clone(s.Tasks)
	c.Finished = slices.Clone(s.Finished)
	c.Recent = slices.Clone(s.Recent)
	return c
}

func (s ProposalState) status() ProposalStatus { return ProposalStatus(s.Status) }

// Projection is the proposal's row as far as the workflow owns it (ProposalColumns, with version
// and change_id).
func (s ProposalState) Projection() store.Proposal {
	return store.Proposal{UUID: s.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, Title: s.Title,
		InputType: s.InputType, InputUUIDs: s.InputUUIDs, Status: ProposalStatus(s.Status), CreatedByType: s.CreatedBy.Type,
		CreatedByUUID: s.CreatedBy.UUID, ReviewedByUUID: nilIfBlank(s.ReviewedBy), ReviewedAt: s.ReviewedAt,
		Version: s.Row.Version, ChangeID: s.Row.ChangeID}
}

// ProposalColumns are the columns of a proposal row its workflow owns (ProposalState.row).
var ProposalColumns = []string{"project_uuid", "title", "status", "input_type", "input_uuids", "reviewed_by_uuid", "reviewed_at"}

// Draft limits (docs/write-path.md): the drafts' text is bounded by store.MaxDraftBytes.
const (
	maxTaskDrafts     = 100
	maxDocumentDrafts = 50
)

// ProposalRun is ProposalWorkflow's input: empty for a new proposal, the state when continuing.
type ProposalRun struct {
	State *ProposalState
}

// CreateProposalInput creates the proposal (update-with-start). The caller has checked the
// inputs (they exist, are visible, are ideas the caller holds, are not themes).
type CreateProposalInput struct {
	Actor       Actor
	UUID        string
	ProjectUUID string
	ProjectName string
	Title       string
	Description *string
	InputType   string
	InputUUIDs  []string
}

// ProposalCommand is the input of commands that need only the actor and an optional note.
type ProposalCommand struct {
	Actor      Actor
	ReviewNote *string
}

// DocumentDraftInput adds or (with DraftUUID, nil fields untouched) updates a document draft.
type DocumentDraftInput struct {
	Actor     Actor
	DraftUUID string
	Type      *string
	Title     *string
	Content   *string
}

// TaskDraftInput adds or (with DraftUUID, nil fields untouched) updates a task draft.
type TaskDraftInput struct {
	Actor       Actor
	DraftUUID   string
	Title       *string
	Description *string
	StoryPoints *float64
	Priority    *string
	Kind        *string
	// Criteria replaces the acceptance criteria when SetCriteria (always, for add).
	SetCriteria bool
	Criteria    []store.CriterionDraft
	// DependsOn replaces the dependencies when SetDependsOn.
	SetDependsOn bool
	DependsOn    []string
}

// RemoveDraftInput removes a draft.
type RemoveDraftInput struct {
	Actor     Actor
	DraftUUID string
}

// ProposalResult is what proposal updates return.
type ProposalResult struct {
	UUID         string
	Status       string
	DraftUUID    string         `json:",omitempty"`
	DraftTitle   string         `json:",omitempty"`
	Materialized *Materialized  `json:",omitempty"`
	Revoked      *store.Revoked `json:",omitempty"`
	Validation   *Validation    `json:",omitempty"`
}

// Materialized lists what an approval created, in draft order.
type Materialized struct {
	Tasks     []MaterializedItem
	Documents []MaterializedItem
}

// MaterializedItem pairs a draft with the entity made from it.
type MaterializedItem struct {
	DraftUUID string
	UUID      string
	Title     string
}

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
	)
}

var notFoundProposal = Refuse(KindNotFound, "Proposal not found")

func (s ProposalState) exists() error {
	if !s.Created {
		return notFoundProposal
	}
	return nil
}

// next starts a change: a copy of the state, and the write that will move the row.
func (w *proposalWorkflow) next(ctx workflow.Context) (ProposalState, store.Write) {
	return w.state.clone(), nextWrite(ctx, w.state.Row, stamp(ctx))
}

// change is a write of the given columns of the proposal, from n.
func (w *proposalWorkflow) change(n ProposalState, cols ...string) store.ProposalChange {
	return store.ProposalChange{Set: n.Projection(), Columns: cols}
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
	if err = diverged(ctx, EntityProposal, err); isChorusError(err) {
		return err
	}
	return fmt.Errorf("could not %s: %w", what, err)
}

// persist writes c (made on n by wr) and adopts n.
func (w *proposalWorkflow) persist(ctx workflow.Context, n ProposalState, wr store.Write, c store.ProposalChange) error {
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
			ProjectUUIDKey.GetName(): s.ProjectUUID, EntityKey.GetName(): string(EntityProposal), StatusKey.GetName(): s.Status,
			CreatorKey.GetName(): s.CreatedBy.UUID, TitleKey.GetName(): keywordValue(s.Title)},
		unset: []temporal.SearchAttributeKeyKeyword{AssigneeKey}})
	details := fmt.Sprintf("**Proposal** %q is **%s**: %d document draft(s), %d task draft(s), %d approval(s) so far",
		s.Title, s.Status, len(s.Documents), len(s.Tasks), s.Approvals)
	if s.Status == string(ProposalApproved) {
		details += fmt.Sprintf("; %d of %d task(s) finished", len(s.Finished), len(s.Tasks))
	}
	workflow.SetCurrentDetails(ctx, details+fmt.Sprintf(" (row version %d)", s.Row.Version))
}

// ---- create ----

func (s ProposalState) checkCreate(in CreateProposalInput) error {
	if s.Created {
		return nil
	}
	return CheckTitle("", "title", &in.Title)
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
		ProjectName: in.ProjectName, Title: strings.TrimSpace(in.Title), Status: string(ProposalDraft), InputType: in.InputType, InputUUIDs: inputs,
		CreatedBy: Party{Type: in.Actor.Type, UUID: in.Actor.UUID}, Recent: w.state.Recent}
	row := n.Projection()
	row.Description, row.CreatedAt, row.UpdatedAt = in.Description, wr.At, wr.At
	if err := w.persist(ctx, n, wr, store.ProposalChange{Insert: &row}); err != nil {
		w.abandoned = true // nothing was created: end rather than linger as an empty workflow
		return ProposalResult{}, err
	}
	return w.result(), nil
}

// ---- drafts ----

// inDraft refuses draft edits unless the proposal is a draft (docs/rules.md §2.3).
func (s ProposalState) inDraft(verb, kind string) error {
	if err := s.exists(); err != nil {
		return Refuse(KindNotFound, "Failed to %s %s draft: Proposal not found or not in draft status", verb, kind)
	}
	if _, err := s.status().Next(ProposalEditDrafts); err != nil {
		return Refuse(KindConflict, "Failed to %s %s draft: Proposal not found or not in draft status (it is %s; %s)",
			verb, kind, s.Status, backToDraftHint(s.status()))
	}
	return nil
}

func backToDraftHint(s ProposalStatus) string {
	switch s {
	case ProposalPending:
		return "a reviewer can reject it back to draft"
	case ProposalApproved:
		return "revoke it with chorus_pm_revoke_proposal to edit its drafts again"
	case ProposalClosed:
		return "a closed proposal cannot change; create a new proposal"
	}
	return "only draft proposals can be edited"
}

func (s ProposalState) checkDocumentDraft(verb string, existing bool, in DocumentDraftInput) error {
	if err := s.inDraft(verb, "document"); err != nil {
		return err
	}
	if existing {
		if !slices.Contains(s.Documents, in.DraftUUID) {
			return Refuse(KindNotFound, "Failed to update document draft: Document draft not found")
		}
	} else {
		if in.Type == nil || in.Title == nil || in.Content == nil {
			return Refuse(KindInvalid, "Failed to add document draft: type, title and content are required")
		}
		if len(s.Documents) >= maxDocumentDrafts {
			return Refuse(KindConflict, "Failed to add document draft: a proposal holds at most %d document drafts", maxDocumentDrafts)
		}
	}
	return CheckTitle("Failed to "+verb+" document draft", "title", in.Title)
}

func (w *proposalWorkflow) draftResult(uuid, title string) ProposalResult {
	r := w.result()
	r.DraftUUID, r.DraftTitle = uuid, title
	return r
}

// persistDraft writes a draft edit; a store refusal for size is worded for the agent.
func (w *proposalWorkflow) persistDraft(ctx workflow.Context, verb, kind string, n ProposalState, wr store.Write, c store.ProposalChange) error {
	err := w.persist(ctx, n, wr, c)
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
	if err := w.persistDraft(ctx, "add", "document", n, wr, store.ProposalChange{AddDocument: &d}); err != nil {
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
	if err := w.persistDraft(ctx, "update", "document", n, wr, store.ProposalChange{UpdateDocument: &p}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, title), nil
}

func (s ProposalState) checkAddTaskDraft(in TaskDraftInput) error {
	if err := s.inDraft("add", "task"); err != nil {
		return err
	}
	title := "" // required: an absent title is a blank one
	if in.Title != nil {
		title = *in.Title
	}
	if err := CheckTitle("Failed to add task draft", "title", &title); err != nil {
		return err
	}
	if err := CheckCriteria("Failed to add task draft", in.Criteria); err != nil {
		return err
	}
	if len(s.Tasks) >= maxTaskDrafts {
		return Refuse(KindConflict, "Failed to add task draft: a proposal holds at most %d task drafts", maxTaskDrafts)
	}
	return nil
}

func (w *proposalWorkflow) addTaskDraft(ctx workflow.Context, in TaskDraftInput) (ProposalResult, error) {
	n, wr := w.next(ctx)
	t := store.TaskDraft{UUID: derivedFrom(wr, "task-draft"), Title: strings.TrimSpace(*in.Title), Description: in.Description,
		StoryPoints: in.StoryPoints, Priority: in.Priority, Kind: in.Kind, AcceptanceCriteriaItems: NormalizeCriteria(in.Criteria),
		DependsOnDraftUUIDs: nilIfEmpty(in.DependsOn)}
	n.Tasks = append(n.Tasks, t.UUID)
	if err := w.persistDraft(ctx, "add", "task", n, wr, store.ProposalChange{AddTask: &t}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(t.UUID, t.Title), nil
}

func (s ProposalState) checkUpdateTaskDraft(in TaskDraftInput) error {
	if err := s.inDraft("update", "task"); err != nil {
		return err
	}
	if !slices.Contains(s.Tasks, in.DraftUUID) {
		return Refuse(KindNotFound, "Failed to update task draft: Task draft not found")
	}
	if err := CheckTitle("Failed to update task draft", "title", in.Title); err != nil {
		return err
	}
	if in.SetCriteria {
		if err := CheckCriteria("Failed to update task draft", in.Criteria); err != nil {
			return err
		}
	}
	return nil
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
	if err := w.persistDraft(ctx, "update", "task", n, wr, store.ProposalChange{UpdateTask: &p}); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, title), nil
}

func (s ProposalState) checkRemove(kind string) error { return s.inDraft("remove", kind) }

func (w *proposalWorkflow) removeDocumentDraft(ctx workflow.Context, in RemoveDraftInput) (ProposalResult, error) {
	if !slices.Contains(w.state.Documents, in.DraftUUID) {
		return w.draftResult(in.DraftUUID, ""), nil // removing an unknown draft changes nothing
	}
	n, wr := w.next(ctx)
	n.Documents = nilIfEmpty(slices.DeleteFunc(n.Documents, func(u string) bool { return u == in.DraftUUID }))
	if err := w.persist(ctx, n, wr, store.ProposalChange{RemoveDocument: in.DraftUUID}); err != nil {
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
	if err := w.persist(ctx, n, wr, store.ProposalChange{RemoveTask: in.DraftUUID}); err != nil {
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

// ---- submit / reject / close ----

func (s ProposalState) checkSubmit(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return Refuse(KindNotFound, "Failed to submit Proposal: Proposal not found")
	}
	if _, err := s.status().Next(ProposalSubmit); err != nil {
		return Refuse(KindConflict, "Failed to submit Proposal: Only draft proposals can be submitted for review (it is %s)", s.Status)
	}
	return nil
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
	to, _ := w.state.status().Next(ProposalSubmit)
	n.Status = string(to)
	if err := w.persist(ctx, n, wr, w.change(n, "status")); err != nil {
		return ProposalResult{}, err
	}
	r := w.result()
	r.Validation = &v
	return r, nil
}

func (s ProposalState) ownOrAdmin(a Actor, verb string) error {
	if a.ProposalAdmin || a.UUID == s.CreatedBy.UUID {
		return nil
	}
	return Refuse(KindForbidden, "You can only %s your own proposals (this one was created by %s %s)", verb,
		s.CreatedBy.Type, s.CreatedBy.UUID)
}

func (s ProposalState) checkReject(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.ReviewNote == nil || strings.TrimSpace(*in.ReviewNote) == "" {
		return Refuse(KindInvalid, "Input validation error: reviewNote is required to reject a proposal")
	}
	if err := s.ownOrAdmin(in.Actor, "reject"); err != nil {
		return err
	}
	if _, err := s.status().Next(ProposalReject); err != nil {
		return Refuse(KindConflict, "Can only reject pending Proposals, current status: %s", s.Status)
	}
	return nil
}

// reviewed moves n to status to, reviewed by a at wr.At with note, and returns the change.
func (w *proposalWorkflow) reviewed(n *ProposalState, wr store.Write, a Actor, to ProposalStatus, note *string) store.ProposalChange {
	at := wr.At
	n.Status, n.ReviewedBy, n.ReviewedAt = string(to), a.UUID, &at
	c := w.change(*n, reviewColumns...)
	c.Set.ReviewNote = note
	return c
}

var reviewColumns = []string{"status", "reviewed_by_uuid", "review_note", "reviewed_at"}

func (w *proposalWorkflow) reject(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(ProposalReject)
	c := w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "rejected_to_draft", map[string]any{"reviewNote": in.ReviewNote})}
	c.Notifications = []store.NotifySpec{w.notifyCreator(n, wr, in.Actor, "proposal_rejected",
		fmt.Sprintf("Proposal %q has been rejected. Reason: %s", n.Title, deref(in.ReviewNote)))}
	if err := w.persist(ctx, n, wr, c); err != nil {
		return ProposalResult{}, err
	}
	return w.result(), nil
}

func (s ProposalState) checkClose(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.ReviewNote == nil || strings.TrimSpace(*in.ReviewNote) == "" {
		return Refuse(KindInvalid, "Input validation error: reviewNote is required to close a proposal")
	}
	if _, err := s.status().Next(ProposalClose); err != nil {
		return Refuse(KindConflict, "Can only close pending Proposals, current status: %s", s.Status)
	}
	return nil
}

func (w *proposalWorkflow) close(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(ProposalClose)
	c := w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "closed", map[string]any{"reviewNote": in.ReviewNote})}
	if err := w.persist(ctx, n, wr, c); err != nil {
		return ProposalResult{}, err
	}
	return w.result(), nil
}

// ---- approve ----

func (s ProposalState) checkApprove(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if _, err := s.status().Next(ProposalApprove); err != nil {
		hint := ""
		if s.status() == ProposalApproved {
			hint = " (it was already approved)"
		} else if s.status() == ProposalDraft {
			hint = " (its author must submit it first)"
		}
		return Refuse(KindConflict, "Can only approve pending Proposals, current status: %s%s", s.Status, hint)
	}
	return nil
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
	to, _ := w.state.status().Next(ProposalApprove)
	n.Approvals++
	n.Finished = nil
	ap := store.Approval{Change: w.reviewed(&n, wr, in.Actor, to, in.ReviewNote)}
	var value any
	if in.ReviewNote != nil {
		value = map[string]any{"reviewNote": in.ReviewNote}
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
			Title: d.Title, Description: emptyToNil(d.Description), Status: TaskOpen, Priority: "medium",
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
	return activities.WorkflowStart{ID: TaskID(st.UUID), Type: TaskWorkflowName, Input: input, Summary: "Task: " + st.Title,
		Memo:     taskStartMemo(st),
		Keywords: initialKeywords(EntityTask, st.ProjectUUID, st.Title, st.Status, st.CreatedBy.UUID)}
}

// ---- revoke ----

func (s ProposalState) checkRevoke(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if err := s.ownOrAdmin(in.Actor, "revoke"); err != nil {
		return err
	}
	if _, err := s.status().Next(ProposalRevoke); err != nil {
		return Refuse(KindConflict, "Can only revoke approved Proposals, current status: %s", s.Status)
	}
	return nil
}

// revoke runs the cascade of docs/rules.md §5.7 in one transaction, then tells each closed task's
// workflow where its row now stands.
func (w *proposalWorkflow) revoke(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(ProposalRevoke)
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
		signals = append(signals, workflow.SignalExternalWorkflow(ctx, TaskID(t.UUID), "", SignalProposalRevoked,
			ProposalRevoked{ProposalUUID: n.UUID, Row: RowMark{Version: t.Version, ChangeID: wr.ID}, At: wr.At}))
	}
	for _, f := range signals {
		_ = f.Get(ctx, nil) // a task whose workflow is gone has nothing to adopt; ops check reports it
	}
	r := w.result()
	r.Revoked = &out
	return r, nil
}
