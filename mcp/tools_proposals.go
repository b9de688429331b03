package mcp

import (
	"context"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Proposal tools (docs/rules.md §4.5, §4.6, §2.3, §5.4). Reads come from the store; every change is an
// update on the proposal's workflow.

// ProposalIn names a proposal.
type ProposalIn struct {
	ProposalUUID UUID `json:"proposalUuid"`
}

// ---- reads ----

// GetProposalsIn is chorus_get_proposals' input.
type GetProposalsIn struct {
	ProjectUUID UUID   `json:"projectUuid"`
	Status      string `json:"status,omitempty" chorus:"enum=draft|pending|approved|closed|rejected|revised"`
	PageIn
}

// ProposalRow is one row of chorus_get_proposals.
type ProposalRow struct {
	UUID       string    `json:"uuid"`
	Title      string    `json:"title"`
	Status     string    `json:"status"`
	InputType  string    `json:"inputType"`
	InputUUIDs []string  `json:"inputUuids"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// ProposalList is chorus_get_proposals' result.
type ProposalList struct {
	Proposals []ProposalRow `json:"proposals"`
	Meta
}

var getProposals = tool[GetProposalsIn, ProposalList]{
	Name: "chorus_get_proposals", Title: "List proposals", Toolset: tsProposals, Perm: perm.Public, Effect: reads,
	Desc: "List a project's proposals, newest first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetProposalsIn) (ProposalList, error) {
		page, size, offset := in.window(20)
		rows, total, err := d.app().ListProposals(ctx, call.Request, string(in.ProjectUUID), in.Status, size, offset)
		if err != nil {
			return ProposalList{}, err
		}
		out := make([]ProposalRow, len(rows))
		for i, p := range rows {
			out[i] = ProposalRow{UUID: p.UUID, Title: clip(p.Title), Status: string(p.Status), InputType: p.InputType,
				InputUUIDs: p.InputUUIDs, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
			if out[i].InputUUIDs == nil {
				out[i].InputUUIDs = []string{}
			}
		}
		wrap := func(r []ProposalRow) any {
			return ProposalList{Proposals: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(out, wrap)).(ProposalList), nil
	},
}

// GetProposalIn is chorus_get_proposal's input.
type GetProposalIn struct {
	ProposalUUID UUID   `json:"proposalUuid"`
	Section      string `json:"section,omitempty" jsonschema:"default basic: an index of the drafts" chorus:"enum=basic|documents|tasks|full"`
}

var getProposal = tool[GetProposalIn, ProposalView]{
	Name: "chorus_get_proposal", Title: "Get a proposal", Toolset: tsProposals, Perm: perm.Public, Effect: reads,
	Desc: "Get a proposal with an index of its drafts, or the drafts in full (section).",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetProposalIn) (ProposalView, error) {
		rec, err := d.app().GetProposal(ctx, call.Request, string(in.ProposalUUID))
		if err != nil {
			return ProposalView{}, err
		}
		section := in.Section
		if section == "" {
			section = "basic"
		}
		return proposalWithReferences(ctx, d, rec, section)
	},
}

// proposalWithReferences is a proposal's view with its references.
func proposalWithReferences(ctx context.Context, d *Deps, rec app.ProposalRecord, section string) (ProposalView, error) {
	n := d.Store.NewNamer()
	v := proposalView(ctx, n, rec.Proposal, rec.ProjectName, section)
	var err error
	if v.References, v.ReferenceCount, err = targetReferences(ctx, d, n, "proposal", rec.Proposal.UUID); err != nil {
		return ProposalView{}, err
	}
	return v, nil
}

// ---- create ----

// CreateProposalIn is chorus_pm_create_proposal's input.
type CreateProposalIn struct {
	ProjectUUID UUID          `json:"projectUuid"`
	Title       string        `json:"title" chorus:"minLength=1"`
	Description *string       `json:"description,omitempty"`
	InputType   string        `json:"inputType" chorus:"enum=idea|document"`
	InputUUIDs  []UUID        `json:"inputUuids"`
	References  []ReferenceIn `json:"references,omitempty" jsonschema:"links to attach; one that is invalid is reported in referenceErrors" chorus:"maxItems=50"`
}

// CreatedProposal is chorus_pm_create_proposal's result.
type CreatedProposal struct {
	UUID   string `json:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
	// ReferenceErrors lists the inline references that were not added (only when there are any).
	ReferenceErrors []ReferenceError `json:"referenceErrors,omitempty"`
	// NoteText is the reuse note (docs/rules.md §8.11), only when there is one.
	NoteText string `json:"note,omitempty" jsonschema:"other proposals already using an input idea, when there are any"`
}

// Note is the line the text carries after the JSON (docs/rules.md §8.11).
func (c *CreatedProposal) Note() string {
	if c.NoteText == "" {
		return ""
	}
	return "Note: " + c.NoteText
}

var pmCreateProposal = tool[CreateProposalIn, CreatedProposal]{
	Name: "chorus_pm_create_proposal", Title: "Create a proposal", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Create an empty draft proposal from ideas you hold, or from documents. note names other proposals " +
		"using an input idea.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateProposalIn) (CreatedProposal, error) {
		res, err := d.app().CreateProposal(ctx, call.Request, app.CreateProposalInput{ProjectUUID: string(in.ProjectUUID),
			Title: in.Title, Description: in.Description, InputType: in.InputType, InputUUIDs: uuidStrings(in.InputUUIDs),
			References: referenceInputs(in.References)})
		if err != nil {
			return CreatedProposal{}, err
		}
		return CreatedProposal{UUID: res.UUID, Title: res.Title, Status: res.Status,
			ReferenceErrors: referenceErrors(res.ReferenceErrors), NoteText: res.Note}, nil
	},
}

