package workflows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// The rules that decide whether a command may run are pure functions of an entity's state and
// the command (docs/rules.md §2): the validators and the handlers' re-checks both call them.
// These tables hold them without Temporal.

type ruleCase struct {
	name string
	err  error
	want string // "" accepts; else a fragment of the refusal
	kind Kind
}

func checkRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		if c.want == "" {
			require.NoError(t, c.err, c.name)
			continue
		}
		var e *Error
		require.ErrorAs(t, c.err, &e, c.name)
		require.Contains(t, e.Message, c.want, c.name)
		if c.kind != "" {
			require.Equal(t, c.kind, e.Kind, c.name)
		}
	}
}

var (
	dev    = Actor{Type: "agent", UUID: "dev", Name: "Dev", CompanyUUID: "co"}
	dev2   = Actor{Type: "agent", UUID: "dev2", Name: "Dev Two", CompanyUUID: "co"}
	pmBoss = Actor{Type: "agent", UUID: "boss", Name: "Boss", CompanyUUID: "co", ProposalAdmin: true}
)

func task(status string, holder *Actor, criteria ...CriterionState) TaskState {
	s := TaskState{Created: true, UUID: "t", Title: "T", Status: status, Priority: "medium", Criteria: criteria}
	if holder != nil {
		s.Assignee = &Holder{Type: "agent", UUID: holder.UUID, Name: holder.Name}
	}
	return s
}

func TestTaskRules(t *testing.T) {
	passed := CriterionState{UUID: "c1", Required: true, Status: "passed", DevStatus: "passed"}
	pending := CriterionState{UUID: "c2", Required: true, Status: "pending", DevStatus: "pending"}
	optional := CriterionState{UUID: "c3", Required: false, Status: "pending", DevStatus: "pending"}
	deleted := task("open", nil)
	deleted.Deleted = true
	inP := task("open", nil)
	inP.ProjectUUID = "p"
	checkRules(t, []ruleCase{
		{"claim an open task", task("open", nil).checkClaim(TaskCommand{Actor: dev}), "", ""},
		{"claim your own task again", task("assigned", &dev).checkClaim(TaskCommand{Actor: dev}), "", ""},
		{"claim another's task", task("assigned", &dev2).checkClaim(TaskCommand{Actor: dev}), "already assigned to Dev Two", KindConflict},
		{"claim a done task", task("done", &dev2).checkClaim(TaskCommand{Actor: dev}), "Can only claim tasks with open status", KindConflict},
		{"claim a deleted task", deleted.checkClaim(TaskCommand{Actor: dev}), "Task not found", KindNotFound},
		{"claim checked on the task's project", inP.checkClaim(TaskCommand{Actor: dev, Project: "p"}), "", ""},
		{"claim checked on a project the task left", inP.checkClaim(TaskCommand{Actor: dev, Project: "old"}),
			"This task was moved to another project", KindConflict},
		{"claim-next checked on a project the task left", inP.checkClaimNext(TaskCommand{Actor: dev, Project: "old"}),
			"This task was moved to another project", KindConflict},
		{"release as someone else", task("assigned", &dev2).checkRelease(TaskCommand{Actor: dev}), "Only the assignee can release", KindForbidden},
		{"release work in progress", task("in_progress", &dev).checkRelease(TaskCommand{Actor: dev}), "Can only release tasks with assigned status", KindConflict},
		{"release", task("assigned", &dev).checkRelease(TaskCommand{Actor: dev}), "", ""},
		{"assign a task in progress", task("in_progress", &dev).checkAssign(AssignTaskInput{Actor: pmBoss}), "open or assigned", KindConflict},
		{"move by a non-assignee", task("assigned", &dev2).checkUpdate(UpdateTaskInput{Actor: dev, Status: ptr("in_progress")}), "Only the assignee can update task status", KindForbidden},
		{"an illegal move", task("assigned", &dev).checkUpdate(UpdateTaskInput{Actor: dev, Status: ptr("to_verify")}), "Invalid status transition: assigned -> to_verify", KindConflict},
		{"edit fields as anyone", task("assigned", &dev2).checkUpdate(UpdateTaskInput{Actor: dev, Title: ptr("New")}), "", ""},
		{"replace criteria with none", task("open", nil).checkUpdate(UpdateTaskInput{Actor: dev, SetCriteria: true,
			Criteria: []store.CriterionDraft{{Description: "  "}}}), "Acceptance criteria are required", KindInvalid},
		{"report with an illegal status", task("assigned", &dev).checkReport(ReportWorkInput{Actor: dev, Report: "r", Status: ptr("to_verify")}),
			"Nothing was recorded", KindConflict},
		{"report a blank report", task("assigned", &dev).checkReport(ReportWorkInput{Actor: dev, Report: " "}), "report must not be blank", KindInvalid},
		{"self-check someone else's criterion", task("in_progress", &dev, passed).checkSelfCheck(MarkCriteriaInput{Actor: dev,
			Marks: []CriterionMark{{UUID: "other", Status: "passed"}}}), "does not belong to task", KindInvalid},
		{"self-check as a non-assignee", task("in_progress", &dev2, passed).checkSelfCheck(MarkCriteriaInput{Actor: dev,
			Marks: []CriterionMark{{UUID: "c1", Status: "passed"}}}), "Only the assignee can self-check", KindForbidden},
		{"submit before starting", task("assigned", &dev).checkSubmit(SubmitInput{Actor: dev}), "move it to in_progress", KindConflict},
		{"submit", task("in_progress", &dev).checkSubmit(SubmitInput{Actor: dev}), "", ""},
		{"verify with a required criterion pending", task("to_verify", &dev, passed, pending).checkVerify(TaskCommand{Actor: pmBoss}),
			"Required: 2, Passed: 1, Failed: 0, Pending: 1", KindConflict},
		{"verify with only an optional criterion pending", task("to_verify", &dev, passed, optional).checkVerify(TaskCommand{Actor: pmBoss}), "", ""},
		{"verify work in progress", task("in_progress", &dev, passed).checkVerify(TaskCommand{Actor: pmBoss}), "the assignee must submit it first", KindConflict},
		{"reopen a done task", task("done", &dev).checkReopen(ReopenInput{Actor: pmBoss}), "Can only reopen Tasks in to_verify status", KindConflict},
		{"close a closed task", task("closed", nil).checkClose(TaskCommand{Actor: pmBoss}), "already in closed status", KindConflict},
		{"close", task("done", &dev).checkClose(TaskCommand{Actor: pmBoss}), "", ""},
	})
}

