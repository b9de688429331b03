package mcp

import (
	"context"
	"encoding/json"
	"time"

	"github.com/chorus-dev/chorus/store"
)

// The JSON shapes of ideas and elaboration (docs/rules.md §4.3), built from store rows.

// ProjectRef names a project.
type ProjectRef struct {
	UUID string `json:"uuid"`
	Name string `json:"name"`
}

// AssigneeView is an entity's assignee.
type AssigneeView struct {
	Type       string          `json:"type"`
	UUID       string          `json:"uuid"`
	Name       string          `json:"name"`
	AssignedAt *time.Time      `json:"assignedAt"`
	AssignedBy *store.ActorRef `json:"assignedBy"`
}

// IdeaRefView is a parent idea.
type IdeaRefView struct {
	UUID   string `json:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// IdeaChildView is a direct child idea.
type IdeaChildView struct {
	UUID          string `json:"uuid"`
	Title         string `json:"title"`
	Status        string `json:"status"`
	DerivedStatus string `json:"derivedStatus"`
}

// IdeaView is the Idea JSON of chorus_get_idea, claim and release.
type IdeaView struct {
	UUID              string               `json:"uuid"`
	Title             string               `json:"title"`
	Content           *string              `json:"content"`
	Attachments       []AttachmentView     `json:"attachments"`
	Status            string               `json:"status"`
	DerivedStatus     string               `json:"derivedStatus"`
	ChildProgress     *store.ChildProgress `json:"childProgress,omitempty"`
	IsContainer       bool                 `json:"isContainer"`
	Assignee          *AssigneeView        `json:"assignee"`
	Project           ProjectRef           `json:"project"`
	ElaborationStatus *string              `json:"elaborationStatus,omitempty"`
	ElaborationDepth  *string              `json:"elaborationDepth,omitempty"`
	CreatedBy         *store.ActorRef      `json:"createdBy"`
	CreatedAt         time.Time            `json:"createdAt"`
	UpdatedAt         time.Time            `json:"updatedAt"`
	ParentUUID        *string              `json:"parentUuid"`
	Parent            *IdeaRefView         `json:"parent"`
	Children          []IdeaChildView      `json:"children" jsonschema:"its direct children, oldest first, as many as fit the answer's 64 KiB budget"`
	ChildCount        int                  `json:"childCount" jsonschema:"how many direct children it has"`
	DescendantUUIDs   []string             `json:"descendantUuids" jsonschema:"all its transitive children, as many as fit the answer's 64 KiB budget"`
	DescendantCount   int                  `json:"descendantCount" jsonschema:"how many transitive children it has"`
	Reports           []DocumentView       `json:"reports" jsonschema:"report documents of its approved or closed proposals, newest first, as many as fit the answer's 64 KiB budget"`
	ReportCount       int                  `json:"reportCount" jsonschema:"how many report documents it has"`
	References        []ReferenceView      `json:"references" jsonschema:"its references, oldest first, as many as fit the answer's 64 KiB budget (chorus_get_references pages them all)"`
	ReferenceCount    int                  `json:"referenceCount" jsonschema:"how many references it has"`
}

// fit cuts the idea's lists to the answer's byte budget (docs/rules.md §3.6): its reports give
// way first, then its references, its descendants and its children.
func (v *IdeaView) fit() {
	children, descendants, refs, reports := v.Children, v.DescendantUUIDs, v.References, v.Reports
	fitLists(v,
		budgetList{len(children), func(n int) { v.Children = children[:n] }},
		budgetList{len(descendants), func(n int) { v.DescendantUUIDs = descendants[:n] }},
		budgetList{len(refs), func(n int) { v.References = refs[:n] }},
		budgetList{len(reports), func(n int) { v.Reports = reports[:n] }})
}

// DocumentView is the Document JSON (docs/rules.md §4.7, chorus_get_document).
type DocumentView struct {
	UUID         string          `json:"uuid"`
	Type         string          `json:"type"`
	Title        string          `json:"title"`
	Content      *string         `json:"content"`
	Version      int             `json:"version"`
	ProposalUUID *string         `json:"proposalUuid"`
	Project      ProjectRef      `json:"project"`
	CreatedBy    *store.ActorRef `json:"createdBy"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
}