// ---- validate / submit ----

// ValidationOut is chorus_pm_validate_proposal's result.
type ValidationOut struct {
	Valid  bool              `json:"valid"`
	Issues []workflows.Issue `json:"issues"`
}

var pmValidateProposal = tool[ProposalIn, ValidationOut]{
	Name: "chorus_pm_validate_proposal", Title: "Validate a proposal", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: reads,
	Desc: "Check a proposal as submission will, changing nothing: errors block submission.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ProposalIn) (ValidationOut, error) {
		v, err := d.app().ValidateProposal(ctx, call.Request, string(in.ProposalUUID))
		return ValidationOut{Valid: v.Valid, Issues: v.Issues}, err
	},
}

// StatusOut is the {uuid, status} result of several lifecycle tools.
type StatusOut struct {
	UUID   string `json:"uuid"`
	Status string `json:"status"`
}

var pmSubmitProposal = tool[ProposalIn, StatusOut]{
	Name: "chorus_pm_submit_proposal", Title: "Submit a proposal", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Submit a draft proposal for review. Refused, listing every issue, when validation finds an error.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ProposalIn) (StatusOut, error) {
		res, err := d.app().SubmitProposal(ctx, call.Request, string(in.ProposalUUID))
		if err != nil {
			return StatusOut{}, err
		}
		return StatusOut{UUID: res.UUID, Status: res.Status}, nil
	},
}

// ---- drafts ----

// DraftOut is the result of draft tools.
type DraftOut struct {
	ProposalUUID string `json:"proposalUuid"`
	Action       string `json:"action"`
	DraftUUID    string `json:"draftUuid"`
	DraftTitle   string `json:"draftTitle,omitempty"`
}

// AddDocumentDraftIn is chorus_pm_add_document_draft's input.
type AddDocumentDraftIn struct {
	ProposalUUID UUID   `json:"proposalUuid"`
	Type         string `json:"type" chorus:"enum=prd|tech_design|adr|spec|guide|report"`
	Title        string `json:"title" chorus:"minLength=1"`
	Content      string `json:"content" jsonschema:"markdown, 100 characters or more"`
}

// draftOut is a draft command's result as the draft tools return it.
func draftOut(action string, res app.DraftResult, err error) (DraftOut, error) {
	if err != nil {
		return DraftOut{}, err
	}
	return DraftOut{ProposalUUID: res.ProposalUUID, Action: action, DraftUUID: res.DraftUUID, DraftTitle: res.DraftTitle}, nil
}

