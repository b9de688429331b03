package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

// ProposalWorkflowName is the registered type of ProposalWorkflow.
const ProposalWorkflowName = "ProposalWorkflow"

// Update names of ProposalWorkflow, one per tool (SPEC 3.5, 3.8, 2.3).
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

// ProposalState is everything ProposalWorkflow knows; it is what continue-as-new carries.
type ProposalState struct {
	Created  bool
	Proposal store.Proposal // the row, drafts included, as this workflow last wrote it
	// Approvals counts approvals so far; each approval's materialized ids derive from it, so a
	// revoke and a new approval create a fresh set of tasks.
	Approvals int
	// Finished lists the tasks of the current approval that reached done or closed, as their
	// workflows reported (for operators; the database is the truth).
	Finished []string
}

func (s ProposalState) clone() ProposalState {
	c := s
	p := &c.Proposal
	p.InputUUIDs = slices.Clone(p.InputUUIDs)
	p.DocumentDrafts = slices.Clone(p.DocumentDrafts)
	p.TaskDrafts = slices.Clone(p.TaskDrafts)
	for i := range p.TaskDrafts {
		p.TaskDrafts[i].AcceptanceCriteriaItems = slices.Clone(p.TaskDrafts[i].AcceptanceCriteriaItems)
		p.TaskDrafts[i].DependsOnDraftUUIDs = slices.Clone(p.TaskDrafts[i].DependsOnDraftUUIDs)
	}
	return c
}

func (s ProposalState) status() ProposalStatus { return ProposalStatus(s.Proposal.Status) }

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
	DraftUUID    string              `json:",omitempty"`
	DraftTitle   string              `json:",omitempty"`
	Materialized *Materialized       `json:",omitempty"`
	Revoked      *activities.Revoked `json:",omitempty"`
	Validation   *Validation         `json:",omitempty"`
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

type proposalWorkflow struct {
	state ProposalState
	mu    workflow.Mutex
	// abandoned: the create update failed, so this run holds no proposal and ends.
	abandoned bool
}

// ProposalWorkflow is the long-lived workflow of one proposal (id "proposal/<uuid>"): it owns
// the proposal's status, drafts and review fields; approval materializes the drafts into
// documents and tasks in one transaction and starts a TaskWorkflow per task; revoke closes
// them again.
func ProposalWorkflow(ctx workflow.Context, in ProposalRun) error {
	w := &proposalWorkflow{mu: workflow.NewMutex(ctx)}
	if in.State != nil {
		w.state = *in.State
	}
	if err := w.register(ctx); err != nil {
		return err
	}
	if w.state.Created {
		w.publish(ctx)
	}
	finished := workflow.GetSignalChannel(ctx, SignalTaskFinished)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var sig TaskFinished
			finished.Receive(ctx, &sig)
			w.taskFinished(ctx, sig)
		}
	})
	again, err := awaitContinueAsNew(ctx, func() bool { return w.abandoned })
	if err != nil || !again {
		return err
	}
	var sig TaskFinished
	for finished.ReceiveAsync(&sig) {
		w.taskFinished(ctx, sig)
	}
	return workflow.NewContinueAsNewError(ctx, ProposalWorkflowName, ProposalRun{State: &w.state})
}

// taskFinished tallies a task of this proposal that reached done or closed.
func (w *proposalWorkflow) taskFinished(ctx workflow.Context, sig TaskFinished) {
	if !slices.Contains(w.state.Finished, sig.TaskUUID) {
		w.state.Finished = append(w.state.Finished, sig.TaskUUID)
		w.publish(ctx)
	}
}

