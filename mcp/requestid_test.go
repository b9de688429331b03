package mcp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 19: a call refused by input validation ran nothing, so it does not consume its
// requestId: the corrected call with the same requestId runs (docs/rules.md §8.5). The key is
// bound to a call only once a call with it started executing: a later call with other
// arguments is still refused.
func TestInputRefusalDoesNotConsumeRequestID(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		theme := createIdea(t, admin, project, "Theme", map[string]any{"isContainer": true})
		child := createIdea(t, admin, project, "Child", nil)

		// A record: the blank comment is refused by the handler's own check.
		require.Contains(t, fails(t, admin, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": task,
			"content": "   ", "requestId": "c1"}), "Input validation error: content must not be blank")
		var c1, again CommentView
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": task, "content": "hello",
			"requestId": "c1"}, &c1)
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": task, "content": "hello",
			"requestId": "c1"}, &again)
		require.Equal(t, c1.UUID, again.UUID, "the retry of the call that ran answers it")
		require.Contains(t, fails(t, admin, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": task,
			"content": "other", "requestId": "c1"}), "was already used for a different call")
		var list CommentList
		ok(t, admin, "chorus_get_comments", map[string]any{"targetType": "task", "targetUuid": task}, &list)
		require.Equal(t, 1, list.Total)

		// A lifecycle command refused by the tool's check, then by the workflow's validator.
		require.Contains(t, fails(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "parentUuid": theme,
			"detachParent": true, "requestId": "e1"}), "Input validation error")
		var ed EditedIdea
		ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "parentUuid": theme, "requestId": "e1"}, &ed)
		require.Equal(t, theme, *ed.ParentUUID)
		require.Contains(t, fails(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "requestId": "e2"}),
			"Provide at least one of")
		ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "title": "Renamed", "requestId": "e2"}, &ed)
		require.Equal(t, "Renamed", ed.Title)
		ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "title": "Renamed", "requestId": "e2"}, &ed)
		require.Equal(t, 1, activityCount(t, e.st, child, "reparented"))
		e.requireAgreement()
	})
}