var pmAddDocumentDraft = tool[AddDocumentDraftIn, DraftOut]{
	Name: "chorus_pm_add_document_draft", Title: "Add a document draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Add a document draft to a draft proposal.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddDocumentDraftIn) (DraftOut, error) {
		res, err := d.app().AddDocumentDraft(ctx, call.Request, app.DocumentDraftInput{ProposalUUID: string(in.ProposalUUID),
			Type: &in.Type, Title: &in.Title, Content: &in.Content})
		return draftOut("document_draft_added", res, err)
	},
}

// UpdateDocumentDraftIn is chorus_pm_update_document_draft's input.
type UpdateDocumentDraftIn struct {
	ProposalUUID UUID    `json:"proposalUuid"`
	DraftUUID    UUID    `json:"draftUuid"`
	Type         *string `json:"type,omitempty" chorus:"enum=prd|tech_design|adr|spec|guide|report"`
	Title        *string `json:"title,omitempty"`
	Content      *string `json:"content,omitempty"`
}

var pmUpdateDocumentDraft = tool[UpdateDocumentDraftIn, DraftOut]{
	Name: "chorus_pm_update_document_draft", Title: "Update a document draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes, Idempotent: true,
	Desc: "Change a document draft of a draft proposal; fields left out keep their value.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateDocumentDraftIn) (DraftOut, error) {
		res, err := d.app().UpdateDocumentDraft(ctx, call.Request, app.DocumentDraftInput{ProposalUUID: string(in.ProposalUUID),
			DraftUUID: string(in.DraftUUID), Type: in.Type, Title: in.Title, Content: in.Content})
		return draftOut("document_draft_updated", res, err)
	},
}

// CriterionIn is one acceptance criterion.
type CriterionIn struct {
	Description string `json:"description"`
	Required    *bool  `json:"required,omitempty" jsonschema:"default true"`
}

func criteria(items []CriterionIn) []store.CriterionDraft {
	out := make([]store.CriterionDraft, 0, len(items))
	for _, it := range items {
		out = append(out, store.CriterionDraft{Description: it.Description, Required: it.Required == nil || *it.Required})
	}
	return out
}

// AddTaskDraftIn is chorus_pm_add_task_draft's input.
type AddTaskDraftIn struct {
	ProposalUUID            UUID          `json:"proposalUuid"`
	Title                   string        `json:"title" chorus:"minLength=1"`
	Description             *string       `json:"description,omitempty"`
	StoryPoints             *float64      `json:"storyPoints,omitempty" chorus:"min=0"`
	Priority                *string       `json:"priority,omitempty" chorus:"enum=low|medium|high"`
	Kind                    *string       `json:"kind,omitempty" chorus:"enum=implementation|verification|docs|other"`
	AcceptanceCriteriaItems []CriterionIn `json:"acceptanceCriteriaItems"`
	DependsOnDraftUUIDs     []UUID        `json:"dependsOnDraftUuids,omitempty"`
}

var pmAddTaskDraft = tool[AddTaskDraftIn, DraftOut]{
	Name: "chorus_pm_add_task_draft", Title: "Add a task draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Add a task draft with acceptance criteria and dependencies to a draft proposal.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddTaskDraftIn) (DraftOut, error) {
		res, err := d.app().AddTaskDraft(ctx, call.Request, app.TaskDraftInput{ProposalUUID: string(in.ProposalUUID),
			Title: &in.Title, Description: in.Description, StoryPoints: in.StoryPoints, Priority: in.Priority, Kind: in.Kind,
			SetCriteria: true, Criteria: criteria(in.AcceptanceCriteriaItems), SetDependsOn: true,
			DependsOn: uuidStrings(in.DependsOnDraftUUIDs)})
		return draftOut("task_draft_added", res, err)
	},
}

