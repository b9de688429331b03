package mcp

import (
	"context"
	"time"

	"github.com/chorus-dev/chorus/store"
)

// Views of a proposal: the JSON the proposal tools return.

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
