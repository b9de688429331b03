package mcp

import (
	"context"
	"encoding/json"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
)

// strictClient calls tools the way a client in OpenAI's strict mode does (the OpenAI Agents SDK
// with convertSchemasToStrict): every property of the tool's input schema is sent, at any depth,
// as null when the call does not mean to set it.
type strictClient struct {
	t       *testing.T
	s       *mcpsdk.ClientSession
	schemas map[string]map[string]any
}

func newStrictClient(t *testing.T, s *mcpsdk.ClientSession) *strictClient {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	require.NoError(t, err)
	c := &strictClient{t: t, s: s, schemas: map[string]map[string]any{}}
	for _, tl := range res.Tools {
		c.schemas[tl.Name] = asMap(t, tl.InputSchema)
	}
	return c
}

// args fills in every property the schema has and args lacks with null.
func strictArgs(schema map[string]any, args map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{}
	for name, p := range props {
		ps, _ := p.(map[string]any)
		v, given := args[name]
		switch {
		case !given:
			out[name] = nil
		case ps["type"] == "object":
			m, _ := v.(map[string]any)
			out[name] = strictArgs(ps, m)
		case ps["type"] == "array":
			items, _ := ps["items"].(map[string]any)
			list, isList := v.([]map[string]any)
			if items["type"] != "object" || !isList {
				out[name] = v
				continue
			}
			filled := make([]map[string]any, len(list))
			for i, item := range list {
				filled[i] = strictArgs(items, item)
			}
			out[name] = filled
		default:
			out[name] = v
		}
	}
	return out
}

func (c *strictClient) ok(name string, args map[string]any, out any) {
	c.t.Helper()
	schema, listed := c.schemas[name]
	require.True(c.t, listed, "%s is not listed", name)
	ok(c.t, c.s, name, strictArgs(schema, args), out)
}

func (c *strictClient) fails(name string, args map[string]any) string {
	c.t.Helper()
	return fails(c.t, c.s, name, strictArgs(c.schemas[name], args))
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// Case 08: a strict-mode client's nulls change nothing it did not mean to change; detaching,
// clearing and leaving a group are explicit arguments.
func TestStrictModeNullsChangeNothing(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := newStrictClient(t, e.client(e.adminKey))
		pm := newStrictClient(t, e.client(e.agent("PM", perm.PMAgent)))
		e.agent("Dev", perm.DeveloperAgent)
		project := createProject(t, admin.s, "Apollo")
		theme := createIdea(t, pm.s, project, "Theme", map[string]any{"isContainer": true})
		child := createIdea(t, pm.s, project, "Child", map[string]any{"parentUuid": theme, "content": "kept"})

		// A rename sends every other key as null: only the title changes.
		var ed EditedIdea
		pm.ok("chorus_edit_idea", map[string]any{"ideaUuid": child, "title": "renamed"}, &ed)
		require.Equal(t, "renamed", ed.Title)
		require.NotNil(t, ed.ParentUUID, "null parentUuid must not detach")
		require.Equal(t, theme, *ed.ParentUUID)
		var v IdeaView
		ok(t, pm.s, "chorus_get_idea", map[string]any{"ideaUuid": child}, &v)
		require.Equal(t, "kept", *v.Content)
		require.Equal(t, 0, activityCount(t, e.st, child, "reparented"))
		// Detaching is said in so many words.
		pm.ok("chorus_edit_idea", map[string]any{"ideaUuid": child, "detachParent": true}, &ed)
		require.Nil(t, ed.ParentUUID)
		require.Equal(t, 1, activityCount(t, e.st, child, "reparented"))
		require.Equal(t, "Input validation error: give parentUuid (a new parent) or detachParent (no parent), not both",
			pm.fails("chorus_edit_idea", map[string]any{"ideaUuid": child, "parentUuid": theme, "detachParent": true}))

		// A reference keeps its notes through an update that sends notes: null.
		var ref ReferenceView
		pm.ok("chorus_add_reference", map[string]any{"targetType": "idea", "targetUuid": child, "type": "docs",
			"url": "https://x.dev", "title": "X", "notes": "keep me"}, &ref)
		pm.ok("chorus_update_reference", map[string]any{"uuid": ref.UUID, "title": "Y"}, &ref)
		require.Equal(t, "Y", ref.Title)
		require.NotNil(t, ref.Notes, "null notes must not clear them")
		require.Equal(t, "keep me", *ref.Notes)
		pm.ok("chorus_update_reference", map[string]any{"uuid": ref.UUID, "clearNotes": true}, &ref)
		require.Nil(t, ref.Notes)

		// A project goes into a group by its uuid and out of it by removeFromGroup; null for
		// both is no move at all.
		var g GroupView
		admin.ok("chorus_admin_create_project_group", map[string]any{"name": "Platform"}, &g)
		var mv MovedProject
		admin.ok("chorus_admin_move_project_to_group", map[string]any{"projectUuid": project, "groupUuid": g.UUID}, &mv)
		require.Equal(t, g.UUID, *mv.GroupUUID)
		require.Equal(t, "Input validation error: give groupUuid (the target group) or removeFromGroup: true (no group), one of them",
			admin.fails("chorus_admin_move_project_to_group", map[string]any{"projectUuid": project}))
		var pd ProjectDetail
		ok(t, admin.s, "chorus_get_project", map[string]any{"projectUuid": project}, &pd)
		require.Equal(t, g.UUID, *pd.GroupUUID, "the refused call left the project in its group")
		admin.ok("chorus_admin_move_project_to_group", map[string]any{"projectUuid": project, "removeFromGroup": true}, &mv)
		require.Nil(t, mv.GroupUUID)

		// Assigning with instanceUuid null assigns; answering with the unused member of each
		// answer null answers.
		task := createTask(t, admin.s, project)
		var tv TaskView
		pm.ok("chorus_pm_assign_task", map[string]any{"taskUuid": task, "agentUuid": agentUUID(t, e, "Dev")}, &tv)
		require.Equal(t, "assigned", tv.Status)
		idea := createIdea(t, pm.s, project, "SSO", nil)
		ok(t, pm.s, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
		ok(t, pm.s, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, nil)
		var round RoundView
		pm.ok("chorus_answer_elaboration", map[string]any{"ideaUuid": idea, "answers": []map[string]any{
			{"questionId": "q1", "selectedOptionId": "a"}, {"questionId": "q2", "customText": "next quarter"}}}, &round)
		require.Equal(t, "answered", round.Status)
		e.requireAgreement()
	})
}
