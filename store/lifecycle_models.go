package store

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// Models of the lifecycle entities. Their rows are written only by workflow activities; the MCP
// layer reads them.

// Idea is an idea (docs/rules.md §1.6).
type Idea struct {
	bun.BaseModel `bun:"table:ideas"`

	UUID              string           `bun:"uuid,pk"`
	CompanyUUID       string           `bun:"company_uuid"`
	ProjectUUID       string           `bun:"project_uuid"`
	Title             string           `bun:"title"`
	Content           *string          `bun:"content"`
	Attachments       json.RawMessage  `bun:"attachments,type:jsonb"`
	Status            vocab.IdeaStatus `bun:"status"`
	AssigneeType      *string          `bun:"assignee_type"`
	AssigneeUUID      *string          `bun:"assignee_uuid"`
	AssignedAt        *time.Time       `bun:"assigned_at"`
	AssignedByUUID    *string          `bun:"assigned_by_uuid"`
	ElaborationDepth  *string          `bun:"elaboration_depth"`
	ElaborationStatus *string          `bun:"elaboration_status"`
	IsContainer       bool             `bun:"is_container"`
	ParentUUID        *string          `bun:"parent_uuid"`
	CreatedByType     string           `bun:"created_by_type"`
	CreatedByUUID     string           `bun:"created_by_uuid"`
	Version           int64            `bun:"version"`
	ChangeID          string           `bun:"change_id"`
	CreatedAt         time.Time        `bun:"created_at"`
	UpdatedAt         time.Time        `bun:"updated_at"`
}

// ElaborationRound is one round of questions on an idea (docs/rules.md §1.7).
type ElaborationRound struct {
	bun.BaseModel `bun:"table:elaboration_rounds"`

	UUID          string            `bun:"uuid,pk"`
	CompanyUUID   string            `bun:"company_uuid"`
	IdeaUUID      string            `bun:"idea_uuid"`
	RoundNumber   int               `bun:"round_number"`
	Status        vocab.RoundStatus `bun:"status"`
	IsAppended    bool              `bun:"is_appended"`
	CreatedByType string            `bun:"created_by_type"`
	CreatedByUUID string            `bun:"created_by_uuid"`
	ValidatedAt   *time.Time        `bun:"validated_at"`
	CreatedAt     time.Time         `bun:"created_at"`
	UpdatedAt     time.Time         `bun:"updated_at"`

	Questions []ElaborationQuestion `bun:"rel:has-many,join:uuid=round_uuid"`
}

// QuestionOption is one choice of an elaboration question.
type QuestionOption struct {
	ID          string  `json:"id"`
	Label       string  `json:"label"`
	Description *string `json:"description,omitempty"`
}

// ElaborationQuestion is one question of a round, with its answer when answered (docs/rules.md §1.7).
type ElaborationQuestion struct {
	bun.BaseModel `bun:"table:elaboration_questions"`

	UUID             string           `bun:"uuid,pk"`
	RoundUUID        string           `bun:"round_uuid"`
	QuestionID       string           `bun:"question_id"`
	Text             string           `bun:"text"`
	Category         string           `bun:"category"`
	Options          []QuestionOption `bun:"options,type:jsonb"`
	Required         bool             `bun:"required"`
	SortOrder        int              `bun:"sort_order"`
	SelectedOptionID *string          `bun:"selected_option_id"`
	CustomText       *string          `bun:"custom_text"`
	AnsweredAt       *time.Time       `bun:"answered_at"`
	AnsweredByType   *string          `bun:"answered_by_type"`
	AnsweredByUUID   *string          `bun:"answered_by_uuid"`
	IssueType        *string          `bun:"issue_type"`
	IssueDescription *string          `bun:"issue_description"`
}

// DocumentDraft is a proposal's draft of a document (docs/rules.md §1.8).
type DocumentDraft struct {
	UUID    string `json:"uuid"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Content string `json:"content"`
}

// CriterionDraft is one acceptance criterion of a task draft.
type CriterionDraft struct {
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// TaskDraft is a proposal's draft of a task (docs/rules.md §1.8).
type TaskDraft struct {
	UUID                    string           `json:"uuid"`
	Title                   string           `json:"title"`
	Description             *string          `json:"description,omitempty"`
	StoryPoints             *float64         `json:"storyPoints,omitempty"`
	Priority                *string          `json:"priority,omitempty"`
	Kind                    *string          `json:"kind,omitempty"`
	AcceptanceCriteriaItems []CriterionDraft `json:"acceptanceCriteriaItems"`
	DependsOnDraftUUIDs     []string         `json:"dependsOnDraftUuids,omitempty"`
	AcceptanceCriteria      *string          `json:"acceptanceCriteria,omitempty"`
}

// Proposal is a proposal (docs/rules.md §1.8). Empty draft lists are stored as null.
type Proposal struct {
	bun.BaseModel `bun:"table:proposals"`

	UUID           string               `bun:"uuid,pk"`
	CompanyUUID    string               `bun:"company_uuid"`
	ProjectUUID    string               `bun:"project_uuid"`
	Title          string               `bun:"title"`
	Description    *string              `bun:"description"`
	InputType      string               `bun:"input_type"`
	InputUUIDs     []string             `bun:"input_uuids,type:jsonb"`
	DocumentDrafts []DocumentDraft      `bun:"document_drafts,type:jsonb"`
	TaskDrafts     []TaskDraft          `bun:"task_drafts,type:jsonb"`
	Status         vocab.ProposalStatus `bun:"status"`
	CreatedByUUID  string               `bun:"created_by_uuid"`
	CreatedByType  string               `bun:"created_by_type"`
	ReviewedByUUID *string              `bun:"reviewed_by_uuid"`
	ReviewNote     *string              `bun:"review_note"`
	ReviewedAt     *time.Time           `bun:"reviewed_at"`
	Version        int64                `bun:"version"`
	ChangeID       string               `bun:"change_id"`
	CreatedAt      time.Time            `bun:"created_at"`
	UpdatedAt      time.Time            `bun:"updated_at"`
}

// Document is a document (docs/rules.md §1.9).
type Document struct {
	bun.BaseModel `bun:"table:documents"`

	UUID          string    `bun:"uuid,pk"`
	CompanyUUID   string    `bun:"company_uuid"`
	ProjectUUID   string    `bun:"project_uuid"`
	Type          string    `bun:"type"`
	Title         string    `bun:"title"`
	Content       *string   `bun:"content"`
	Version       int       `bun:"version"`
	ChangeID      string    `bun:"change_id"`
	ProposalUUID  *string   `bun:"proposal_uuid"`
	CreatedByType string    `bun:"created_by_type"`
	CreatedByUUID string    `bun:"created_by_uuid"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
}

