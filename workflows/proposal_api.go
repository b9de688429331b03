// The API of ProposalWorkflow: its names, its state, the inputs and results of its commands.

package workflows

import (
	"slices"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
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
	// Gates are the proposal's gates awaiting a person, and the latest decided (docs/rules.md §6.7).
	Gates []GateState `json:"gates,omitempty"`
}

func (s ProposalState) clone() ProposalState {
	c := s
	c.InputUUIDs = slices.Clone(s.InputUUIDs)
	c.Documents, c.Tasks = slices.Clone(s.Documents), slices.Clone(s.Tasks)
	c.Finished = slices.Clone(s.Finished)
	c.Recent = slices.Clone(s.Recent)
	return c
}

func (s ProposalState) status() vocab.ProposalStatus { return vocab.ProposalStatus(s.Status) }

// Projection is the proposal's row as far as the workflow owns it (ProposalColumns, with version
// and change_id).
func (s ProposalState) Projection() store.Proposal {
	return store.Proposal{UUID: s.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, Title: s.Title,
		InputType: s.InputType, InputUUIDs: s.InputUUIDs, Status: vocab.ProposalStatus(s.Status), CreatedByType: s.CreatedBy.Type,
		CreatedByUUID: s.CreatedBy.UUID, ReviewedByUUID: nilIfBlank(s.ReviewedBy), ReviewedAt: s.ReviewedAt,
		Version: s.Row.Version, ChangeID: s.Row.ChangeID}
}

// ProposalColumns are the columns of a proposal row its workflow owns, as the store names them
// (chorus ops compares and repairs them).
var ProposalColumns = store.ProposalWorkflowColumns

// ProposalRun is ProposalWorkflow's input: empty for a new proposal, the state when continuing.
type ProposalRun struct {
	State *ProposalState `json:"state"`
}

// CreateProposalInput creates the proposal (update-with-start). The caller has checked the
// inputs (they exist, are visible, are ideas the caller holds, are not themes).
type CreateProposalInput struct {
	Actor       Actor    `json:"actor"`
	UUID        string   `json:"uuid"`
	ProjectUUID string   `json:"projectUuid"`
	ProjectName string   `json:"projectName"`
	Title       string   `json:"title"`
	Description *string  `json:"description"`
	InputType   string   `json:"inputType"`
	InputUUIDs  []string `json:"inputUuiDs"`
}

// ProposalCommand is the input of commands that need only the actor and an optional note.
type ProposalCommand struct {
	Actor      Actor   `json:"actor"`
	ReviewNote *string `json:"reviewNote"`
}

// DocumentDraftInput adds or (with DraftUUID, nil fields untouched) updates a document draft.
type DocumentDraftInput struct {
	Actor     Actor   `json:"actor"`
	DraftUUID string  `json:"draftUuid"`
	Type      *string `json:"type"`
	Title     *string `json:"title"`
	Content   *string `json:"content"`
}

// TaskDraftInput adds or (with DraftUUID, nil fields untouched) updates a task draft.
type TaskDraftInput struct {
	Actor       Actor    `json:"actor"`
	DraftUUID   string   `json:"draftUuid"`
	Title       *string  `json:"title"`
	Description *string  `json:"description"`
	StoryPoints *float64 `json:"storyPoints"`
	Priority    *string  `json:"priority"`
	Kind        *string  `json:"kind"`
	// Criteria replaces the acceptance criteria when SetCriteria (always, for add).
	SetCriteria bool                   `json:"setCriteria"`
	Criteria    []store.CriterionDraft `json:"criteria"`
	// DependsOn replaces the dependencies when SetDependsOn.
	SetDependsOn bool     `json:"setDependsOn"`
	DependsOn    []string `json:"dependsOn"`
}

// RemoveDraftInput removes a draft.
type RemoveDraftInput struct {
	Actor     Actor  `json:"actor"`
	DraftUUID string `json:"draftUuid"`
}

// ProposalResult is what proposal updates return.
type ProposalResult struct {
	UUID         string         `json:"uuid"`
	Status       string         `json:"status"`
	DraftUUID    string         `json:"draftUuid,omitempty"`
	DraftTitle   string         `json:"draftTitle,omitempty"`
	Materialized *Materialized  `json:"materialized,omitempty"`
	Revoked      *store.Revoked `json:"revoked,omitempty"`
	Validation   *Validation    `json:"validation,omitempty"`
}

// Materialized lists what an approval created, in draft order.
type Materialized struct {
	Tasks     []MaterializedItem `json:"tasks"`
	Documents []MaterializedItem `json:"documents"`
}

// MaterializedItem pairs a draft with the entity made from it.
type MaterializedItem struct {
	DraftUUID string `json:"draftUuid"`
	UUID      string `json:"uuid"`
	Title     string `json:"title"`
}
