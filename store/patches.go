package store

import (
	"slices"
	"time"

	"github.com/chorus-dev/chorus/vocab"
)

// Typed changes of lifecycle rows: a workflow says which fields of its row a change sets, and
// the store alone knows the columns they are kept in (docs/write-path.md, "Who writes what").

// The columns of each lifecycle row its workflow owns, which chorus ops compares with the
// workflow's state and a repair rewrites (with version and change_id).
var (
	IdeaWorkflowColumns = []string{"project_uuid", "title", "status", "assignee_type", "assignee_uuid", "assigned_at",
		"assigned_by_uuid", "is_container", "elaboration_depth", "elaboration_status"}
	ProposalWorkflowColumns = []string{"project_uuid", "title", "status", "input_type", "input_uuids", "reviewed_by_uuid", "reviewed_at"}
	TaskWorkflowColumns     = []string{"project_uuid", "title", "status", "priority", "assignee_type", "assignee_uuid", "assigned_at",
		"assigned_by_uuid", "claim_ttl_seconds", "claim_expires_at"}
)

// Nullable is a new value for a column that may be NULL: Value nil writes NULL. A patch field
// of type *Nullable[T] is nil when the change leaves the column alone.
type Nullable[T any] struct {
	Value *T `json:"value"`
}

// SetTo is the Nullable that writes v (nil: NULL).
func SetTo[T any](v *T) *Nullable[T] { return &Nullable[T]{Value: v} }

// Assignment is who a row is assigned to, since when, and who assigned it (By nil: claimed).
type Assignment struct {
	Type string    `json:"type"`
	UUID string    `json:"uuid"`
	At   time.Time `json:"at"`
	By   *string   `json:"by,omitempty"`
}

