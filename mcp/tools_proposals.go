package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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

// ReviewView is a proposal's last review.
type ReviewView struct {
	ReviewedBy *store.ActorRef `json:"reviewedBy"`
	ReviewNote *string         `json:"reviewNote"`
	ReviewedAt *time.Time      `json:"reviewedAt"`
}

// DocumentDraftIndex is a document draft without its content.
type DocumentDraftIndex struct {
	UUID          string `json:"uuid"`
	Type          string `json:"type"`
	Title         string `json:"title"`
	ContentLength int    `json:"contentLength"`
}

// TaskDraftIndex is a task draft without its description and criteria.
type TaskDraftIndex struct {
	UUID                    string   `json:"uuid"`
	Title                   string   `json:"title"`
	Priority                *string  `json:"priority,omitempty"`
	StoryPoints             *float64 `json:"storyPoints,omitempty"`
	Kind                    *string  `json:"kind,omitempty"`
	AcceptanceCriteriaCount int      `json:"acceptanceCriteriaCount"`
	DependsOnDraftUUIDs     []string `json:"dependsOnDraftUuids,omitempty"`
}

// MaterializedTask pairs a task draft with the task approval made.
type MaterializedTask struct {
	DraftUUID string `json:"draftUuid"`
	TaskUUID  string `json:"taskUuid"`
	Title     string `json:"title"`
}

// MaterializedDocument pairs a document draft with the document approval made.
type MaterializedDocument struct {
	DraftUUID    string `json:"draftUuid"`
	DocumentUUID string `json:"documentUuid"`
	Title        string `json:"title"`
}