func documentView(ctx context.Context, n *store.Namer, d store.Document, projectName string) DocumentView {
	return DocumentView{UUID: d.UUID, Type: d.Type, Title: d.Title, Content: d.Content, Version: d.Version,
		ProposalUUID: d.ProposalUUID, Project: ProjectRef{UUID: d.ProjectUUID, Name: projectName},
		CreatedBy: n.Ref(ctx, d.CreatedByType, &d.CreatedByUUID), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

func assigneeView(ctx context.Context, n *store.Namer, typ, uuid *string, at *time.Time, by *string) *AssigneeView {
	if uuid == nil || typ == nil {
		return nil
	}
	ref := n.Ref(ctx, *typ, uuid)
	return &AssigneeView{Type: *typ, UUID: *uuid, Name: ref.Name, AssignedAt: at, AssignedBy: n.Ref(ctx, "agent", by)}
}

func ideaView(ctx context.Context, n *store.Namer, d *store.IdeaDetail) IdeaView {
	i := d.Idea
	v := IdeaView{UUID: i.UUID, Title: i.Title, Content: i.Content, Status: string(i.Status),
		DerivedStatus: d.Derived.Status, ChildProgress: d.Derived.ChildProgress, IsContainer: i.IsContainer,
		Assignee: assigneeView(ctx, n, i.AssigneeType, i.AssigneeUUID, i.AssignedAt, i.AssignedByUUID),
		Project:  ProjectRef{UUID: d.Project.UUID, Name: d.Project.Name}, ElaborationStatus: i.ElaborationStatus,
		ElaborationDepth: i.ElaborationDepth, CreatedBy: n.Ref(ctx, i.CreatedByType, &i.CreatedByUUID),
		CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt, ParentUUID: i.ParentUUID, Children: []IdeaChildView{},
		DescendantUUIDs: d.DescendantUUIDs, Reports: []DocumentView{}, References: referenceViews(ctx, n, d.References),
		ChildCount: len(d.Children), DescendantCount: len(d.DescendantUUIDs), ReportCount: d.ReportCount,
		ReferenceCount: d.ReferenceCount}
	if len(i.Attachments) > 0 {
		// Written only by operators; a value of another shape is shown as no attachments.
		_ = json.Unmarshal(i.Attachments, &v.Attachments)
	}
	if d.Parent != nil {
		v.Parent = &IdeaRefView{UUID: d.Parent.UUID, Title: d.Parent.Title, Status: string(d.Parent.Status)}
	}
	for _, c := range d.Children {
		v.Children = append(v.Children, IdeaChildView{UUID: c.UUID, Title: c.Title, Status: c.Status, DerivedStatus: c.DerivedStatus})
	}
	for _, r := range d.Reports {
		v.Reports = append(v.Reports, documentView(ctx, n, r, d.Project.Name))
	}
	return v
}

// ActorTypeRef is {type, uuid}.
type ActorTypeRef struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
}

// AnswerView is a question's answer.
type AnswerView struct {
	SelectedOptionID *string       `json:"selectedOptionId"`
	CustomText       *string       `json:"customText"`
	AnsweredAt       *time.Time    `json:"answeredAt"`
	AnsweredBy       *ActorTypeRef `json:"answeredBy"`
}

// QuestionView is a question of a round.
type QuestionView struct {
	UUID       string                 `json:"uuid"`
	QuestionID string                 `json:"questionId"`
	Text       string                 `json:"text"`
	Category   string                 `json:"category"`
	Options    []store.QuestionOption `json:"options"`
	Required   bool                   `json:"required"`
	Answer     *AnswerView            `json:"answer"`
	Issue      *string                `json:"issue"`
}

// RoundView is the Round JSON.
type RoundView struct {
	UUID        string         `json:"uuid"`
	RoundNumber int            `json:"roundNumber"`
	Status      string         `json:"status"`
	IsAppended  bool           `json:"isAppended"`
	CreatedBy   ActorTypeRef   `json:"createdBy"`
	ValidatedAt *time.Time     `json:"validatedAt"`
	CreatedAt   time.Time      `json:"createdAt"`
	Questions   []QuestionView `json:"questions"`
}

func roundView(r store.ElaborationRound) RoundView {
	v := RoundView{UUID: r.UUID, RoundNumber: r.RoundNumber, Status: string(r.Status), IsAppended: r.IsAppended,
		CreatedBy: ActorTypeRef{Type: r.CreatedByType, UUID: r.CreatedByUUID}, ValidatedAt: r.ValidatedAt,
		CreatedAt: r.CreatedAt, Questions: []QuestionView{}}
	for _, q := range r.Questions {
		qv := QuestionView{UUID: q.UUID, QuestionID: q.QuestionID, Text: q.Text, Category: q.Category,
			Options: q.Options, Required: q.Required}
		if qv.Options == nil {
			qv.Options = []store.QuestionOption{}
		}
		if q.AnsweredAt != nil {
			a := &AnswerView{SelectedOptionID: q.SelectedOptionID, CustomText: q.CustomText, AnsweredAt: q.AnsweredAt}
			if q.AnsweredByUUID != nil {
				a.AnsweredBy = &ActorTypeRef{Type: deref(q.AnsweredByType), UUID: *q.AnsweredByUUID}
			}
			qv.Answer = a
		}
		v.Questions = append(v.Questions, qv)
	}
	return v
}

// ElaborationSummary counts an idea's questions and rounds.
type ElaborationSummary struct {
	TotalQuestions    int  `json:"totalQuestions"`
	AnsweredQuestions int  `json:"answeredQuestions"`
	ValidatedRounds   int  `json:"validatedRounds"`
	PendingRound      *int `json:"pendingRound"`
}

// ElaborationView is chorus_get_elaboration's result.
type ElaborationView struct {
	IdeaUUID string             `json:"ideaUuid"`
	Depth    *string            `json:"depth"`
	Status   *string            `json:"status"`
	Rounds   []RoundView        `json:"rounds"`
	Summary  ElaborationSummary `json:"summary"`
}

func elaborationView(i *store.Idea, rounds []store.ElaborationRound) ElaborationView {
	v := ElaborationView{IdeaUUID: i.UUID, Depth: i.ElaborationDepth, Status: i.ElaborationStatus, Rounds: []RoundView{}}
	for _, r := range rounds {
		v.Rounds = append(v.Rounds, roundView(r))
		for _, q := range r.Questions {
			v.Summary.TotalQuestions++
			if q.AnsweredAt != nil {
				v.Summary.AnsweredQuestions++
			}
		}
		if r.Status == "pending_answers" {
			n := r.RoundNumber
			v.Summary.PendingRound = &n
		} else {
			v.Summary.ValidatedRounds++
		}
	}
	return v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
