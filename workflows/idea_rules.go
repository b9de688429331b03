// The rules of IdeaWorkflow's commands: pure checks on IdeaState, used by the update validators
// and again by the handlers; no Temporal calls.

package workflows

import (
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// pendingRounds lists the rounds still waiting for answers.
func (s IdeaState) pendingRounds() []*RoundState {
	var out []*RoundState
	for i := range s.Rounds {
		if s.Rounds[i].Status == "pending_answers" {
			out = append(out, &s.Rounds[i])
		}
	}
	return out
}

// isAssignee: the actor is the idea's assignee agent, or (withOwner) its owner user is.
func (s IdeaState) isAssignee(a Actor, withOwner bool) bool {
	if s.Assignee == nil {
		return false
	}
	switch s.Assignee.Type {
	case "agent":
		return s.Assignee.UUID == a.UUID
	case "user":
		return withOwner && a.OwnerUUID != "" && s.Assignee.UUID == a.OwnerUUID
	}
	return false
}

// assigneeText names the assignee for refusals: "agent <uuid>".
func (s IdeaState) assigneeText() string {
	if s.Assignee == nil {
		return "nobody"
	}
	return s.Assignee.Type + " " + s.Assignee.UUID
}

var notFoundIdea = Refuse(KindNotFound, "Idea not found")

// exists refuses commands on an idea that was never created or is deleted.
func (s IdeaState) exists() error {
	if !s.Created || s.Deleted {
		return notFoundIdea
	}
	return nil
}

// ---- create ----

func (s IdeaState) checkCreate(in CreateIdeaInput) error {
	if s.Created {
		return nil // a retried create returns the idea
	}
	return CheckTitle("", "title", &in.Title)
}

// checkParent applies docs/rules.md §5.5 to a proposed parent, given its lineage.
func checkParent(ideaUUID, projectUUID, parentUUID string, refs store.Lineage) *Error {
	switch {
	case parentUUID == ideaUUID:
		return Refuse(KindInvalid, "An idea cannot be its own parent")
	case !refs.ParentFound:
		return Refuse(KindNotFound, "Parent idea not found")
	case refs.ParentProject != projectUUID:
		return Refuse(KindInvalid, "Parent idea must be in the same project")
	case refs.ParentIsDescendant:
		return Refuse(KindConflict, "Cannot set parent: would create a cycle (the new parent is this idea's descendant)")
	}
	return nil
}

// ---- claim / release ----

func (s IdeaState) checkClaim(in IdeaCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.Assignee != nil {
		if s.isAssignee(in.Actor, false) {
			return Refuse(KindConflict, "Can only claim Ideas with open status: you already hold this idea (status %s)", s.Status)
		}
		return Refuse(KindConflict, "Can only claim Ideas with open status: this idea is %s and already assigned (%s). "+
			"Ask the assignee to release it, or pick another idea with chorus_get_available_ideas.", s.Status, s.assigneeText())
	}
	if s.status() == vocab.IdeaElaborated {
		return Refuse(KindConflict, "Cannot claim an elaborated Idea: its elaboration is resolved; create a proposal from it instead")
	}
	if _, err := s.status().Next(vocab.IdeaClaim); err != nil {
		return Refuse(KindConflict, "Can only claim Ideas with open status (current status: %s)", s.Status)
	}
	return nil
}

// checkAssign: any idea that exists may be assigned, held or not (docs/rules.md §4.4).
func (s IdeaState) checkAssign(in AssignIdeaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.TargetType != "agent" && in.TargetType != "user" {
		return Refuse(KindInvalid, "assigneeType must be agent or user, got %q", in.TargetType)
	}
	return nil
}

func (s IdeaState) checkRelease(in IdeaCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor, true) {
		if s.Assignee == nil {
			return Refuse(KindForbidden, "Only the assignee can release a claimed Idea: this idea is not claimed (status %s)", s.Status)
		}
		return Refuse(KindForbidden, "Only the assignee can release a claimed Idea (assignee: %s)", s.assigneeText())
	}
	if s.status() == vocab.IdeaElaborated {
		return Refuse(KindConflict, "Cannot release an elaborated Idea: its elaboration is resolved and it stays with its assignee")
	}
	return nil
}