// ProposalView is the proposal JSON of chorus_get_proposal (and approve): common meta plus the
// parts the section asks for.
type ProposalView struct {
	UUID           string          `json:"uuid"`
	Title          string          `json:"title"`
	Description    *string         `json:"description"`
	InputType      string          `json:"inputType"`
	InputUUIDs     []string        `json:"inputUuids"`
	Status         string          `json:"status"`
	Project        ProjectRef      `json:"project"`
	CreatedBy      *store.ActorRef `json:"createdBy"`
	CreatedByType  string          `json:"createdByType"`
	Review         *ReviewView     `json:"review"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	Section        string          `json:"section"`
	References     []ReferenceView `json:"references" jsonschema:"its references, oldest first, as many as fit the answer's 64 KiB budget (chorus_get_references pages them all)"`
	ReferenceCount int             `json:"referenceCount" jsonschema:"how many references it has"`

	DocumentDraftCount *int                 `json:"documentDraftCount,omitempty"`
	TaskDraftCount     *int                 `json:"taskDraftCount,omitempty"`
	DocumentDraftIndex []DocumentDraftIndex `json:"documentDraftIndex,omitempty"`
	TaskDraftIndex     []TaskDraftIndex     `json:"taskDraftIndex,omitempty"`

	DocumentDrafts *[]store.DocumentDraft `json:"documentDrafts,omitempty"`
	TaskDrafts     *[]store.TaskDraft     `json:"taskDrafts,omitempty"`

	MaterializedTasks     []MaterializedTask     `json:"materializedTasks,omitempty"`
	MaterializedDocuments []MaterializedDocument `json:"materializedDocuments,omitempty"`
}

func proposalView(ctx context.Context, n *store.Namer, p *store.Proposal, projectName, section string) ProposalView {
	v := ProposalView{UUID: p.UUID, Title: p.Title, Description: p.Description, InputType: p.InputType,
		InputUUIDs: p.InputUUIDs, Status: string(p.Status), Project: ProjectRef{UUID: p.ProjectUUID, Name: projectName},
		CreatedBy: n.Ref(ctx, p.CreatedByType, &p.CreatedByUUID), CreatedByType: p.CreatedByType,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Section: section, References: []ReferenceView{}}
	if v.InputUUIDs == nil {
		v.InputUUIDs = []string{}
	}
	if p.ReviewedByUUID != nil {
		v.Review = &ReviewView{ReviewedBy: n.Ref(ctx, "agent", p.ReviewedByUUID), ReviewNote: p.ReviewNote, ReviewedAt: p.ReviewedAt}
	}
	switch section {
	case "basic":
		dc, tc := len(p.DocumentDrafts), len(p.TaskDrafts)
		v.DocumentDraftCount, v.TaskDraftCount = &dc, &tc
		v.DocumentDraftIndex, v.TaskDraftIndex = []DocumentDraftIndex{}, []TaskDraftIndex{}
		for _, d := range p.DocumentDrafts {
			v.DocumentDraftIndex = append(v.DocumentDraftIndex, DocumentDraftIndex{UUID: d.UUID, Type: d.Type, Title: d.Title,
				ContentLength: len([]rune(d.Content))})
		}
		for _, t := range p.TaskDrafts {
			v.TaskDraftIndex = append(v.TaskDraftIndex, TaskDraftIndex{UUID: t.UUID, Title: t.Title, Priority: t.Priority,
				StoryPoints: t.StoryPoints, Kind: t.Kind, AcceptanceCriteriaCount: len(t.AcceptanceCriteriaItems),
				DependsOnDraftUUIDs: t.DependsOnDraftUUIDs})
		}
	case "documents":
		v.DocumentDrafts = &p.DocumentDrafts
	case "tasks":
		v.TaskDrafts = &p.TaskDrafts
	case "full":
		v.DocumentDrafts, v.TaskDrafts = &p.DocumentDrafts, &p.TaskDrafts
	}
	return v
}

// fit cuts the proposal's references to the answer's byte budget (docs/rules.md §3.6); its
// drafts are its own fields, which the limits on drafts bound.
func (v *ProposalView) fit() {
	refs := v.References
	fitLists(v, budgetList{len(refs), func(n int) { v.References = refs[:n] }})
}

// proposalAccess gates a proposal for a tool that changes it (editor).
func proposalAccess(ctx context.Context, d *Deps, call *Call, uuid string) (*store.Proposal, *store.ProjectView, error) {
	return d.Store.ProposalAccess(ctx, call.Who.Caller, uuid, store.AccessEditor)
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
		if _, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessViewer); err != nil {
			return ProposalList{}, err
		}
		status := in.Status
		if status == "rejected" || status == "revised" {
			status = "legacy" // docs/rules.md §8.10: accepted, matches nothing
		}
		page, size, offset := in.window(20)
		rows, total, err := d.Store.ListProposals(ctx, string(in.ProjectUUID), status, size, offset)
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
		p, pv, err := d.Store.ProposalAccess(ctx, call.Who.Caller, string(in.ProposalUUID), store.AccessViewer)
		if err != nil {
			return ProposalView{}, err
		}
		section := in.Section
		if section == "" {
			section = "basic"
		}
		n := d.Store.NewNamer()
		v := proposalView(ctx, n, p, pv.Name, section)
		if v.References, v.ReferenceCount, err = targetReferences(ctx, d, n, "proposal", p.UUID); err != nil {
			return ProposalView{}, err
		}
		return v, nil
	},
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

// checkInputs gates a proposal's inputs (docs/rules.md §2.3): each resolves to an idea or document the
// caller can see; idea inputs must be claimed by the caller and not be themes.
func checkInputs(ctx context.Context, d *Deps, who Principal, inputType string, uuids []string) error {
	for i, u := range uuids {
		if slices.Contains(uuids[:i], u) {
			return invalid("inputUuids lists %s twice", u)
		}
		if inputType == "document" {
			if _, _, err := d.Store.DocumentAccess(ctx, who.Caller, u, store.AccessViewer); err != nil {
				return err
			}
			continue
		}
		i, _, err := d.Store.IdeaAccess(ctx, who.Caller, u, store.AccessViewer)
		if err != nil {
			return err
		}
		if i.AssigneeType == nil || *i.AssigneeType != "agent" || deref(i.AssigneeUUID) != who.Caller.AgentUUID {
			return refuse("Can only create Proposals based on Ideas you have claimed (idea %q is not held by you; claim it with chorus_claim_idea)", i.Title)
		}
		if i.IsContainer {
			return refuse("Cannot create a proposal from a theme (container) idea; derive a child idea and propose on it (idea %q)", i.Title)
		}
	}
	return nil
}

var pmCreateProposal = tool[CreateProposalIn, CreatedProposal]{
	Name: "chorus_pm_create_proposal", Title: "Create a proposal", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Create an empty draft proposal from ideas you hold, or from documents. note names other proposals " +
		"using an input idea.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateProposalIn) (CreatedProposal, error) {
		if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
			return CreatedProposal{}, err
		}
		project, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessEditor)
		if err != nil {
			return CreatedProposal{}, err
		}
		if err := checkInputs(ctx, d, call.Who, in.InputType, uuidStrings(in.InputUUIDs)); err != nil {
			return CreatedProposal{}, err
		}
		uuid := call.newID("proposal")
		res, err := d.Flows.CreateProposal(ctx, flowCall(call), workflows.CreateProposalInput{Actor: actor(call.Who), UUID: uuid,
			ProjectUUID: string(in.ProjectUUID), ProjectName: project.Name, Title: in.Title, Description: in.Description, InputType: in.InputType, InputUUIDs: uuidStrings(in.InputUUIDs)})
		if err != nil {
			return CreatedProposal{}, err
		}
		out := CreatedProposal{UUID: res.UUID, Title: strings.TrimSpace(in.Title), Status: res.Status}
		out.ReferenceErrors, err = addInlineReferences(ctx, d, call, store.Target{Type: "proposal", UUID: res.UUID, ProjectUUID: string(in.ProjectUUID)}, in.References, nil)
		if err != nil {
			return CreatedProposal{}, err
		}
		if in.InputType == "idea" && len(in.InputUUIDs) > 0 {
			titles, err := d.Store.ProposalsUsingIdeas(ctx, call.Who.Caller, uuidStrings(in.InputUUIDs), res.UUID)
			if err != nil {
				return CreatedProposal{}, err
			}
			if len(titles) > 0 {
				quoted := make([]string, len(titles))
				for i, t := range titles {
					quoted[i] = fmt.Sprintf("%q", t)
				}
				out.NoteText = "Idea is also referenced by existing Proposal(s): " + strings.Join(quoted, ", ")
			}
		}
		return out, nil
	},
}

// ---- validate / submit ----

// ValidationOut is chorus_pm_validate_proposal's result.
type ValidationOut struct {
	Valid  bool              `json:"valid"`
	Issues []workflows.Issue `json:"issues"`
}

// validationOf gates a proposal and its inputs and runs docs/rules.md §5.4 on its current drafts.
func validationOf(ctx context.Context, d *Deps, call *Call, proposalUUID string) (*store.Proposal, workflows.Validation, error) {
	p, _, err := proposalAccess(ctx, d, call, proposalUUID)
	if err != nil {
		return nil, workflows.Validation{}, err
	}
	var facts []store.IdeaFacts
	for _, u := range p.InputUUIDs { // docs/rules.md §5.4: a missing or hidden input fails at the gate
		if p.InputType == "document" {
			if _, _, err := d.Store.DocumentAccess(ctx, call.Who.Caller, u, store.AccessViewer); err != nil {
				return nil, workflows.Validation{}, err
			}
		} else if _, _, err := d.Store.IdeaAccess(ctx, call.Who.Caller, u, store.AccessViewer); err != nil {
			return nil, workflows.Validation{}, err
		}
	}
	if p.InputType == "idea" {
		if facts, err = d.Store.LoadIdeaFacts(ctx, p.CompanyUUID, p.InputUUIDs); err != nil {
			return nil, workflows.Validation{}, err
		}
	}
	return p, workflows.ValidateProposal(*p, facts), nil
}

var pmValidateProposal = tool[ProposalIn, ValidationOut]{
	Name: "chorus_pm_validate_proposal", Title: "Validate a proposal", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: reads,
	Desc: "Check a proposal as submission will, changing nothing: errors block submission.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ProposalIn) (ValidationOut, error) {
		_, v, err := validationOf(ctx, d, call, string(in.ProposalUUID))
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
		if _, _, err := validationOf(ctx, d, call, string(in.ProposalUUID)); err != nil {
			return StatusOut{}, err
		}
		a := actor(call.Who)
		res, err := workflows.Send(ctx, d.Flows, workflows.SubmitProposal, string(in.ProposalUUID), flowCall(call), a.UUID, workflows.ProposalCommand{Actor: a})
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

// draftUpdate gates the proposal and sends one draft update.
func draftUpdate[In any](ctx context.Context, d *Deps, call *Call, proposalUUID string, cmd workflows.Command[In, workflows.ProposalResult],
	action string, in In) (DraftOut, error) {
	if _, _, err := proposalAccess(ctx, d, call, proposalUUID); err != nil {
		return DraftOut{}, err
	}
	res, err := workflows.Send(ctx, d.Flows, cmd, proposalUUID, flowCall(call), call.Who.Caller.AgentUUID, in)
	if err != nil {
		return DraftOut{}, err
	}
	return DraftOut{ProposalUUID: res.UUID, Action: action, DraftUUID: res.DraftUUID, DraftTitle: res.DraftTitle}, nil
}

var pmAddDocumentDraft = tool[AddDocumentDraftIn, DraftOut]{
	Name: "chorus_pm_add_document_draft", Title: "Add a document draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Add a document draft to a draft proposal.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddDocumentDraftIn) (DraftOut, error) {
		return draftUpdate(ctx, d, call, string(in.ProposalUUID), workflows.AddDocumentDraft, "document_draft_added",
			workflows.DocumentDraftInput{Actor: actor(call.Who), Type: &in.Type, Title: &in.Title, Content: &in.Content})
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
		return draftUpdate(ctx, d, call, string(in.ProposalUUID), workflows.UpdateDocumentDraft, "document_draft_updated",
			workflows.DocumentDraftInput{Actor: actor(call.Who), DraftUUID: string(in.DraftUUID), Type: in.Type, Title: in.Title, Content: in.Content})
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
		return draftUpdate(ctx, d, call, string(in.ProposalUUID), workflows.AddTaskDraft, "task_draft_added",
			workflows.TaskDraftInput{Actor: actor(call.Who), Title: &in.Title, Description: in.Description,
				StoryPoints: in.StoryPoints, Priority: in.Priority, Kind: in.Kind, SetCriteria: true,
				Criteria: criteria(in.AcceptanceCriteriaItems), SetDependsOn: true, DependsOn: uuidStrings(in.DependsOnDraftUUIDs)})
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
		return draftUpdate(ctx, d, call, string(in.ProposalUUID), workflows.UpdateTaskDraft, "task_draft_updated",
			workflows.TaskDraftInput{Actor: actor(call.Who), DraftUUID: string(in.DraftUUID), Title: in.Title, Description: in.Description,
				StoryPoints: in.StoryPoints, Priority: in.Priority, Kind: in.Kind,
				SetCriteria: in.AcceptanceCriteriaItems != nil, Criteria: criteria(in.AcceptanceCriteriaItems),
				SetDependsOn: in.DependsOnDraftUUIDs != nil, DependsOn: uuidStrings(in.DependsOnDraftUUIDs)})
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
		out, err := draftUpdate(ctx, d, call, string(in.ProposalUUID), workflows.RemoveDocumentDraft, "document_draft_removed",
			workflows.RemoveDraftInput{Actor: actor(call.Who), DraftUUID: string(in.DraftUUID)})
		out.DraftTitle = ""
		return out, err
	},
}

var pmRemoveTaskDraft = tool[RemoveDraftIn, DraftOut]{
	Name: "chorus_pm_remove_task_draft", Title: "Remove a task draft", Toolset: tsProposals, Perm: perm.ProposalWrite, Effect: destroys, Idempotent: true,
	Desc: "Remove a task draft from a draft proposal and from other drafts' dependencies.",
	Run: func(ctx context.Context, d *Deps, call *Call, in RemoveDraftIn) (DraftOut, error) {
		out, err := draftUpdate(ctx, d, call, string(in.ProposalUUID), workflows.RemoveTaskDraft, "task_draft_removed",
			workflows.RemoveDraftInput{Actor: actor(call.Who), DraftUUID: string(in.DraftUUID)})
		out.DraftTitle = ""
		return out, err
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

func reviewCommand(ctx context.Context, d *Deps, call *Call, proposalUUID string, cmd workflows.Command[workflows.ProposalCommand, workflows.ProposalResult],
	note *string) (workflows.ProposalResult, error) {
	if _, _, err := proposalAccess(ctx, d, call, proposalUUID); err != nil {
		return workflows.ProposalResult{}, err
	}
	a := actor(call.Who)
	a.ProposalAdmin = call.Who.Perms.Has(perm.ProposalAdmin)
	return workflows.Send(ctx, d.Flows, cmd, proposalUUID, flowCall(call), a.UUID, workflows.ProposalCommand{Actor: a, ReviewNote: note})
}

var pmRejectProposal = tool[ReviewIn, StatusOut]{
	Name: "chorus_pm_reject_proposal", Title: "Reject a proposal", Toolset: tsReview, Perm: perm.ProposalWrite, Effect: destroys,
	Desc: "Send a pending proposal back to draft with a review note. Author or proposal:admin only.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReviewIn) (StatusOut, error) {
		res, err := reviewCommand(ctx, d, call, string(in.ProposalUUID), workflows.RejectProposal, &in.ReviewNote)
		return StatusOut{UUID: res.UUID, Status: res.Status}, err
	},
}

var adminCloseProposal = tool[ReviewIn, StatusOut]{
	Name: "chorus_admin_close_proposal", Title: "Close a proposal", Toolset: tsReview, Perm: perm.ProposalAdmin, Effect: destroys,
	Desc: "Close a pending proposal for good, with a review note.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReviewIn) (StatusOut, error) {
		res, err := reviewCommand(ctx, d, call, string(in.ProposalUUID), workflows.CloseProposal, &in.ReviewNote)
		return StatusOut{UUID: res.UUID, Status: res.Status}, err
	},
}

var adminApproveProposal = tool[OptionalReviewIn, ProposalView]{
	Name: "chorus_admin_approve_proposal", Title: "Approve a proposal", Toolset: tsReview, Perm: perm.ProposalAdmin, Effect: writes,
	Desc: "Approve a pending proposal: its drafts become documents and open tasks.",
	Run: func(ctx context.Context, d *Deps, call *Call, in OptionalReviewIn) (ProposalView, error) {
		res, err := reviewCommand(ctx, d, call, string(in.ProposalUUID), workflows.ApproveProposal, in.ReviewNote)
		if err != nil {
			return ProposalView{}, err
		}
		p, pv, err := d.Store.ProposalAccess(ctx, call.Who.Caller, string(in.ProposalUUID), store.AccessViewer)
		if err != nil {
			return ProposalView{}, err
		}
		n := d.Store.NewNamer()
		v := proposalView(ctx, n, p, pv.Name, "basic")
		if v.References, v.ReferenceCount, err = targetReferences(ctx, d, n, "proposal", p.UUID); err != nil {
			return ProposalView{}, err
		}
		if m := res.Materialized; m != nil {
			for _, t := range m.Tasks {
				v.MaterializedTasks = append(v.MaterializedTasks, MaterializedTask{DraftUUID: t.DraftUUID, TaskUUID: t.UUID, Title: t.Title})
			}
			for _, doc := range m.Documents {
				v.MaterializedDocuments = append(v.MaterializedDocuments, MaterializedDocument{DraftUUID: doc.DraftUUID, DocumentUUID: doc.UUID, Title: doc.Title})
			}
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
		res, err := reviewCommand(ctx, d, call, string(in.ProposalUUID), workflows.RevokeProposal, in.ReviewNote)
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