func (w *proposalWorkflow) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (ProposalState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The proposal's workflow state: row with drafts, approvals so far."}); err != nil {
		return err
	}
	return firstErr(
		registerUpdate(ctx, w.mu, UpdateCreateProposal, w.validateCreate, w.create),
		registerUpdate(ctx, w.mu, UpdateAddDocumentDraft, w.draftGuard("add", "document", false), w.addDocumentDraft),
		registerUpdate(ctx, w.mu, UpdateAddTaskDraft, w.validateAddTaskDraft, w.addTaskDraft),
		registerUpdate(ctx, w.mu, UpdateUpdateDocumentDraft, w.draftGuard("update", "document", true), w.updateDocumentDraft),
		registerUpdate(ctx, w.mu, UpdateUpdateTaskDraft, w.validateUpdateTaskDraft, w.updateTaskDraft),
		registerUpdate(ctx, w.mu, UpdateRemoveDocumentDraft, w.removeGuard("document"), w.removeDocumentDraft),
		registerUpdate(ctx, w.mu, UpdateRemoveTaskDraft, w.removeGuard("task"), w.removeTaskDraft),
		registerUpdate(ctx, w.mu, UpdateSubmitProposal, w.validateSubmit, w.submit),
		registerUpdate(ctx, w.mu, UpdateRejectProposal, w.validateReject, w.reject),
		registerUpdate(ctx, w.mu, UpdateApproveProposal, w.validateApprove, w.approve),
		registerUpdate(ctx, w.mu, UpdateCloseProposal, w.validateClose, w.close),
		registerUpdate(ctx, w.mu, UpdateRevokeProposal, w.validateRevoke, w.revoke),
	)
}

var notFoundProposal = Refuse(KindNotFound, "Proposal not found")

func (w *proposalWorkflow) exists() error {
	if !w.state.Created {
		return notFoundProposal
	}
	return nil
}

func (w *proposalWorkflow) next(ctx workflow.Context) (ProposalState, time.Time) {
	n := w.state.clone()
	now := stamp(ctx)
	n.Proposal.Version++
	n.Proposal.UpdatedAt = now
	return n, now
}

// change is a write of the given columns. The drafts travel only when written: they are the
// bulk of a proposal, and every activity input is a Temporal payload of bounded size.
func (w *proposalWorkflow) change(n ProposalState, at time.Time, cols ...string) activities.ProposalChange {
	row := n.Proposal
	if !slices.Contains(cols, "document_drafts") {
		row.DocumentDrafts = nil
	}
	if !slices.Contains(cols, "task_drafts") {
		row.TaskDrafts = nil
	}
	return activities.ProposalChange{UUID: n.Proposal.UUID, CompanyUUID: n.Proposal.CompanyUUID, Version: n.Proposal.Version,
		At: at, Row: row, Columns: cols}
}

// maxDraftBytes bounds a proposal's drafts (as JSON): they live in the workflow's state and
// travel in activity inputs, which Temporal refuses above 2 MB and warns about above 512 KB.
const maxDraftBytes = 500_000

// checkDraftSize refuses a draft edit that would grow the drafts past maxDraftBytes.
func checkDraftSize(verb, kind string, docs []store.DocumentDraft, tasks []store.TaskDraft) error {
	//workflowcheck:ignore (marshalling structs and slices is deterministic)
	b, _ := json.Marshal(struct {
		D []store.DocumentDraft
		T []store.TaskDraft
	}{docs, tasks})
	if len(b) > maxDraftBytes {
		return Refuse(KindInvalid, "Failed to %s %s draft: the proposal's drafts would take %d bytes, more than the %d a proposal holds. "+
			"Keep long material in documents (chorus_pm_create_document) and shorten the drafts.", verb, kind, len(b), maxDraftBytes)
	}
	return nil
}

func (w *proposalWorkflow) activity(n ProposalState, at time.Time, a Actor, action string, value any) activities.ActivityRecord {
	p := n.Proposal
	return activities.ActivityRecord{UUID: DerivedUUID("proposal", p.UUID, strconv.FormatInt(p.Version, 10), action),
		CompanyUUID: p.CompanyUUID, ProjectUUID: p.ProjectUUID, TargetType: "proposal", TargetUUID: p.UUID,
		ActorType: a.Type, ActorUUID: a.UUID, Action: action, Value: activities.MarshalValue(value), CreatedAt: at}
}

func (w *proposalWorkflow) notifyCreator(n ProposalState, a Actor, action, message string) activities.Notify {
	p := n.Proposal
	return activities.Notify{Seed: DerivedUUID("proposal", p.UUID, strconv.FormatInt(p.Version, 10), action),
		ProjectUUID: p.ProjectUUID, Action: action, EntityType: "proposal", EntityUUID: p.UUID, EntityTitle: p.Title,
		Message: message, ActorType: a.Type, ActorUUID: a.UUID, ActorName: a.Name,
		Recipients: []activities.Recipient{{Type: p.CreatedByType, UUID: p.CreatedByUUID}}}
}

