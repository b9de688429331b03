// The API of IdeaWorkflow: its names, its state, the inputs and results of its commands.

package workflows

import (
	"slices"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// IdeaWorkflowName is the registered type of IdeaWorkflow.
const IdeaWorkflowName = "IdeaWorkflow"

// Update names of IdeaWorkflow, one per tool (docs/rules.md §4.4, §2.1, §2.2).
const (
	UpdateCreateIdea          = "chorus_pm_create_idea"
	UpdateClaimIdea           = "chorus_claim_idea"
	UpdateAssignIdea          = "chorus_pm_assign_idea"
	UpdateReleaseIdea         = "chorus_release_idea"
	UpdateEditIdea            = "chorus_edit_idea"
	UpdateStartElaboration    = "chorus_pm_start_elaboration"
	UpdateAnswerElaboration   = "chorus_answer_elaboration"
	UpdateValidateElaboration = "chorus_pm_validate_elaboration"
	UpdateSkipElaboration     = "chorus_pm_skip_elaboration"
	UpdateDeleteIdea          = "chorus_admin_delete_idea"
)

// IdeaState is everything IdeaWorkflow knows; it is what continue-as-new carries. It holds
// what the state machine needs and nothing of the idea's text but its title
// (docs/write-path.md, "Bounded state and payloads"): the content lives in the database, and
// questions and options are kept as fingerprints of their ids. The parent is the row's alone: a
// parent's deletion detaches its children in the parent's transaction (docs/rules.md §5.5).
type IdeaState struct {
	Created     bool    `json:"created"`
	Deleted     bool    `json:"deleted,omitempty"`
	UUID        string  `json:"uuid"`
	CompanyUUID string  `json:"companyUuid"`
	ProjectUUID string  `json:"projectUuid"`
	ProjectName string  `json:"projectName,omitempty"` // for the memo; "" in older histories
	Title       string  `json:"title"`
	Status      string  `json:"status"`
	Assignee    *Holder `json:"assignee,omitempty"`
	IsContainer bool    `json:"isContainer,omitempty"`
	// ElaborationDepth and ElaborationStatus are "" where the row has null.
	ElaborationDepth  string       `json:"elaborationDepth,omitempty"`
	ElaborationStatus string       `json:"elaborationStatus,omitempty"`
	CreatedBy         Party        `json:"createdBy"`
	Rounds            []RoundState `json:"rounds,omitempty"`
	Row               RowMark      `json:"row"`
	Recent            Recent       `json:"recent,omitempty"`
	// Progress is the idea's derived status as its ChorusProgress search attribute shows it
	// (docs/rules.md §5.1; idea_progress.go); ProgressRollup: the database last said it rolls up
	// from children (a theme with children).
	Progress       string `json:"progress,omitempty"`
	ProgressRollup bool   `json:"progressRollup,omitempty"`
	// Gates are the idea's gates awaiting a person, and the latest decided (docs/rules.md §6.7).
	Gates []GateState `json:"gates,omitempty"`
}

// RoundState is what the workflow keeps of an elaboration round.
type RoundState struct {
	UUID      string          `json:"uuid"`
	Number    int             `json:"number"`
	Status    string          `json:"status"` // pending_answers | answered
	Questions []QuestionState `json:"questions"`
}

// QuestionState is what the workflow keeps of a question: fingerprints of its id and of its
// options' ids (the ids may be long; the database has them).
type QuestionState struct {
	UUID     string   `json:"uuid"`
	ID       string   `json:"id"`
	Required bool     `json:"required"`
	Options  []string `json:"options"`
	Answered bool     `json:"answered,omitempty"`
}

func (s IdeaState) clone() IdeaState {
	c := s
	if s.Assignee != nil {
		h := *s.Assignee
		c.Assignee = &h
	}
	c.Rounds = make([]RoundState, len(s.Rounds))
	for i, r := range s.Rounds {
		r.Questions = slices.Clone(r.Questions)
		for j := range r.Questions {
			r.Questions[j].Options = slices.Clone(r.Questions[j].Options)
		}
		c.Rounds[i] = r
	}
	c.Recent = slices.Clone(s.Recent)
	return c
}

func (s IdeaState) status() vocab.IdeaStatus { return vocab.IdeaStatus(s.Status) }

// Projection is the idea's row as far as the workflow owns it: the columns ops repair rewrites and
// ops check compares (IdeaColumns, with version and change_id).
func (s IdeaState) Projection() store.Idea {
	i := store.Idea{UUID: s.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, Title: s.Title, Status: vocab.IdeaStatus(s.Status),
		ElaborationDepth: nilIfBlank(s.ElaborationDepth), ElaborationStatus: nilIfBlank(s.ElaborationStatus),
		IsContainer: s.IsContainer, CreatedByType: s.CreatedBy.Type,
		CreatedByUUID: s.CreatedBy.UUID, Version: s.Row.Version, ChangeID: s.Row.ChangeID}
	if h := s.Assignee; h != nil {
		at := h.At
		i.AssigneeType, i.AssigneeUUID, i.AssignedAt, i.AssignedByUUID = &h.Type, &h.UUID, &at, h.By
	}
	return i
}

// IdeaColumns are the columns of an idea row its workflow owns, as the store names them (chorus
// ops compares and repairs them).
var IdeaColumns = store.IdeaWorkflowColumns

func nilIfBlank(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- inputs and results ----

// IdeaRun is IdeaWorkflow's input: empty for a new idea, the state when continuing as new.
type IdeaRun struct {
	State *IdeaState `json:"state"`
}

// CreateIdeaInput creates the idea (update-with-start).
type CreateIdeaInput struct {
	Actor       Actor   `json:"actor"`
	UUID        string  `json:"uuid"`
	ProjectUUID string  `json:"projectUuid"`
	ProjectName string  `json:"projectName"`
	Title       string  `json:"title"`
	Content     *string `json:"content"`
	ParentUUID  *string `json:"parentUuid"`
	IsContainer bool    `json:"isContainer"`
}

// IdeaCommand is the input of commands that need only the actor.
type IdeaCommand struct {
	Actor Actor `json:"actor"`
}

// AssignIdeaInput makes an agent or a user of the company the idea's assignee
// (chorus_pm_assign_idea); who may be assigned is checked by the caller.
type AssignIdeaInput struct {
	Actor      Actor  `json:"actor"`
	TargetType string `json:"targetType"` // agent | user
	TargetUUID string `json:"targetUuid"`
	TargetName string `json:"targetName"`
}

// EditIdeaInput edits an idea; nil fields are left alone. SetParent with ParentUUID nil detaches.
type EditIdeaInput struct {
	Actor       Actor   `json:"actor"`
	Title       *string `json:"title"`
	Content     *string `json:"content"`
	SetParent   bool    `json:"setParent"`
	ParentUUID  *string `json:"parentUuid"`
	IsContainer *bool   `json:"isContainer"`
}

// QuestionInput is one question of chorus_pm_start_elaboration.
type QuestionInput struct {
	ID       string                 `json:"id"`
	Text     string                 `json:"text"`
	Category string                 `json:"category"`
	Options  []store.QuestionOption `json:"options"`
	Required *bool                  `json:"required"`
}

// StartElaborationInput starts an elaboration round.
type StartElaborationInput struct {
	Actor     Actor           `json:"actor"`
	Depth     string          `json:"depth"`
	Questions []QuestionInput `json:"questions"`
}

// AnswerInput is one answer of chorus_answer_elaboration.
type AnswerInput struct {
	QuestionID       string  `json:"questionId"`
	SelectedOptionID *string `json:"selectedOptionId"`
	CustomText       *string `json:"customText"`
}

// AnswerElaborationInput answers questions of a round (the single pending one when RoundUUID is nil).
type AnswerElaborationInput struct {
	Actor     Actor         `json:"actor"`
	RoundUUID *string       `json:"roundUuid"`
	Answers   []AnswerInput `json:"answers"`
}

// SkipElaborationInput skips elaboration with a reason.
type SkipElaborationInput struct {
	Actor  Actor  `json:"actor"`
	Reason string `json:"reason"`
}

// IdeaResult is what idea updates return; callers read the full view from the database, which
// already holds the change when the update completes.
type IdeaResult struct {
	UUID        string `json:"uuid"`
	Status      string `json:"status"`
	RoundUUID   string `json:"roundUuid,omitempty"`
	RoundNumber int    `json:"roundNumber,omitempty"`
	// Moved counts what chorus_move_idea moved.
	Moved *store.MoveCounts `json:"moved,omitempty"`
}