// ClaimLease is a claim's time to live and when it lapses (docs/rules.md §5.10).
type ClaimLease struct {
	TTLSeconds int64     `json:"ttlSeconds"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// TaskPatch is what a task change sets on the task's row; a nil field leaves its column alone.
type TaskPatch struct {
	Title       *string            `json:"title,omitempty"`
	Description *Nullable[string]  `json:"description,omitempty"`
	Status      *vocab.TaskStatus  `json:"status,omitempty"`
	Priority    *string            `json:"priority,omitempty"`
	StoryPoints *Nullable[float64] `json:"storyPoints,omitempty"`
	// Assignee sets the four assignee columns; a nil Value clears them.
	Assignee *Nullable[Assignment] `json:"assignee,omitempty"`
	// Lease sets the claim's lease columns; a nil Value clears them (the claim does not lapse).
	Lease *Nullable[ClaimLease] `json:"lease,omitempty"`
}

// row is the patch as a task row and the columns it sets.
func (p TaskPatch) row() (Task, []string) {
	var t Task
	var cols []string
	if p.Title != nil {
		t.Title, cols = *p.Title, append(cols, "title")
	}
	if p.Description != nil {
		t.Description, cols = p.Description.Value, append(cols, "description")
	}
	if p.Status != nil {
		t.Status, cols = *p.Status, append(cols, "status")
	}
	if p.Priority != nil {
		t.Priority, cols = *p.Priority, append(cols, "priority")
	}
	if p.StoryPoints != nil {
		t.StoryPoints, cols = p.StoryPoints.Value, append(cols, "story_points")
	}
	if p.Assignee != nil {
		if a := p.Assignee.Value; a != nil {
			at := a.At
			t.AssigneeType, t.AssigneeUUID, t.AssignedAt, t.AssignedByUUID = &a.Type, &a.UUID, &at, a.By
		}
		cols = append(cols, "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid")
	}
	if p.Lease != nil {
		if l := p.Lease.Value; l != nil {
			ttl, until := l.TTLSeconds, l.ExpiresAt
			t.ClaimTTLSeconds, t.ClaimExpiresAt = &ttl, &until
		}
		cols = append(cols, "claim_ttl_seconds", "claim_expires_at")
	}
	return t, cols
}

// Verdict is one acceptance criterion's mark: the developer's self-check or the admin's
// verification (TaskChange.SelfCheck says which).
type Verdict struct {
	UUID     string                `json:"uuid"`
	Status   vocab.CriterionStatus `json:"status"`
	Evidence *string               `json:"evidence,omitempty"`
	ByType   string                `json:"byType"`
	By       string                `json:"by"`
	At       time.Time             `json:"at"`
}

// markRows are the verdicts as criterion rows and the columns they set.
func markRows(verdicts []Verdict, selfCheck bool) ([]AcceptanceCriterion, []string) {
	rows := make([]AcceptanceCriterion, len(verdicts))
	for i, v := range verdicts {
		at, status := v.At, v.Status
		rows[i] = AcceptanceCriterion{UUID: v.UUID}
		if selfCheck {
			rows[i].DevStatus, rows[i].DevEvidence, rows[i].DevMarkedByType, rows[i].DevMarkedBy, rows[i].DevMarkedAt =
				status, v.Evidence, &v.ByType, &v.By, &at
		} else {
			rows[i].Status, rows[i].Evidence, rows[i].MarkedByType, rows[i].MarkedBy, rows[i].MarkedAt =
				status, v.Evidence, &v.ByType, &v.By, &at
		}
	}
	if selfCheck {
		return rows, []string{"dev_status", "dev_evidence", "dev_marked_by_type", "dev_marked_by", "dev_marked_at"}
	}
	return rows, []string{"status", "evidence", "marked_by_type", "marked_by", "marked_at"}
}

// IdeaPatch is what an idea change sets on the idea's row; a nil field leaves its column alone.
type IdeaPatch struct {
	Title             *string               `json:"title,omitempty"`
	Content           *Nullable[string]     `json:"content,omitempty"`
	Status            *vocab.IdeaStatus     `json:"status,omitempty"`
	Assignee          *Nullable[Assignment] `json:"assignee,omitempty"`
	ElaborationDepth  *Nullable[string]     `json:"elaborationDepth,omitempty"`
	ElaborationStatus *Nullable[string]     `json:"elaborationStatus,omitempty"`
	IsContainer       *bool                 `json:"isContainer,omitempty"`
	ParentUUID        *Nullable[string]     `json:"parentUuid,omitempty"`
}

// row is the patch as an idea row and the columns it sets.
func (p IdeaPatch) row() (Idea, []string) {
	var i Idea
	var cols []string
	if p.Title != nil {
		i.Title, cols = *p.Title, append(cols, "title")
	}
	if p.Content != nil {
		i.Content, cols = p.Content.Value, append(cols, "content")
	}
	if p.Status != nil {
		i.Status, cols = *p.Status, append(cols, "status")
	}
	if p.Assignee != nil {
		if a := p.Assignee.Value; a != nil {
			at := a.At
			i.AssigneeType, i.AssigneeUUID, i.AssignedAt, i.AssignedByUUID = &a.Type, &a.UUID, &at, a.By
		}
		cols = append(cols, "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid")
	}
	if p.ElaborationDepth != nil {
		i.ElaborationDepth, cols = p.ElaborationDepth.Value, append(cols, "elaboration_depth")
	}
	if p.ElaborationStatus != nil {
		i.ElaborationStatus, cols = p.ElaborationStatus.Value, append(cols, "elaboration_status")
	}
	if p.IsContainer != nil {
		i.IsContainer, cols = *p.IsContainer, append(cols, "is_container")
	}
	if p.ParentUUID != nil {
		i.ParentUUID, cols = p.ParentUUID.Value, append(cols, "parent_uuid")
	}
	return i, cols
}

// ProposalPatch is what a proposal change sets on the proposal's row; a nil field leaves its
// columns alone.
type ProposalPatch struct {
	Status *vocab.ProposalStatus `json:"status,omitempty"`
	// Review sets who reviewed the proposal, when, and their note.
	Review *ProposalReview `json:"review,omitempty"`
}

// ProposalReview is a review of a proposal: the reviewer, the time and the note (nil: none).
type ProposalReview struct {
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Note *string   `json:"note,omitempty"`
}

// row is the patch as a proposal row and the columns it sets.
func (p ProposalPatch) row() (Proposal, []string) {
	var r Proposal
	var cols []string
	if p.Status != nil {
		r.Status, cols = *p.Status, append(cols, "status")
	}
	if v := p.Review; v != nil {
		by, at := v.By, v.At
		r.ReviewedByUUID, r.ReviewNote, r.ReviewedAt = &by, v.Note, &at
		cols = append(cols, "reviewed_by_uuid", "review_note", "reviewed_at")
	}
	return r, cols
}

// row is the proposal row's new values and the columns they go to.
func (c ProposalChange) row() (Proposal, []string) {
	if c.LegacySet != nil {
		return *c.LegacySet, c.LegacyColumns
	}
	return c.Patch.row()
}

// SetsStatus reports whether the change moves the proposal's status.
func (c ProposalChange) SetsStatus() bool {
	_, cols := c.row()
	return slices.Contains(cols, "status")
}