func idea(status string, holder *Actor, rounds ...RoundState) IdeaState {
	s := IdeaState{Created: true, UUID: "i", Title: "I", Status: status, Rounds: rounds}
	if holder != nil {
		s.Assignee = &Holder{Type: "agent", UUID: holder.UUID, Name: holder.Name}
	}
	return s
}

func TestIdeaRules(t *testing.T) {
	round := RoundState{UUID: "r1", Number: 1, Status: "pending_answers", Questions: []QuestionState{
		{UUID: "q", ID: fingerprint("scope"), Required: true, Options: []string{fingerprint("small"), fingerprint("large")}}}}
	answered := round
	answered.Status = "answered"
	answer := func(q, option string, custom *string) AnswerElaborationInput {
		a := AnswerInput{QuestionID: q, CustomText: custom}
		if option != "" {
			a.SelectedOptionID = &option
		}
		return AnswerElaborationInput{Actor: dev, Answers: []AnswerInput{a}}
	}
	questions := []QuestionInput{{ID: "q1", Text: "Which?", Category: "scope", Options: []store.QuestionOption{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}}
	checkRules(t, []ruleCase{
		{"claim an open idea", idea("open", nil).checkClaim(IdeaCommand{Actor: dev}), "", ""},
		{"claim a held idea", idea("elaborating", &dev2).checkClaim(IdeaCommand{Actor: dev}), "already assigned (agent dev2)", KindConflict},
		{"claim an elaborated idea", idea("elaborated", nil).checkClaim(IdeaCommand{Actor: dev}), "Cannot claim an elaborated Idea", KindConflict},
		{"release an idea nobody holds", idea("open", nil).checkRelease(IdeaCommand{Actor: dev}), "this idea is not claimed", KindForbidden},
		{"release an elaborated idea", idea("elaborated", &dev).checkRelease(IdeaCommand{Actor: dev}), "Cannot release an elaborated Idea", KindConflict},
		{"start elaboration without holding", idea("elaborating", &dev2).checkStart(StartElaborationInput{Actor: dev, Depth: "minimal",
			Questions: questions}), "Only the assigned agent can start elaboration", KindForbidden},
		{"start a round with one option", idea("elaborating", &dev).checkStart(StartElaborationInput{Actor: dev, Depth: "minimal",
			Questions: []QuestionInput{{ID: "q1", Text: "?", Category: "scope", Options: []store.QuestionOption{{ID: "a", Label: "A"}}}}}),
			"must have 2-5 options, got 1", KindInvalid},
		{"start an eleventh round", idea("elaborated", &dev, make([]RoundState, 10)...).checkStart(StartElaborationInput{Actor: dev,
			Depth: "minimal", Questions: questions}), "Maximum 10 elaboration rounds", KindConflict},
		{"answer with a known option", idea("elaborating", &dev, round).checkAnswer(answer("scope", "small", nil)), "", ""},
		{"answer an unknown question", idea("elaborating", &dev, round).checkAnswer(answer("budget", "small", nil)), "Question 'budget' not found", KindInvalid},
		{"answer with an unknown option", idea("elaborating", &dev, round).checkAnswer(answer("scope", "medium", nil)), "Invalid option 'medium'", KindInvalid},
		{"answer with neither option nor text", idea("elaborating", &dev, round).checkAnswer(answer("scope", "", ptr(" "))), "custom text is required", KindInvalid},
		{"answer when every round is answered", idea("elaborating", &dev, answered).checkAnswer(answer("scope", "small", nil)), "no active round", KindConflict},
		{"resolve with a round pending", idea("elaborating", &dev, round).checkValidate(IdeaCommand{Actor: dev}), "1 round(s) still have unanswered questions", KindConflict},
		{"resolve without rounds", idea("elaborating", &dev).checkValidate(IdeaCommand{Actor: dev}), "has no elaboration rounds", KindConflict},
		{"resolve", idea("elaborating", &dev, answered).checkValidate(IdeaCommand{Actor: dev}), "", ""},
		{"resolve another's idea", idea("elaborating", &dev2, answered).checkValidate(IdeaCommand{Actor: dev}), "Only the assigned agent can resolve", KindForbidden},
		{"a person resolves an agent's idea", idea("elaborating", &dev2, answered).checkValidate(IdeaCommand{Actor: Actor{Type: "user", UUID: "u1", OwnerUUID: "u1"}}), "", ""},
		{"a person resolves with a round pending", idea("elaborating", &dev2, round).checkValidate(IdeaCommand{Actor: Actor{Type: "user", UUID: "u1"}}), "still have unanswered questions", KindConflict},
		{"skip an open idea", idea("open", &dev).checkSkip(SkipElaborationInput{Actor: dev, Reason: "clear"}), "only an elaborating idea can skip", KindConflict},
		{"edit nothing", idea("open", nil).checkEdit(EditIdeaInput{Actor: dev}), "Provide at least one of", KindInvalid},
		{"make an idea its own parent", idea("open", nil).checkEdit(EditIdeaInput{Actor: dev, SetParent: true, ParentUUID: ptr("i")}), "its own parent", KindInvalid},
	})
}

func TestProposalRules(t *testing.T) {
	proposal := func(status string, tasks int) ProposalState {
		s := ProposalState{Created: true, UUID: "p", Title: "P", Status: status, CreatedBy: Party{Type: "agent", UUID: dev.UUID}}
		for i := range tasks {
			s.Tasks = append(s.Tasks, strings.Repeat("t", i+1))
		}
		return s
	}
	note := ptr("because")
	criteria := []store.CriterionDraft{{Description: "works", Required: true}}
	checkRules(t, []ruleCase{
		{"submit a draft", proposal("draft", 1).checkSubmit(ProposalCommand{Actor: dev}), "", ""},
		{"submit a pending proposal", proposal("pending", 1).checkSubmit(ProposalCommand{Actor: dev}), "Only draft proposals can be submitted", KindConflict},
		{"reject another's proposal", proposal("pending", 1).checkReject(ProposalCommand{Actor: dev2, ReviewNote: note}), "You can only reject your own proposals", KindForbidden},
		{"reject another's proposal as proposal admin", proposal("pending", 1).checkReject(ProposalCommand{Actor: pmBoss, ReviewNote: note}), "", ""},
		{"reject without a note", proposal("pending", 1).checkReject(ProposalCommand{Actor: dev}), "reviewNote is required", KindInvalid},
		{"approve a draft", proposal("draft", 1).checkApprove(ProposalCommand{Actor: pmBoss}), "its author must submit it first", KindConflict},
		{"approve twice", proposal("approved", 1).checkApprove(ProposalCommand{Actor: pmBoss}), "it was already approved", KindConflict},
		{"close an approved proposal", proposal("approved", 1).checkClose(ProposalCommand{Actor: pmBoss, ReviewNote: note}), "Can only close pending Proposals", KindConflict},
		{"revoke a pending proposal", proposal("pending", 1).checkRevoke(ProposalCommand{Actor: dev}), "Can only revoke approved Proposals", KindConflict},
		{"add a task draft", proposal("draft", 1).checkAddTaskDraft(TaskDraftInput{Actor: dev, Title: ptr("T"), Criteria: criteria}), "", ""},
		{"add a task draft past the limit", proposal("draft", maxTaskDrafts).checkAddTaskDraft(TaskDraftInput{Actor: dev, Title: ptr("T"), Criteria: criteria}),
			"at most 100 task drafts", KindConflict},
		{"add a task draft to a pending proposal", proposal("pending", 1).checkAddTaskDraft(TaskDraftInput{Actor: dev, Title: ptr("T"), Criteria: criteria}),
			"not in draft status", KindConflict},
		{"update an unknown task draft", proposal("draft", 1).checkUpdateTaskDraft(TaskDraftInput{Actor: dev, DraftUUID: "nope"}), "Task draft not found", KindNotFound},
		{"update an unknown document draft", proposal("draft", 1).checkDocumentDraft("update", true, DocumentDraftInput{Actor: dev, DraftUUID: "nope"}),
			"Document draft not found", KindNotFound},
		{"add a document draft without content", proposal("draft", 1).checkDocumentDraft("add", false, DocumentDraftInput{Actor: dev, Type: ptr("prd"),
			Title: ptr("PRD")}), "type, title and content are required", KindInvalid},
		{"remove from an approved proposal", proposal("approved", 1).checkRemove("task"), "revoke it with chorus_pm_revoke_proposal", KindConflict},
	})
}