func (w *proposalWorkflow) persist(ctx workflow.Context, n ProposalState, c activities.ProposalChange) error {
	var a *activities.Activities
	if err := persist(ctx, a.PersistProposal, c).Get(ctx, nil); err != nil {
		if isChorusError(err) {
			return err
		}
		return fmt.Errorf("could not save the proposal: %w", err)
	}
	w.state = n
	w.publish(ctx)
	return nil
}

func (w *proposalWorkflow) result() ProposalResult {
	return ProposalResult{UUID: w.state.Proposal.UUID, Status: w.state.Proposal.Status}
}

func (w *proposalWorkflow) publish(ctx workflow.Context) {
	p := w.state.Proposal
	_ = workflow.UpsertTypedSearchAttributes(ctx, ProjectUUIDKey.ValueSet(p.ProjectUUID),
		EntityKey.ValueSet(string(EntityProposal)), StatusKey.ValueSet(p.Status), AssigneeKey.ValueSet(p.CreatedByUUID))
	_ = workflow.UpsertMemo(ctx, map[string]any{"title": p.Title})
	details := fmt.Sprintf("**Proposal** %q is **%s**: %d document draft(s), %d task draft(s), %d approval(s) so far",
		p.Title, p.Status, len(p.DocumentDrafts), len(p.TaskDrafts), w.state.Approvals)
	if p.Status == string(ProposalApproved) {
		details += fmt.Sprintf("; %d of %d task(s) finished", len(w.state.Finished), len(p.TaskDrafts))
	}
	workflow.SetCurrentDetails(ctx, details)
}

// ---- create ----

func (w *proposalWorkflow) validateCreate(in CreateProposalInput) error {
	if w.state.Created {
		return nil
	}
	if strings.TrimSpace(in.Title) == "" {
		return Refuse(KindInvalid, "Input validation error: title must not be blank")
	}
	return nil
}

func (w *proposalWorkflow) create(ctx workflow.Context, in CreateProposalInput) (ProposalResult, error) {
	if w.state.Created {
		return w.result(), nil
	}
	now := stamp(ctx)
	inputs := in.InputUUIDs
	if inputs == nil {
		inputs = []string{}
	}
	n := ProposalState{Created: true, Proposal: store.Proposal{UUID: in.UUID, CompanyUUID: in.Actor.CompanyUUID,
		ProjectUUID: in.ProjectUUID, Title: strings.TrimSpace(in.Title), Description: in.Description, InputType: in.InputType,
		InputUUIDs: inputs, Status: string(ProposalDraft), CreatedByUUID: in.Actor.UUID, CreatedByType: in.Actor.Type,
		Version: 1, CreatedAt: now, UpdatedAt: now}}
	row := n.Proposal
	if err := w.persist(ctx, n, activities.ProposalChange{UUID: row.UUID, CompanyUUID: row.CompanyUUID, Version: 1, At: now, Insert: &row}); err != nil {
		w.abandoned = true // nothing was created: end rather than linger as an empty workflow
		return ProposalResult{}, err
	}
	return w.result(), nil
}

// ---- drafts ----

