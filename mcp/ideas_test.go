package mcp

import (
	"context"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

func createProject(t *testing.T, s *mcpsdk.ClientSession, name string) string {
	t.Helper()
	var p CreatedProject
	ok(t, s, "chorus_admin_create_project", map[string]any{"name": name}, &p)
	return p.UUID
}

func createIdea(t *testing.T, s *mcpsdk.ClientSession, project, title string, extra map[string]any) string {
	t.Helper()
	args := map[string]any{"projectUuid": project, "title": title}
	for k, v := range extra {
		args[k] = v
	}
	var out CreatedIdea
	ok(t, s, "chorus_pm_create_idea", args, &out)
	require.Equal(t, "open", out.Status)
	return out.UUID
}

// createTask creates a task "T" with one criterion in project through chorus_create_tasks and
// returns its uuid.
func createTask(t *testing.T, s *mcpsdk.ClientSession, project string) string {
	t.Helper()
	var created CreatedTasks
	ok(t, s, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	return created.Tasks[0].UUID
}

func twoQuestions() []map[string]any {
	opts := []map[string]any{{"id": "a", "label": "Yes"}, {"id": "b", "label": "No"}}
	return []map[string]any{
		{"id": "q1", "text": "Should it support SSO?", "category": "functional", "options": opts},
		{"id": "q2", "text": "Any deadline?", "category": "scope", "options": opts, "required": false},
	}
}

func activityCount(t *testing.T, st *store.Store, target, action string) int {
	t.Helper()
	n, err := st.DB.NewSelect().Model((*store.Activity)(nil)).Where("target_uuid = ?", target).Where("action = ?", action).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

func TestIdeaLifecycleThroughElaboration(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.client(e.agent("PM", perm.PMAgent))
		project := createProject(t, admin, "Apollo")
		idea := createIdea(t, pm, project, "Single sign-on", map[string]any{"content": "Let users log in with SSO"})

		var v IdeaView
		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, &v)
		require.Equal(t, "elaborating", v.Status)
		require.Equal(t, "PM", v.Assignee.Name)
		require.Equal(t, 1, activityCount(t, e.st, idea, "assigned"))

		var round RoundView
		ok(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, &round)
		require.Equal(t, 1, round.RoundNumber)
		require.Equal(t, "pending_answers", round.Status)
		require.Len(t, round.Questions, 2)

		// The admin cannot validate while the round is pending, and is not the assignee anyway.
		msg := fails(t, pm, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea})
		require.Equal(t, "Tool chorus_pm_validate_elaboration not found", msg, "pm preset lacks idea:admin")

		// A bad option is refused and nothing is saved.
		msg = fails(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
			"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil},
				{"questionId": "q2", "selectedOptionId": "zzz", "customText": nil}}})
		require.Contains(t, msg, "Invalid option 'zzz' for question 'q2'")
		var el ElaborationView
		ok(t, pm, "chorus_get_elaboration", map[string]any{"ideaUuid": idea}, &el)
		require.Equal(t, 0, el.Summary.AnsweredQuestions)

		// Answering the required question completes the round.
		ok(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
			"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}}}, &round)
		require.Equal(t, "answered", round.Status)
		require.NotNil(t, round.Questions[0].Answer)
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &v)
		require.Equal(t, "validating", *v.ElaborationStatus)

		// Resolving needs idea:admin AND being the assignee: give the PM agent idea:admin.
		pmAdmin := e.agent("PM2", perm.PMAgent)
		_ = pmAdmin
		msg = fails(t, admin, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea})
		require.Contains(t, msg, "Only the assigned agent can resolve elaboration")

		_, err := e.st.DB.NewUpdate().Model((*store.Agent)(nil)).Set("permissions = ?", `["idea:admin"]`).
			Where("name = 'PM'").Exec(context.Background())
		require.NoError(t, err)
		ok(t, pm, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}, &el)
		require.Equal(t, "resolved", *el.Status)
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &v)
		require.Equal(t, "elaborated", v.Status)
		require.Equal(t, "in_progress", v.DerivedStatus) // planning: no proposal yet

		// An appended round keeps the idea elaborated.
		ok(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "minimal", "questions": twoQuestions()[:1]}, &round)
		require.True(t, round.IsAppended)
		require.Equal(t, 2, round.RoundNumber)
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &v)
		require.Equal(t, "elaborated", v.Status)
		require.Equal(t, "resolved", *v.ElaborationStatus)

		var list IdeaList
		ok(t, pm, "chorus_get_ideas", map[string]any{"projectUuid": project, "status": "elaborated"}, &list)
		require.Equal(t, 1, list.Total)
		ok(t, pm, "chorus_get_ideas", map[string]any{"projectUuid": project, "status": "completed"}, &list)
		require.Equal(t, 0, list.Total, "legacy status words match nothing")
		e.requireAgreement()
	})
}