// ---- edit ----

func (s IdeaState) checkEdit(in EditIdeaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.Title == nil && in.Content == nil && !in.SetParent && in.IsContainer == nil {
		return Refuse(KindInvalid, "Provide at least one of title, content, parentUuid, detachParent, or isContainer to edit.")
	}
	if err := CheckTitle("Failed to edit Idea", "title", in.Title); err != nil {
		return err
	}
	if in.SetParent && in.ParentUUID != nil && *in.ParentUUID == s.UUID {
		return Refuse(KindInvalid, "Failed to edit Idea: An idea cannot be its own parent")
	}
	return nil
}

// ---- elaboration ----

// maxRounds and the question limits of docs/rules.md §2.2.
const (
	maxRounds       = 10
	maxQuestions    = 15
	minOptions      = 2
	maxOptions      = 5
	startErrPrefix  = "Failed to start elaboration: "
	answerErrPrefix = "Failed to answer elaboration: "
)

func (s IdeaState) checkStart(in StartElaborationInput) error {
	fail := func(kind Kind, format string, args ...any) error {
		return Refuse(kind, startErrPrefix+format, args...)
	}
	// 1. question format
	switch {
	case len(in.Questions) == 0:
		return fail(KindInvalid, "At least 1 question is required")
	case len(in.Questions) > maxQuestions:
		return fail(KindInvalid, "Maximum %d questions per round", maxQuestions)
	}
	seen := map[string]bool{}
	for _, q := range in.Questions {
		if strings.TrimSpace(q.ID) == "" {
			return fail(KindInvalid, "Every question needs a non-empty id (answers refer to it)")
		}
		if strings.TrimSpace(q.Text) == "" {
			return fail(KindInvalid, "Question '%s' has empty text", q.ID)
		}
		if n := len(q.Options); n < minOptions || n > maxOptions {
			return fail(KindInvalid, "Question '%s' must have %d-%d options, got %d", q.ID, minOptions, maxOptions, n)
		}
		optSeen := map[string]bool{}
		for _, o := range q.Options {
			if strings.TrimSpace(o.ID) == "" || strings.TrimSpace(o.Label) == "" {
				return fail(KindInvalid, "Question '%s' has an option with missing id or label", q.ID)
			}
			if optSeen[o.ID] {
				return fail(KindInvalid, "Question '%s' has two options with id '%s'", q.ID, o.ID)
			}
			optSeen[o.ID] = true
		}
		if seen[q.ID] {
			return fail(KindInvalid, "Duplicate question id '%s'", q.ID)
		}
		seen[q.ID] = true
	}
	// 2. idea exists
	if err := s.exists(); err != nil {
		return err
	}
	// 3. assignee
	if !s.isAssignee(in.Actor, false) {
		return fail(KindForbidden, "Only the assigned agent can start elaboration (claim the idea first with chorus_claim_idea)")
	}
	// 4. status
	if _, err := s.status().Next(vocab.IdeaStartElaboration); err != nil {
		return fail(KindConflict, "Cannot start elaboration from status '%s'. Idea must be in 'elaborating' or 'elaborated' status (claim it first).", s.Status)
	}
	// 5. round cap
	if len(s.Rounds)+1 > maxRounds {
		return fail(KindConflict, "Maximum %d elaboration rounds per Idea", maxRounds)
	}
	return nil
}