// UpdateTaskDraftIn is chorus_pm_update_task_draft's input.
type UpdateTaskDraftIn struct {
	ProposalUUID            UUID          `json:"proposalUuid"`
	DraftUUID               UUID          `json:"draftUuid"`
	Title                   *string       `json:"title,omitempty"`
	Description             *string       `json:"description,omitempty"`
	StoryPoints             *float64      `json:"storyPoints,omitempty" chorus:"min=0"`
	Priority                *string       `json:"priority,omitempty" chorus:"enum=low|medium|high"`
	Kind                    *string       `json:"kind,omitempty" chorus:"enum=implementation|verification|docs|other"`
	AcceptanceCriteriaItems []CriterionIn `json:"acceptanceCriteriaItems,omitempty" jsonschema:"replaces all criteria"`
	DependsOnDraftUUIDs     []UUID        `json:"dependsOnDraftUuids,omitempty"`
}

var pmUpdateTaskDraft = tool[UpdateTaskDraftIn, DraftOut]{
	Name: "chorus_pm_update_task_draft", Title: "Update a task draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes, Idempotent: true,
	Desc: "Change a task draft of a draft proposal; fields left out are kept, lists given replace the old.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateTaskDraftIn) (DraftOut, error) {
		res, err := d.app().UpdateTaskDraft(ctx, call.Request, app.TaskDraftInput{ProposalUUID: string(in.ProposalUUID),
			DraftUUID: string(in.DraftUUID), Title: in.Title, Description: in.Description, StoryPoints: in.StoryPoints,
			Priority: in.Priority, Kind: in.Kind, SetCriteria: in.AcceptanceCriteriaItems != nil,
			Criteria: criteria(in.AcceptanceCriteriaItems), SetDependsOn: in.DependsOnDraftUUIDs != nil,
			DependsOn: uuidStrings(in.DependsOnDraftUUIDs)})
		return draftOut("task_draft_updated", res, err)
	},
}

// RemoveDraftIn names a draft of a proposal.
type RemoveDraftIn struct {
	ProposalUUID UUID `json:"proposalUuid"`
	DraftUUID    UUID `json:"draftUuid"`
}

var pmRemoveDocumentDraft = tool[RemoveDraftIn, DraftOut]{
	Name: "chorus_pm_remove_document_draft", Title: "Remove a document draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: destroys, Idempotent: true,
	Desc: "Remove a document draft from a draft proposal.",
	Run: func(ctx context.Context, d *Deps, call *Call, in RemoveDraftIn) (DraftOut, error) {
		res, err := d.app().RemoveDocumentDraft(ctx, call.Request, string(in.ProposalUUID), string(in.DraftUUID))
		res.DraftTitle = ""
		return draftOut("document_draft_removed", res, err)
	},
}

var pmRemoveTaskDraft = tool[RemoveDraftIn, DraftOut]{
	Name: "chorus_pm_remove_task_draft", Title: "Remove a task draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: destroys, Idempotent: true,
	Desc: "Remove a task draft from a draft proposal and from other drafts' dependencies.",
	Run: func(ctx context.Context, d *Deps, call *Call, in RemoveDraftIn) (DraftOut, error) {
		res, err := d.app().RemoveTaskDraft(ctx, call.Request, string(in.ProposalUUID), string(in.DraftUUID))
		res.DraftTitle = ""
		return draftOut("task_draft_removed", res, err)
	},
}

// ---- review ----

// ReviewIn is a proposal with a required review note.
type ReviewIn struct {
	ProposalUUID UUID   `json:"proposalUuid"`
	ReviewNote   string `json:"reviewNote" jsonschema:"for the author" chorus:"minLength=1"`
}

// OptionalReviewIn is a proposal with an optional review note.
type OptionalReviewIn struct {
	ProposalUUID UUID    `json:"proposalUuid"`
	ReviewNote   *string `json:"reviewNote,omitempty"`
}