// Task is a task (docs/rules.md §1.10).
type Task struct {
	bun.BaseModel `bun:"table:tasks"`

	UUID               string           `bun:"uuid,pk"`
	CompanyUUID        string           `bun:"company_uuid"`
	ProjectUUID        string           `bun:"project_uuid"`
	Title              string           `bun:"title"`
	Description        *string          `bun:"description"`
	Status             vocab.TaskStatus `bun:"status"`
	Priority           string           `bun:"priority"`
	StoryPoints        *float64         `bun:"story_points"`
	AcceptanceCriteria *string          `bun:"acceptance_criteria"`
	AssigneeType       *string          `bun:"assignee_type"`
	AssigneeUUID       *string          `bun:"assignee_uuid"`
	AssignedAt         *time.Time       `bun:"assigned_at"`
	AssignedByUUID     *string          `bun:"assigned_by_uuid"`
	// ClaimTTLSeconds and ClaimExpiresAt are the current claim's lease (docs/rules.md §5.10), nil
	// when the claim does not lapse.
	ClaimTTLSeconds *int64     `bun:"claim_ttl_seconds"`
	ClaimExpiresAt  *time.Time `bun:"claim_expires_at"`
	ProposalUUID    *string    `bun:"proposal_uuid"`
	CreatedByType   string     `bun:"created_by_type"`
	CreatedByUUID   string     `bun:"created_by_uuid"`
	Version         int64      `bun:"version"`
	ChangeID        string     `bun:"change_id"`
	CreatedAt       time.Time  `bun:"created_at"`
	UpdatedAt       time.Time  `bun:"updated_at"`
}

// AcceptanceCriterion is one criterion of a task, with the developer's self-check and the
// admin's verification marks (docs/rules.md §1.11).
type AcceptanceCriterion struct {
	bun.BaseModel `bun:"table:acceptance_criteria"`

	UUID            string                `bun:"uuid,pk"`
	TaskUUID        string                `bun:"task_uuid"`
	Description     string                `bun:"description"`
	Required        bool                  `bun:"required"`
	DevStatus       vocab.CriterionStatus `bun:"dev_status"`
	DevEvidence     *string               `bun:"dev_evidence"`
	DevMarkedByType *string               `bun:"dev_marked_by_type"`
	DevMarkedBy     *string               `bun:"dev_marked_by"`
	DevMarkedAt     *time.Time            `bun:"dev_marked_at"`
	Status          vocab.CriterionStatus `bun:"status"`
	Evidence        *string               `bun:"evidence"`
	MarkedByType    *string               `bun:"marked_by_type"`
	MarkedBy        *string               `bun:"marked_by"`
	MarkedAt        *time.Time            `bun:"marked_at"`
	SortOrder       int                   `bun:"sort_order"`
	CreatedAt       time.Time             `bun:"created_at"`
	UpdatedAt       time.Time             `bun:"updated_at"`
}

// TaskDependency says TaskUUID depends on DependsOnUUID (docs/rules.md §1.12).
type TaskDependency struct {
	bun.BaseModel `bun:"table:task_dependencies"`

	TaskUUID      string    `bun:"task_uuid,pk"`
	DependsOnUUID string    `bun:"depends_on_uuid,pk"`
	CreatedAt     time.Time `bun:"created_at"`
}

// Comment is a comment on an idea, proposal, task or document (docs/rules.md §1.13).
type Comment struct {
	bun.BaseModel `bun:"table:comments"`

	UUID        string    `bun:"uuid,pk"`
	CompanyUUID string    `bun:"company_uuid"`
	TargetType  string    `bun:"target_type"`
	TargetUUID  string    `bun:"target_uuid"`
	Content     string    `bun:"content"`
	AuthorType  string    `bun:"author_type"`
	AuthorUUID  string    `bun:"author_uuid"`
	CreatedAt   time.Time `bun:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at"`
}