// inDraft refuses draft edits unless the proposal is a draft (SPEC 2.3).
func (w *proposalWorkflow) inDraft(verb, kind string) error {
	if err := w.exists(); err != nil {
		return Refuse(KindNotFound, "Failed to %s %s draft: Proposal not found or not in draft status", verb, kind)
	}
	if _, err := w.state.status().Next(ProposalEditDrafts); err != nil {
		return Refuse(KindConflict, "Failed to %s %s draft: Proposal not found or not in draft status (it is %s; %s)",
			verb, kind, w.state.Proposal.Status, backToDraftHint(w.state.status()))
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

func (w *proposalWorkflow) draftGuard(verb, kind string, existing bool) func(DocumentDraftInput) error {
	return func(in DocumentDraftInput) error {
		if err := w.inDraft(verb, kind); err != nil {
			return err
		}
		if existing {
			if !slices.ContainsFunc(w.state.Proposal.DocumentDrafts, func(d store.DocumentDraft) bool { return d.UUID == in.DraftUUID }) {
				return Refuse(KindNotFound, "Failed to update document draft: Document draft not found")
			}
		} else if in.Type == nil || in.Title == nil || in.Content == nil {
			return Refuse(KindInvalid, "Failed to add document draft: type, title and content are required")
		}
		if in.Title != nil && strings.TrimSpace(*in.Title) == "" {
			return Refuse(KindInvalid, "Failed to %s document draft: title must not be blank", verb)
		}
		docs := slices.Clone(w.state.Proposal.DocumentDrafts)
		if existing {
			i := slices.IndexFunc(docs, func(d store.DocumentDraft) bool { return d.UUID == in.DraftUUID })
			if in.Content != nil {
				docs[i].Content = *in.Content
			}
		} else {
			docs = append(docs, store.DocumentDraft{Type: deref(in.Type), Title: deref(in.Title), Content: deref(in.Content)})
		}
		return checkDraftSize(verb, "document", docs, w.state.Proposal.TaskDrafts)
	}
}

func (w *proposalWorkflow) draftResult(uuid, title string) ProposalResult {
	r := w.result()
	r.DraftUUID, r.DraftTitle = uuid, title
	return r
}

func (w *proposalWorkflow) addDocumentDraft(ctx workflow.Context, in DocumentDraftInput) (ProposalResult, error) {
	n, now := w.next(ctx)
	d := store.DocumentDraft{UUID: DerivedUUID("proposal", n.Proposal.UUID, strconv.FormatInt(n.Proposal.Version, 10), "document-draft"),
		Type: *in.Type, Title: strings.TrimSpace(*in.Title), Content: *in.Content}
	n.Proposal.DocumentDrafts = append(n.Proposal.DocumentDrafts, d)
	if err := w.persist(ctx, n, w.change(n, now, "document_drafts")); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(d.UUID, d.Title), nil
}

func (w *proposalWorkflow) updateDocumentDraft(ctx workflow.Context, in DocumentDraftInput) (ProposalResult, error) {
	n, now := w.next(ctx)
	i := slices.IndexFunc(n.Proposal.DocumentDrafts, func(d store.DocumentDraft) bool { return d.UUID == in.DraftUUID })
	d := &n.Proposal.DocumentDrafts[i]
	if in.Type != nil {
		d.Type = *in.Type
	}
	if in.Title != nil {
		d.Title = strings.TrimSpace(*in.Title)
	}
	if in.Content != nil {
		d.Content = *in.Content
	}
	if err := w.persist(ctx, n, w.change(n, now, "document_drafts")); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(d.UUID, d.Title), nil
}

const criteriaRequired = "Acceptance criteria are required: provide at least one acceptanceCriteriaItems entry with a non-blank description"

func (w *proposalWorkflow) validateAddTaskDraft(in TaskDraftInput) error {
	if err := w.inDraft("add", "task"); err != nil {
		return err
	}
	if in.Title == nil || strings.TrimSpace(*in.Title) == "" {
		return Refuse(KindInvalid, "Failed to add task draft: title must not be blank")
	}
	if len(NormalizeCriteria(in.Criteria)) == 0 {
		return Refuse(KindInvalid, "Failed to add task draft: "+criteriaRequired)
	}
	tasks := append(slices.Clone(w.state.Proposal.TaskDrafts), store.TaskDraft{Title: *in.Title, Description: in.Description,
		AcceptanceCriteriaItems: in.Criteria, DependsOnDraftUUIDs: in.DependsOn})
	return checkDraftSize("add", "task", w.state.Proposal.DocumentDrafts, tasks)
}

func (w *proposalWorkflow) addTaskDraft(ctx workflow.Context, in TaskDraftInput) (ProposalResult, error) {
	n, now := w.next(ctx)
	t := store.TaskDraft{UUID: DerivedUUID("proposal", n.Proposal.UUID, strconv.FormatInt(n.Proposal.Version, 10), "task-draft"),
		Title: strings.TrimSpace(*in.Title), Description: in.Description, StoryPoints: in.StoryPoints, Priority: in.Priority,
		Kind: in.Kind, AcceptanceCriteriaItems: NormalizeCriteria(in.Criteria), DependsOnDraftUUIDs: nilIfEmpty(in.DependsOn)}
	n.Proposal.TaskDrafts = append(n.Proposal.TaskDrafts, t)
	if err := w.persist(ctx, n, w.change(n, now, "task_drafts")); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(t.UUID, t.Title), nil
}

func (w *proposalWorkflow) validateUpdateTaskDraft(in TaskDraftInput) error {
	if err := w.inDraft("update", "task"); err != nil {
		return err
	}
	if !slices.ContainsFunc(w.state.Proposal.TaskDrafts, func(t store.TaskDraft) bool { return t.UUID == in.DraftUUID }) {
		return Refuse(KindNotFound, "Failed to update task draft: Task draft not found")
	}
	if in.Title != nil && strings.TrimSpace(*in.Title) == "" {
		return Refuse(KindInvalid, "Failed to update task draft: title must not be blank")
	}
	if in.SetCriteria && len(NormalizeCriteria(in.Criteria)) == 0 {
		return Refuse(KindInvalid, "Failed to update task draft: "+criteriaRequired)
	}
	extra := store.TaskDraft{Description: in.Description, AcceptanceCriteriaItems: in.Criteria, DependsOnDraftUUIDs: in.DependsOn}
	return checkDraftSize("update", "task", w.state.Proposal.DocumentDrafts, append(slices.Clone(w.state.Proposal.TaskDrafts), extra))
}

func (w *proposalWorkflow) updateTaskDraft(ctx workflow.Context, in TaskDraftInput) (ProposalResult, error) {
	n, now := w.next(ctx)
	i := slices.IndexFunc(n.Proposal.TaskDrafts, func(t store.TaskDraft) bool { return t.UUID == in.DraftUUID })
	t := &n.Proposal.TaskDrafts[i]
	if in.Title != nil {
		t.Title = strings.TrimSpace(*in.Title)
	}
	if in.Description != nil {
		t.Description = in.Description
	}
	if in.StoryPoints != nil {
		t.StoryPoints = in.StoryPoints
	}
	if in.Priority != nil {
		t.Priority = in.Priority
	}
	if in.Kind != nil {
		t.Kind = in.Kind
	}
	if in.SetCriteria {
		t.AcceptanceCriteriaItems = NormalizeCriteria(in.Criteria)
	}
	if in.SetDependsOn {
		t.DependsOnDraftUUIDs = nilIfEmpty(in.DependsOn)
	}
	if err := w.persist(ctx, n, w.change(n, now, "task_drafts")); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(t.UUID, t.Title), nil
}

func (w *proposalWorkflow) removeGuard(kind string) func(RemoveDraftInput) error {
	return func(RemoveDraftInput) error { return w.inDraft("remove", kind) }
}

func (w *proposalWorkflow) removeDocumentDraft(ctx workflow.Context, in RemoveDraftInput) (ProposalResult, error) {
	i := slices.IndexFunc(w.state.Proposal.DocumentDrafts, func(d store.DocumentDraft) bool { return d.UUID == in.DraftUUID })
	if i < 0 {
		return w.draftResult(in.DraftUUID, ""), nil // removing an unknown draft changes nothing
	}
	n, now := w.next(ctx)
	n.Proposal.DocumentDrafts = nilIfEmpty(slices.Delete(n.Proposal.DocumentDrafts, i, i+1))
	if err := w.persist(ctx, n, w.change(n, now, "document_drafts")); err != nil {
		return ProposalResult{}, err
	}
	return w.draftResult(in.DraftUUID, ""), nil
}

func (w *proposalWorkflow) removeTaskDraft(ctx workflow.Context, in RemoveDraftInput) (ProposalResult, error) {
	i := slices.IndexFunc(w.state.Proposal.TaskDrafts, func(t store.TaskDraft) bool { return t.UUID == in.DraftUUID })
	if i < 0 {
		return w.draftResult(in.DraftUUID, ""), nil
	}
	n, now := w.next(ctx)
	n.Proposal.TaskDrafts = slices.Delete(n.Proposal.TaskDrafts, i, i+1)
	for j := range n.Proposal.TaskDrafts {
		t := &n.Proposal.TaskDrafts[j]
		t.DependsOnDraftUUIDs = nilIfEmpty(slices.DeleteFunc(t.DependsOnDraftUUIDs, func(u string) bool { return u == in.DraftUUID }))
	}
	n.Proposal.TaskDrafts = nilIfEmpty(n.Proposal.TaskDrafts)
	if err := w.persist(ctx, n, w.change(n, now, "task_drafts")); err != nil {
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

func (w *proposalWorkflow) validateSubmit(in ProposalCommand) error {
	if err := w.exists(); err != nil {
		return Refuse(KindNotFound, "Failed to submit Proposal: Proposal not found")
	}
	if _, err := w.state.status().Next(ProposalSubmit); err != nil {
		return Refuse(KindConflict, "Failed to submit Proposal: Only draft proposals can be submitted for review (it is %s)", w.state.Proposal.Status)
	}
	return nil
}

// Validate runs SPEC 4.4 on the current drafts, reading the input ideas.
func (w *proposalWorkflow) validate(ctx workflow.Context) (Validation, error) {
	var inputs []store.IdeaFacts
	if w.state.Proposal.InputType == "idea" {
		var a *activities.Activities
		err := read(ctx, a.LoadInputIdeas, w.state.Proposal.CompanyUUID,
			w.state.Proposal.InputUUIDs).Get(ctx, &inputs)
		if err != nil {
			return Validation{}, fmt.Errorf("could not read the input ideas: %w", err)
		}
	}
	return ValidateProposal(w.state.Proposal, inputs), nil
}

func (w *proposalWorkflow) submit(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	v, err := w.validate(ctx)
	if err != nil {
		return ProposalResult{}, err
	}
	if !v.Valid {
		return ProposalResult{}, Refuse(KindConflict, "Failed to submit Proposal: %s", FailedValidationMessage(v))
	}
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(ProposalSubmit)
	n.Proposal.Status = string(to)
	if err := w.persist(ctx, n, w.change(n, now, "status")); err != nil {
		return ProposalResult{}, err
	}
	r := w.result()
	r.Validation = &v
	return r, nil
}

func (w *proposalWorkflow) ownOrAdmin(a Actor, verb string) error {
	if a.ProposalAdmin || a.UUID == w.state.Proposal.CreatedByUUID {
		return nil
	}
	return Refuse(KindForbidden, "You can only %s your own proposals (this one was created by %s %s)", verb,
		w.state.Proposal.CreatedByType, w.state.Proposal.CreatedByUUID)
}

func (w *proposalWorkflow) validateReject(in ProposalCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	if in.ReviewNote == nil || strings.TrimSpace(*in.ReviewNote) == "" {
		return Refuse(KindInvalid, "Input validation error: reviewNote is required to reject a proposal")
	}
	if err := w.ownOrAdmin(in.Actor, "reject"); err != nil {
		return err
	}
	if _, err := w.state.status().Next(ProposalReject); err != nil {
		return Refuse(KindConflict, "Can only reject pending Proposals, current status: %s", w.state.Proposal.Status)
	}
	return nil
}

func (w *proposalWorkflow) review(n *ProposalState, a Actor, at time.Time, note *string) {
	n.Proposal.ReviewedByUUID, n.Proposal.ReviewNote, n.Proposal.ReviewedAt = ptr(a.UUID), note, &at
}

var reviewColumns = []string{"status", "reviewed_by_uuid", "review_note", "reviewed_at"}

func (w *proposalWorkflow) reject(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(ProposalReject)
	n.Proposal.Status = string(to)
	w.review(&n, in.Actor, now, in.ReviewNote)
	c := w.change(n, now, reviewColumns...)
	c.Activities = []activities.ActivityRecord{w.activity(n, now, in.Actor, "rejected_to_draft", map[string]any{"reviewNote": in.ReviewNote})}
	c.Notifications = []activities.Notify{w.notifyCreator(n, in.Actor, "proposal_rejected",
		fmt.Sprintf("Proposal %q has been rejected. Reason: %s", n.Proposal.Title, deref(in.ReviewNote)))}
	if err := w.persist(ctx, n, c); err != nil {
		return ProposalResult{}, err
	}
	return w.result(), nil
}

func (w *proposalWorkflow) validateClose(in ProposalCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	if in.ReviewNote == nil || strings.TrimSpace(*in.ReviewNote) == "" {
		return Refuse(KindInvalid, "Input validation error: reviewNote is required to close a proposal")
	}
	if _, err := w.state.status().Next(ProposalClose); err != nil {
		return Refuse(KindConflict, "Can only close pending Proposals, current status: %s", w.state.Proposal.Status)
	}
	return nil
}

func (w *proposalWorkflow) close(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(ProposalClose)
	n.Proposal.Status = string(to)
	w.review(&n, in.Actor, now, in.ReviewNote)
	c := w.change(n, now, reviewColumns...)
	c.Activities = []activities.ActivityRecord{w.activity(n, now, in.Actor, "closed", map[string]any{"reviewNote": in.ReviewNote})}
	if err := w.persist(ctx, n, c); err != nil {
		return ProposalResult{}, err
	}
	return w.result(), nil
}

// ---- approve ----

func (w *proposalWorkflow) validateApprove(in ProposalCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	if _, err := w.state.status().Next(ProposalApprove); err != nil {
		hint := ""
		if w.state.status() == ProposalApproved {
			hint = " (it was already approved)"
		} else if w.state.status() == ProposalDraft {
			hint = " (its author must submit it first)"
		}
		return Refuse(KindConflict, "Can only approve pending Proposals, current status: %s%s", w.state.Proposal.Status, hint)
	}
	return nil
}

// approve materializes the drafts (SPEC 4.7) in one transaction, then starts a TaskWorkflow for
// every new task and waits until each has started.
func (w *proposalWorkflow) approve(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(ProposalApprove)
	n.Proposal.Status = string(to)
	n.Approvals++
	n.Finished = nil
	w.review(&n, in.Actor, now, in.ReviewNote)
	p := n.Proposal
	gen := strconv.Itoa(n.Approvals)
	ap := activities.Approval{Change: w.change(n, now, reviewColumns...)}
	var value any
	if in.ReviewNote != nil {
		value = map[string]any{"reviewNote": in.ReviewNote}
	}
	ap.Change.Activities = []activities.ActivityRecord{w.activity(n, now, in.Actor, "approved", value)}
	msg := fmt.Sprintf("Proposal %q has been approved", p.Title)
	if in.ReviewNote != nil && *in.ReviewNote != "" {
		msg += ". Note: " + *in.ReviewNote
	}
	ap.Change.Notifications = []activities.Notify{w.notifyCreator(n, in.Actor, "proposal_approved", msg)}

	mat := &Materialized{Tasks: []MaterializedItem{}, Documents: []MaterializedItem{}}
	for _, d := range p.DocumentDrafts {
		doc := store.Document{UUID: DerivedUUID("proposal", p.UUID, "approval", gen, "document", d.UUID),
			CompanyUUID: p.CompanyUUID, ProjectUUID: p.ProjectUUID, Type: d.Type, Title: d.Title, Content: emptyToNil(&d.Content),
			Version: 1, ProposalUUID: &p.UUID, CreatedByType: p.CreatedByType, CreatedByUUID: p.CreatedByUUID, CreatedAt: now, UpdatedAt: now}
		if doc.Type == "" {
			doc.Type = "prd"
		}
		ap.Documents = append(ap.Documents, doc)
		mat.Documents = append(mat.Documents, MaterializedItem{DraftUUID: d.UUID, UUID: doc.UUID, Title: doc.Title})
	}
	byDraft := map[string]string{}
	for i, d := range p.TaskDrafts {
		t := store.Task{UUID: DerivedUUID("proposal", p.UUID, "approval", gen, "task", d.UUID),
			CompanyUUID: p.CompanyUUID, ProjectUUID: p.ProjectUUID, Title: d.Title, Description: emptyToNil(d.Description),
			Status: string(TaskOpen), Priority: "medium", ProposalUUID: &p.UUID, CreatedByType: p.CreatedByType,
			CreatedByUUID: p.CreatedByUUID, Version: 1, CreatedAt: now.Add(time.Duration(i) * time.Microsecond), UpdatedAt: now}
		if d.Priority != nil {
			t.Priority = *d.Priority
		}
		if d.StoryPoints != nil && *d.StoryPoints != 0 {
			t.StoryPoints = d.StoryPoints
		}
		byDraft[d.UUID] = t.UUID
		ap.Tasks = append(ap.Tasks, t)
		for k, c := range NormalizeCriteria(d.AcceptanceCriteriaItems) {
			ap.Criteria = append(ap.Criteria, store.AcceptanceCriterion{UUID: DerivedUUID("task", t.UUID, "criterion", strconv.Itoa(k)),
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

	var a *activities.Activities
	if err := persist(ctx, a.MaterializeApproval, ap).Get(ctx, nil); err != nil {
		if isChorusError(err) {
			return ProposalResult{}, err
		}
		return ProposalResult{}, fmt.Errorf("could not materialize the approval: %w", err)
	}
	w.state = n
	w.publish(ctx)
	if err := startTaskWorkflows(ctx, ap.Tasks, ap.Criteria); err != nil {
		return ProposalResult{}, err
	}
	r := w.result()
	r.Materialized = mat
	return r, nil
}

// startTaskWorkflows starts one TaskWorkflow per materialized task as an abandoned child (it
// outlives this run and any continue-as-new) and waits until all have started.
func startTaskWorkflows(ctx workflow.Context, tasks []store.Task, criteria []store.AcceptanceCriterion) error {
	var futures []workflow.ChildWorkflowFuture
	for _, t := range tasks {
		st := TaskState{Created: true, Task: t}
		for _, c := range criteria {
			if c.TaskUUID == t.UUID {
				st.Criteria = append(st.Criteria, CriterionState{UUID: c.UUID, Required: c.Required, Status: c.Status, DevStatus: c.DevStatus})
			}
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            TaskID(t.UUID),
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			StaticSummary:         "Task: " + t.Title,
			TypedSearchAttributes: initialAttributes(EntityTask, t.ProjectUUID, t.Status),
			Memo:                  map[string]any{"title": t.Title},
		})
		futures = append(futures, workflow.ExecuteChildWorkflow(cctx, TaskWorkflowName, TaskRun{State: &st}))
	}
	for i, f := range futures {
		if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			return fmt.Errorf("could not start the workflow of task %s: %w", tasks[i].UUID, err)
		}
	}
	return nil
}

// ---- revoke ----

func (w *proposalWorkflow) validateRevoke(in ProposalCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	if err := w.ownOrAdmin(in.Actor, "revoke"); err != nil {
		return err
	}
	if _, err := w.state.status().Next(ProposalRevoke); err != nil {
		return Refuse(KindConflict, "Can only revoke approved Proposals, current status: %s", w.state.Proposal.Status)
	}
	return nil
}

// revoke runs the cascade of SPEC 4.8 in one transaction, then tells each task's workflow that
// its task was closed.
func (w *proposalWorkflow) revoke(ctx workflow.Context, in ProposalCommand) (ProposalResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(ProposalRevoke)
	n.Proposal.Status = string(to)
	w.review(&n, in.Actor, now, in.ReviewNote)
	c := w.change(n, now, reviewColumns...)
	c.Activities = []activities.ActivityRecord{w.activity(n, now, in.Actor, "revoked", nil)}
	var a *activities.Activities
	var out activities.Revoked
	if err := persist(ctx, a.RevokeCascade,
		activities.Revoke{Change: c, ReviewNote: in.ReviewNote}).Get(ctx, &out); err != nil {
		if isChorusError(err) {
			return ProposalResult{}, err
		}
		return ProposalResult{}, fmt.Errorf("could not revoke the proposal: %w", err)
	}
	w.state = n
	w.publish(ctx)
	var signals []workflow.Future
	for _, id := range out.TaskUUIDs {
		signals = append(signals, workflow.SignalExternalWorkflow(ctx, TaskID(id), "", SignalProposalRevoked,
			ProposalRevoked{ProposalUUID: n.Proposal.UUID, At: now}))
	}
	for _, f := range signals {
		_ = f.Get(ctx, nil) // a task whose workflow is gone (deleted task) has nothing to update
	}
	r := w.result()
	r.Revoked = &out
	return r, nil
}