func TestIllegalIdeaTransitionsChangeNothing(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	pm := e.client(e.agent("PM", perm.PMAgent))
	other := e.client(e.agent("Other PM", perm.PMAgent))
	project := createProject(t, admin, "Apollo")
	idea := createIdea(t, pm, project, "Idea", nil)

	// Nothing can happen to an open idea but claim.
	for tool, want := range map[string]string{
		"chorus_release_idea":        "Only the assignee can release a claimed Idea",
		"chorus_pm_skip_elaboration": "Failed to skip elaboration: Only the assigned agent",
	} {
		args := map[string]any{"ideaUuid": idea, "reason": "x"}
		if tool == "chorus_release_idea" {
			delete(args, "reason")
		}
		require.Contains(t, fails(t, pm, tool, args), want, tool)
	}
	msg := fails(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()})
	require.Contains(t, msg, "Only the assigned agent can start elaboration")

	ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	msg = fails(t, other, "chorus_claim_idea", map[string]any{"ideaUuid": idea})
	require.True(t, strings.HasPrefix(msg, "Can only claim Ideas with open status"), msg)
	require.Contains(t, fails(t, other, "chorus_release_idea", map[string]any{"ideaUuid": idea}), "Only the assignee can release")

	// Validation of question format, before anything else.
	bad := twoQuestions()
	bad[0]["options"] = []map[string]any{{"id": "a", "label": "Only one"}}
	require.Equal(t, "Failed to start elaboration: Question 'q1' must have 2-5 options, got 1",
		fails(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": bad}))
	require.Equal(t, "Failed to start elaboration: At least 1 question is required",
		fails(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": []any{}}))
	require.Equal(t, `Input validation error: depth must be one of minimal, standard, comprehensive, got "deep"`,
		fails(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "deep", "questions": twoQuestions()}))

	// Answering without a round.
	require.Contains(t, fails(t, pm, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
		"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}}}), "no active round to answer")

	// Only the claim left a trace.
	n, err := e.st.DB.NewSelect().Model((*store.Activity)(nil)).Where("target_uuid = ?", idea).Count(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = e.st.DB.NewSelect().Model((*store.ElaborationRound)(nil)).Where("idea_uuid = ?", idea).Count(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 0, n)

	// Release returns it to open; then skip is refused (not elaborating).
	var v IdeaView
	ok(t, pm, "chorus_release_idea", map[string]any{"ideaUuid": idea}, &v)
	require.Equal(t, "open", v.Status)
	require.Nil(t, v.Assignee)
	e.requireAgreement()
}

func TestIdeaLineage(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	pm := e.client(e.agent("PM", perm.PMAgent))
	project := createProject(t, admin, "Apollo")
	other := createProject(t, admin, "Zeus")
	theme := createIdea(t, pm, project, "Theme", map[string]any{"isContainer": true})
	child := createIdea(t, pm, project, "Child", map[string]any{"parentUuid": theme})
	grand := createIdea(t, pm, project, "Grandchild", map[string]any{"parentUuid": child})
	foreign := createIdea(t, pm, other, "Elsewhere", nil)

	var v IdeaView
	ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": theme}, &v)
	require.Len(t, v.Children, 1)
	require.ElementsMatch(t, []string{child, grand}, v.DescendantUUIDs)

	// A cycle, a self-parent and a cross-project parent are refused.
	require.Contains(t, fails(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": theme, "parentUuid": grand}), "would create a cycle")
	require.Contains(t, fails(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": theme, "parentUuid": theme}), "cannot be its own parent")
	require.Contains(t, fails(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": child, "parentUuid": foreign}), "same project")
	require.Equal(t, "Idea not found", fails(t, pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "x", "parentUuid": foreign}))
	require.Equal(t, "Provide at least one of title, content, parentUuid, detachParent, or isContainer to edit.",
		fails(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": child}))

	// Detach, retitle.
	var ed EditedIdea
	ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": grand, "detachParent": true, "title": "Top"}, &ed)
	require.Nil(t, ed.ParentUUID)
	require.Equal(t, "Top", ed.Title)
	require.Equal(t, 1, activityCount(t, e.st, grand, "reparented"))
	require.Equal(t, 1, activityCount(t, e.st, grand, "edited"))

	// Deleting the theme orphans its child.
	res := call(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": theme})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "Idea "+theme+" deleted", text(res))
	ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": child}, &v)
	require.Nil(t, v.ParentUUID)
	require.Equal(t, "Idea not found", fails(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": theme}))
	require.Equal(t, "Idea not found", fails(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": theme}))
	e.requireAgreement()
}