// locateRound finds the round an answer call targets (docs/rules.md §2.2).
func (s IdeaState) locateRound(in AnswerElaborationInput) (*RoundState, error) {
	if in.RoundUUID != nil {
		for i := range s.Rounds {
			if s.Rounds[i].UUID == *in.RoundUUID {
				r := &s.Rounds[i]
				if r.Status != "pending_answers" {
					return nil, Refuse(KindConflict, answerErrPrefix+"Round is '%s', expected 'pending_answers' (round %d is already answered; "+
						"ask for a new round with chorus_pm_start_elaboration)", r.Status, r.Number)
				}
				return r, nil
			}
		}
		return nil, Refuse(KindNotFound, answerErrPrefix+"Elaboration round not found")
	}
	pending := s.pendingRounds()
	switch len(pending) {
	case 0:
		return nil, Refuse(KindConflict, answerErrPrefix+"no active round to answer (every round of this idea is answered)")
	case 1:
		return pending[0], nil
	}
	return nil, Refuse(KindInvalid, answerErrPrefix+"multiple active rounds; specify roundUuid (see chorus_get_elaboration)")
}

func (s IdeaState) checkAnswer(in AnswerElaborationInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	r, err := s.locateRound(in)
	if err != nil {
		return err
	}
	if len(in.Answers) == 0 {
		return Refuse(KindInvalid, answerErrPrefix+"answers must contain at least one answer")
	}
	for _, a := range in.Answers {
		qi := slices.IndexFunc(r.Questions, func(q QuestionState) bool { return q.ID == fingerprint(a.QuestionID) })
		if qi < 0 {
			return Refuse(KindInvalid, answerErrPrefix+"Question '%s' not found in round", a.QuestionID)
		}
		if a.SelectedOptionID != nil {
			if !slices.Contains(r.Questions[qi].Options, fingerprint(*a.SelectedOptionID)) {
				return Refuse(KindInvalid, answerErrPrefix+"Invalid option '%s' for question '%s': it is not one of the "+
					"question's option ids (chorus_get_elaboration lists them)", *a.SelectedOptionID, a.QuestionID)
			}
		} else if a.CustomText == nil || strings.TrimSpace(*a.CustomText) == "" {
			return Refuse(KindInvalid, answerErrPrefix+"Question '%s': custom text is required when no option is selected", a.QuestionID)
		}
	}
	return nil
}

const resolveErrPrefix = "Failed to resolve elaboration: "

func (s IdeaState) checkValidate(in IdeaCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	// A person (actor type "user") who edits the project resolves whoever holds the idea: the
	// console's "Resolve elaboration" (docs/rules.md §2.2); the use case checked their access.
	if in.Actor.Type != "user" && !s.isAssignee(in.Actor, false) {
		return Refuse(KindForbidden, resolveErrPrefix+"Only the assigned agent can resolve elaboration")
	}
	if len(s.Rounds) == 0 {
		return Refuse(KindConflict, resolveErrPrefix+"Cannot resolve: the Idea has no elaboration rounds (start one with "+
			"chorus_pm_start_elaboration, or skip elaboration with chorus_pm_skip_elaboration)")
	}
	if p := len(s.pendingRounds()); p > 0 {
		return Refuse(KindConflict, resolveErrPrefix+"Cannot resolve: %d round(s) still have unanswered questions "+
			"(answer them with chorus_answer_elaboration first)", p)
	}
	return nil
}

const skipErrPrefix = "Failed to skip elaboration: "

func (s IdeaState) checkSkip(in SkipElaborationInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor, false) {
		return Refuse(KindForbidden, skipErrPrefix+"Only the assigned agent can skip elaboration (claim the idea first)")
	}
	if _, err := s.status().Next(vocab.IdeaSkipElaboration); err != nil {
		return Refuse(KindConflict, skipErrPrefix+"Cannot skip elaboration from status '%s' (only an elaborating idea can skip)", s.Status)
	}
	return nil
}

// ---- delete ----

func (s IdeaState) checkDelete(in IdeaCommand) error { return s.exists() }

// editRefusal words a refusal of chorus_pm_edit_idea's change as the edit's failure, keeping
// its kind.
func editRefusal(e *Error) *Error { return Refuse(e.Kind, "Failed to edit Idea: %s", e.Message) }