var pmRejectProposal = tool[ReviewIn, StatusOut]{
	Name: "chorus_pm_reject_proposal", Title: "Reject a proposal", Toolset: tsReview, Perm: perm.ProposalWrite, Effect: destroys,
	Desc: "Send a pending proposal back to draft with a review note. Author or proposal:admin only.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReviewIn) (StatusOut, error) {
		res, err := d.app().RejectProposal(ctx, call.Request, string(in.ProposalUUID), in.ReviewNote)
		return StatusOut{UUID: res.UUID, Status: res.Status}, err
	},
}

var adminCloseProposal = tool[ReviewIn, StatusOut]{
	Name: "chorus_admin_close_proposal", Title: "Close a proposal", Toolset: tsReview, Perm: perm.ProposalAdmin, Effect: destroys,
	Desc: "Close a pending proposal for good, with a review note.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReviewIn) (StatusOut, error) {
		res, err := d.app().CloseProposal(ctx, call.Request, string(in.ProposalUUID), in.ReviewNote)
		return StatusOut{UUID: res.UUID, Status: res.Status}, err
	},
}

var adminApproveProposal = tool[OptionalReviewIn, ApproveOut]{
	Name: "chorus_admin_approve_proposal", Title: "Approve a proposal", Toolset: tsReview, Perm: perm.ProposalAdmin, Effect: writes,
	Desc: "Approve a pending proposal: its drafts become documents and open tasks. Where the project's policy has a " +
		"person decide approvals, nothing changes yet: awaitingHuman names the gate it waits at.",
	Run: func(ctx context.Context, d *Deps, call *Call, in OptionalReviewIn) (ApproveOut, error) {
		res, err := d.app().ApproveProposal(ctx, call.Request, string(in.ProposalUUID), in.ReviewNote)
		if err != nil {
			return ApproveOut{}, err
		}
		pv, err := proposalWithReferences(ctx, d, res.ProposalRecord, "basic")
		if err != nil {
			return ApproveOut{}, err
		}
		v := ApproveOut{ProposalView: pv, AwaitingHuman: awaitingHuman(res.Gate)}
		for _, t := range res.Tasks {
			v.MaterializedTasks = append(v.MaterializedTasks, MaterializedTask{DraftUUID: t.DraftUUID, TaskUUID: t.UUID, Title: t.Title})
		}
		for _, doc := range res.Documents {
			v.MaterializedDocuments = append(v.MaterializedDocuments, MaterializedDocument{DraftUUID: doc.DraftUUID, DocumentUUID: doc.UUID, Title: doc.Title})
		}
		return v, nil
	},
}

// Revoked is chorus_pm_revoke_proposal's result.
type Revoked struct {
	UUID             string     `json:"uuid"`
	Status           string     `json:"status"`
	ClosedTasks      []NamedRef `json:"closedTasks"`
	DeletedDocuments []NamedRef `json:"deletedDocuments"`
}

// NamedRef is an entity's uuid and title.
type NamedRef struct {
	UUID  string `json:"uuid"`
	Title string `json:"title"`
}

var pmRevokeProposal = tool[OptionalReviewIn, Revoked]{
	Name: "chorus_pm_revoke_proposal", Title: "Revoke a proposal", Toolset: tsReview, Perm: perm.ProposalWrite, Effect: destroys,
	Desc: "Take back an approved proposal: its tasks close, its documents go, it returns to draft. Author or " +
		"proposal:admin only.",
	Run: func(ctx context.Context, d *Deps, call *Call, in OptionalReviewIn) (Revoked, error) {
		res, err := d.app().RevokeProposal(ctx, call.Request, string(in.ProposalUUID), in.ReviewNote)
		if err != nil {
			return Revoked{}, err
		}
		out := Revoked{UUID: res.UUID, Status: res.Status, ClosedTasks: []NamedRef{}, DeletedDocuments: []NamedRef{}}
		if r := res.Revoked; r != nil {
			for _, t := range r.ClosedTasks {
				out.ClosedTasks = append(out.ClosedTasks, NamedRef{UUID: t.UUID, Title: t.Title})
			}
			for _, doc := range r.DeletedDocuments {
				out.DeletedDocuments = append(out.DeletedDocuments, NamedRef{UUID: doc.UUID, Title: doc.Title})
			}
		}
		return out, nil
	},
}
