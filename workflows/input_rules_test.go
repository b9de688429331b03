package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The rules on command input that several commands and front ends share (rules.go,
// ValidateTaskBatch), held without Temporal: each refusal's exact text and kind, as every caller
// answers it (issue 21, item 2: one rule, the same words as before it moved).

// exactCase is a ruleCase whose want is the whole refusal text, and whose kind is always checked.
type exactCase = ruleCase

// checkExact is checkRules, and then each refusal's whole text must be want.
func checkExact(t *testing.T, cases []exactCase) {
	t.Helper()
	checkRules(t, cases)
	for _, c := range cases {
		if c.want == "" {
			continue
		}
		var e *Error
		require.ErrorAs(t, c.err, &e, c.name)
		require.Equal(t, c.want, e.Message, c.name)
		require.Equal(t, c.kind, e.Kind, c.name)
	}
}

const criteriaText = "Acceptance criteria are required: provide at least one acceptanceCriteriaItems entry with a non-blank description"

func TestTitleRule(t *testing.T) {
	blank := []store.CriterionDraft{{Description: " \t"}}
	works := []store.CriterionDraft{{Description: "works"}}
	draft := ProposalState{Created: true, UUID: "p", Status: "draft", Tasks: []string{"d1"}, Documents: []string{"doc1"}}
	checkExact(t, []exactCase{
		{"a title", CheckTitle("", "title", ptr("T")), "", ""},
		{"no title given", CheckTitle("", "title", nil), "", ""},
		{"an empty title", CheckTitle("", "title", ptr("")), "Input validation error: title must not be blank", KindInvalid},
		{"a title of spaces", CheckTitle("Failed to edit Idea", "title", ptr(" \n ")), "Failed to edit Idea: title must not be blank", KindInvalid},

		{"create an idea", IdeaState{}.checkCreate(CreateIdeaInput{Title: "  "}), "Input validation error: title must not be blank", KindInvalid},
		{"edit an idea", idea("open", nil).checkEdit(EditIdeaInput{Actor: dev, Title: ptr(" ")}), "Failed to edit Idea: title must not be blank", KindInvalid},
		{"create a proposal", ProposalState{}.checkCreate(CreateProposalInput{Title: " "}), "Input validation error: title must not be blank", KindInvalid},
		{"add a document draft", draft.checkDocumentDraft("add", false, DocumentDraftInput{Type: ptr("prd"), Title: ptr(" "), Content: ptr("c")}),
			"Failed to add document draft: title must not be blank", KindInvalid},
		{"update a document draft", draft.checkDocumentDraft("update", true, DocumentDraftInput{DraftUUID: "doc1", Title: ptr("")}),
			"Failed to update document draft: title must not be blank", KindInvalid},
		{"add a task draft without a title", draft.checkAddTaskDraft(TaskDraftInput{Criteria: works}),
			"Failed to add task draft: title must not be blank", KindInvalid},
		{"add a task draft with a blank title", draft.checkAddTaskDraft(TaskDraftInput{Title: ptr(" "), Criteria: works}),
			"Failed to add task draft: title must not be blank", KindInvalid},
		{"update a task draft's title to blank", draft.checkUpdateTaskDraft(TaskDraftInput{DraftUUID: "d1", Title: ptr(" ")}),
			"Failed to update task draft: title must not be blank", KindInvalid},
		// chorus_update_task: the workflow holds the rule too, not only the MCP tool.
		{"update a task's title to blank", task("open", nil).checkUpdate(UpdateTaskInput{Actor: dev, Title: ptr("  ")}),
			"Input validation error: title must not be blank", KindInvalid},
		{"update a task's title", task("open", nil).checkUpdate(UpdateTaskInput{Actor: dev, Title: ptr("New")}), "", ""},
		{"a batch task with a blank title", ValidateTaskBatch([]NewTaskSpec{{Title: " ", Criteria: works}}),
			"Input validation error: tasks[].title must not be blank", KindInvalid},
		{"criteria are checked before the title", draft.checkAddTaskDraft(TaskDraftInput{Title: ptr("T"), Criteria: blank}),
			"Failed to add task draft: " + criteriaText, KindInvalid},
	})
}

func TestCriteriaRule(t *testing.T) {
	blank := []store.CriterionDraft{{Description: " "}, {Description: ""}}
	works := []store.CriterionDraft{{Description: " "}, {Description: "works"}}
	draft := ProposalState{Created: true, UUID: "p", Status: "draft", Tasks: []string{"d1"}}
	checkExact(t, []exactCase{
		{"one criterion survives", CheckCriteria("", works), "", ""},
		{"none given", CheckCriteria("", nil), criteriaText, KindInvalid},
		{"only blank ones", CheckCriteria("Task \"X\"", blank), "Task \"X\": " + criteriaText, KindInvalid},
		{"add a task draft", draft.checkAddTaskDraft(TaskDraftInput{Title: ptr("T"), Criteria: blank}), "Failed to add task draft: " + criteriaText, KindInvalid},
		{"replace a task draft's criteria with none", draft.checkUpdateTaskDraft(TaskDraftInput{DraftUUID: "d1", SetCriteria: true, Criteria: blank}),
			"Failed to update task draft: " + criteriaText, KindInvalid},
		{"edit a task draft without touching criteria", draft.checkUpdateTaskDraft(TaskDraftInput{DraftUUID: "d1", Title: ptr("T")}), "", ""},
		{"replace a task's criteria with none", task("open", nil).checkUpdate(UpdateTaskInput{Actor: dev, SetCriteria: true, Criteria: blank}),
			criteriaText, KindInvalid},
		{"replace a task's criteria", task("open", nil).checkUpdate(UpdateTaskInput{Actor: dev, SetCriteria: true, Criteria: works}), "", ""},
		{"a batch task without criteria", ValidateTaskBatch([]NewTaskSpec{{Title: "Good", Criteria: works}, {Title: "Bad", Criteria: blank}}),
			`Task "Bad": ` + criteriaText, KindConflict},
	})
}

func TestValidateTaskBatch(t *testing.T) {
	works := []store.CriterionDraft{{Description: "works"}}
	spec := func(title string, label *string, crit []store.CriterionDraft) NewTaskSpec {
		return NewTaskSpec{Title: title, DraftUUID: label, Criteria: crit}
	}
	checkExact(t, []exactCase{
		{"one task", ValidateTaskBatch([]NewTaskSpec{spec("A", nil, works)}), "", ""},
		{"labels that differ", ValidateTaskBatch([]NewTaskSpec{spec("A", ptr("a"), works), spec("B", ptr("b"), works), spec("C", nil, works)}), "", ""},
		{"a label used twice", ValidateTaskBatch([]NewTaskSpec{spec("A", ptr("d"), works), spec("B", ptr("d"), works)}),
			`Input validation error: tasks: draftUuid "d" is used by two tasks; give each task its own`, KindInvalid},
		{"labels are checked before any task", ValidateTaskBatch([]NewTaskSpec{spec(" ", ptr("d"), nil), spec("B", ptr("d"), works)}),
			`Input validation error: tasks: draftUuid "d" is used by two tasks; give each task its own`, KindInvalid},
		{"tasks in order: the first task's blank title", ValidateTaskBatch([]NewTaskSpec{spec(" ", nil, works), spec("B", nil, nil)}),
			"Input validation error: tasks[].title must not be blank", KindInvalid},
		{"tasks in order: the first task's criteria", ValidateTaskBatch([]NewTaskSpec{spec("A", nil, nil), spec(" ", nil, works)}),
			`Task "A": ` + criteriaText, KindConflict},
		{"within a task, criteria before the title", ValidateTaskBatch([]NewTaskSpec{spec(" ", nil, nil)}),
			`Task " ": ` + criteriaText, KindConflict},
	})
}

func TestBlockedErrorCountsItsBlockers(t *testing.T) {
	one := BlockedError([]store.TaskLink{{Title: "Schema", Status: "open"}})
	require.Equal(t, KindConflict, one.Kind)
	require.Equal(t, "Cannot move to in_progress: 1 dependency not resolved.\n\nBlockers:\n"+
		`1. "Schema" (status: open, assignee: none, session: no active session)`+
		"\n\nTip: Use chorus_get_unblocked_tasks to find tasks you can start now.", one.Message)
	two := BlockedError([]store.TaskLink{{Title: "A", Status: "open"}, {Title: "B", Status: "to_verify"}})
	require.Contains(t, two.Message, "Cannot move to in_progress: 2 dependencies not resolved.\n\nBlockers:\n1. \"A\"")
}

func TestResolvedIsTheStoresList(t *testing.T) {
	var resolved []string
	for _, s := range vocab.TaskStatuses {
		if s.Resolved() {
			resolved = append(resolved, string(s))
		}
		require.Equal(t, store.ResolvedStatus(string(s)), s.Resolved(), s)
	}
	require.Equal(t, []string{"done", "closed"}, resolved, "docs/rules.md §5.3")
}

// CreateTasksWorkflow applies ValidateTaskBatch before any command: a batch that breaks it fails
// with the refusal (its kind and words intact through Temporal) and writes nothing; one that
// keeps it writes its tasks in one activity.
func TestCreateTasksWorkflowRefusesABadBatchBeforeWriting(t *testing.T) {
	works := []store.CriterionDraft{{Description: "works"}}
	for _, c := range []struct {
		name  string
		tasks []NewTaskSpec
		want  string
		kind  Kind
	}{
		{"no criteria", []NewTaskSpec{{Title: "Good", Criteria: works}, {Title: "Bad"}}, `Task "Bad": ` + criteriaText, KindConflict},
		{"a blank title", []NewTaskSpec{{Title: " ", Criteria: works}}, "Input validation error: tasks[].title must not be blank", KindInvalid},
		{"a shared label", []NewTaskSpec{{Title: "A", DraftUUID: ptr("d"), Criteria: works}, {Title: "B", DraftUUID: ptr("d"), Criteria: works}},
			`Input validation error: tasks: draftUuid "d" is used by two tasks; give each task its own`, KindInvalid},
		{"a good batch", []NewTaskSpec{{Title: "A", DraftUUID: ptr("a"), Criteria: works}, {Title: "B", DependsOnDraftUUIDs: []string{"a"}, Criteria: works}}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, _ := newEnv(t)
			env.RegisterWorkflowWithOptions(CreateTasksWorkflow, workflow.RegisterOptions{Name: CreateTasksWorkflowName})
			var a *activities.Activities
			var written []activities.TaskBatchStart
			env.OnActivity(a.CreateTaskBatchAndStart, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in activities.TaskBatchStart) ([]string, error) {
					written = append(written, in)
					return nil, nil
				})
			env.ExecuteWorkflow(CreateTasksWorkflowName, CreateTasksInput{Actor: pm, BatchUUID: "b", ProjectUUID: "p", Tasks: c.tasks})
			require.True(t, env.IsWorkflowCompleted())
			if c.want == "" {
				require.NoError(t, env.GetWorkflowError())
				require.Len(t, written, 1)
				require.Len(t, written[0].Batch.Tasks, 2)
				return
			}
			err := env.GetWorkflowError()
			require.Empty(t, written, "a refused batch writes nothing")
			e, ok := FromTemporal(err).(*Error)
			require.True(t, ok, "%v", err)
			require.Equal(t, c.want, e.Message)
			require.Equal(t, c.kind, e.Kind)
		})
	}
}
