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

// Project roles on every tool (docs/rules.md §6.3): on a private project a viewer reads and is
// refused every change with "Insufficient project access", an editor passes every gate (its
// calls may still meet the tools' own guards), and a non-member finds nothing ("<Entity> not
// found", exactly like a uuid that does not exist). Every tool of the table is listed here, so a
// new tool cannot skip its gate unnoticed.

// gate is what a tool needs on the project of the entities it names.
type gate int

const (
	// company: the tool names no project entity (company-wide, or filtered to what the caller sees).
	company gate = iota
	viewerGate
	editorGate
	// manageGate: manage_project (admin on a private project).
	manageGate
)

// roleFixture is what the calls name: entities of the private project P, and throwaway ones for
// the destructive calls.
type roleFixture struct {
	p, q                         string // private projects; q is a move target
	idea, elaborated, doomedIdea string
	movingIdea                   string
	proposal                     string
	task, doomedTask             string
	doc, doomedDoc               string
	ref, doomedRef               string // references on task
	editorAgent                  string
	user                         string // a user of the company (the company's owner)
}

// roleCases gives, per tool, its gate and its arguments.
func roleCases(f roleFixture) map[string]struct {
	gate gate
	args map[string]any
} {
	ac := []map[string]any{{"description": "works"}}
	type c = struct {
		gate gate
		args map[string]any
	}
	return map[string]c{
		"chorus_checkin":                           {company, nil},
		"chorus_list_projects":                     {company, nil},
		"chorus_get_my_assignments":                {company, nil},
		"chorus_admin_create_project":              {company, nil},
		"chorus_get_project_groups":                {company, nil},
		"chorus_get_project_group":                 {company, nil},
		"chorus_get_group_dashboard":               {company, nil},
		"chorus_admin_create_project_group":        {company, nil},
		"chorus_admin_update_project_group":        {company, nil},
		"chorus_admin_delete_project_group":        {company, nil},
		"chorus_admin_move_project_to_group":       {manageGate, map[string]any{"projectUuid": f.p, "removeFromGroup": true, "preview": true}},
		"chorus_list_project_members":              {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_admin_add_project_member":          {manageGate, map[string]any{"projectUuid": f.p, "userUuid": f.user, "role": "viewer"}},
		"chorus_admin_remove_project_member":       {manageGate, map[string]any{"projectUuid": f.p, "userUuid": f.user}},
		"chorus_list_project_group_members":        {company, nil},
		"chorus_admin_add_project_group_member":    {company, nil},
		"chorus_admin_remove_project_group_member": {company, nil},

		"chorus_get_project":             {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_ideas":               {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_idea":                {viewerGate, map[string]any{"ideaUuid": f.idea}},
		"chorus_get_available_ideas":     {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_elaboration":         {viewerGate, map[string]any{"ideaUuid": f.idea}},
		"chorus_pm_create_idea":          {editorGate, map[string]any{"projectUuid": f.p, "title": "New"}},
		"chorus_claim_idea":              {editorGate, map[string]any{"ideaUuid": f.idea}},
		"chorus_release_idea":            {editorGate, map[string]any{"ideaUuid": f.idea}},
		"chorus_pm_assign_idea":          {editorGate, map[string]any{"ideaUuid": f.idea, "assigneeType": "user", "assigneeUuid": f.user}},
		"chorus_edit_idea":               {editorGate, map[string]any{"ideaUuid": f.idea, "title": "Edited"}},
		"chorus_pm_start_elaboration":    {editorGate, map[string]any{"ideaUuid": f.idea, "depth": "minimal", "questions": twoQuestions()}},
		"chorus_answer_elaboration":      {editorGate, map[string]any{"ideaUuid": f.idea, "answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}}}},
		"chorus_pm_validate_elaboration": {editorGate, map[string]any{"ideaUuid": f.idea}},
		"chorus_pm_skip_elaboration":     {editorGate, map[string]any{"ideaUuid": f.idea, "reason": "clear enough"}},
		"chorus_admin_delete_idea":       {editorGate, map[string]any{"ideaUuid": f.doomedIdea}},
		"chorus_move_idea":               {editorGate, map[string]any{"ideaUuid": f.movingIdea, "targetProjectUuid": f.q}},

		"chorus_get_proposals":            {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_proposal":             {viewerGate, map[string]any{"proposalUuid": f.proposal}},
		"chorus_pm_create_proposal":       {editorGate, map[string]any{"projectUuid": f.p, "title": "P", "inputType": "idea", "inputUuids": []string{f.elaborated}}},
		"chorus_pm_add_document_draft":    {editorGate, map[string]any{"proposalUuid": f.proposal, "type": "prd", "title": "PRD", "content": longText}},
		"chorus_pm_add_task_draft":        {editorGate, map[string]any{"proposalUuid": f.proposal, "title": "T", "acceptanceCriteriaItems": ac}},
		"chorus_pm_update_document_draft": {editorGate, map[string]any{"proposalUuid": f.proposal, "draftUuid": store.NewUUID(), "title": "x"}},
		"chorus_pm_update_task_draft":     {editorGate, map[string]any{"proposalUuid": f.proposal, "draftUuid": store.NewUUID(), "title": "x"}},
		"chorus_pm_remove_document_draft": {editorGate, map[string]any{"proposalUuid": f.proposal, "draftUuid": store.NewUUID()}},
		"chorus_pm_remove_task_draft":     {editorGate, map[string]any{"proposalUuid": f.proposal, "draftUuid": store.NewUUID()}},
		"chorus_pm_validate_proposal":     {editorGate, map[string]any{"proposalUuid": f.proposal}},
		"chorus_pm_submit_proposal":       {editorGate, map[string]any{"proposalUuid": f.proposal}},
		"chorus_pm_reject_proposal":       {editorGate, map[string]any{"proposalUuid": f.proposal, "reviewNote": "no"}},
		"chorus_admin_approve_proposal":   {editorGate, map[string]any{"proposalUuid": f.proposal}},
		"chorus_admin_close_proposal":     {editorGate, map[string]any{"proposalUuid": f.proposal, "reviewNote": "no"}},
		"chorus_pm_revoke_proposal":       {editorGate, map[string]any{"proposalUuid": f.proposal}},

		"chorus_get_references":        {viewerGate, map[string]any{"targetType": "task", "targetUuid": f.task}},
		"chorus_get_task_dependencies": {viewerGate, map[string]any{"taskUuid": f.task, "direction": "dependedBy"}},
		"chorus_get_documents":         {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_document":          {viewerGate, map[string]any{"documentUuid": f.doc}},
		"chorus_pm_create_document":    {editorGate, map[string]any{"projectUuid": f.p, "type": "prd", "title": "Doc"}},
		"chorus_pm_update_document":    {editorGate, map[string]any{"documentUuid": f.doc, "title": "Doc 2"}},
		"chorus_admin_delete_document": {editorGate, map[string]any{"documentUuid": f.doomedDoc}},
		"chorus_create_report":         {editorGate, map[string]any{"proposalUuid": f.proposal, "title": "R", "content": "done"}},

		// Sessions belong to their caller, so their gates on tasks are checked per role below.
		"chorus_create_session":        {company, nil},
		"chorus_list_sessions":         {company, nil},
		"chorus_get_session":           {company, nil},
		"chorus_close_session":         {company, nil},
		"chorus_reopen_session":        {company, nil},
		"chorus_session_heartbeat":     {company, nil},
		"chorus_session_checkin_task":  {company, nil},
		"chorus_session_checkout_task": {company, nil},
		"chorus_claim_next_task":       {editorGate, map[string]any{"projectUuid": f.p}},

		"chorus_search":              {company, map[string]any{"query": "Vault"}},
		"chorus_search_mentionables": {company, nil},
		"chorus_add_reference": {editorGate, map[string]any{"targetType": "task", "targetUuid": f.task, "type": "docs",
			"url": "https://example.com/a", "title": "A"}},
		"chorus_update_reference": {editorGate, map[string]any{"uuid": f.ref, "title": "B"}},
		"chorus_remove_reference": {editorGate, map[string]any{"uuid": f.doomedRef}},

		"chorus_list_tasks":                 {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_task":                   {viewerGate, map[string]any{"taskUuid": f.task}},
		"chorus_get_available_tasks":        {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_get_unblocked_tasks":        {viewerGate, map[string]any{"projectUuid": f.p}},
		"chorus_create_tasks":               {editorGate, map[string]any{"projectUuid": f.p, "tasks": []map[string]any{{"title": "Q", "acceptanceCriteriaItems": ac}}}},
		"chorus_update_task":                {editorGate, map[string]any{"taskUuid": f.task, "title": "Renamed"}},
		"chorus_claim_task":                 {editorGate, map[string]any{"taskUuid": f.task}},
		"chorus_release_task":               {editorGate, map[string]any{"taskUuid": f.task}},
		"chorus_pm_assign_task":             {editorGate, map[string]any{"taskUuid": f.task, "agentUuid": f.editorAgent}},
		"chorus_report_work":                {editorGate, map[string]any{"taskUuid": f.task, "report": "progress"}},
		"chorus_report_criteria_self_check": {editorGate, map[string]any{"taskUuid": f.task, "criteria": []map[string]any{{"uuid": store.NewUUID(), "devStatus": "passed"}}}},
		"chorus_submit_for_verify":          {editorGate, map[string]any{"taskUuid": f.task}},
		"chorus_mark_acceptance_criteria":   {editorGate, map[string]any{"taskUuid": f.task, "criteria": []map[string]any{{"uuid": store.NewUUID(), "status": "passed"}}}},
		"chorus_admin_verify_task":          {editorGate, map[string]any{"taskUuid": f.task}},
		"chorus_admin_reopen_task":          {editorGate, map[string]any{"taskUuid": f.task}},
		"chorus_admin_close_task":           {editorGate, map[string]any{"taskUuid": f.task}},
		"chorus_admin_delete_task":          {editorGate, map[string]any{"taskUuid": f.doomedTask}},

		"chorus_add_comment":            {editorGate, map[string]any{"targetType": "task", "targetUuid": f.task, "content": "hi"}},
		"chorus_get_comments":           {viewerGate, map[string]any{"targetType": "document", "targetUuid": f.doc}},
		"chorus_get_activity":           {viewerGate, map[string]any{"projectUuid": f.p, "targetType": "idea", "targetUuid": f.idea}},
		"chorus_get_notifications":      {company, nil},
		"chorus_mark_notification_read": {company, map[string]any{"all": true}},
	}
}

// accessRefusals are the answers of the access gate (and nothing else).
func accessRefusal(msg string) bool {
	msg = strings.TrimPrefix(msg, "Failed to move Idea: ")
	for _, verb := range []string{"add", "update", "remove"} {
		msg = strings.TrimPrefix(msg, "Failed to "+verb+" reference: ")
	}
	if strings.HasPrefix(msg, "Target task with UUID ") || strings.HasPrefix(msg, "Reference with UUID ") {
		return strings.HasSuffix(msg, " not found")
	}
	switch msg {
	case "Project not found", "Idea not found", "Proposal not found", "Document not found", "Task not found",
		"Project or project group not found", "Insufficient project access", "Only project admins can manage this project":
		return true
	}
	return false
}

func TestProjectRolesOnEveryTool(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		var f roleFixture
		newPrivate := func(name string) string {
			var p CreatedProject
			ok(t, admin, "chorus_admin_create_project", map[string]any{"name": name, "visibility": "private"}, &p)
			return p.UUID
		}
		f.p, f.q = newPrivate("Vault"), newPrivate("Annex")
		f.idea = createIdea(t, pm, f.p, "Open idea", nil)
		f.doomedIdea = createIdea(t, pm, f.p, "Doomed idea", nil)
		f.movingIdea = createIdea(t, pm, f.p, "Moving idea", nil)
		f.elaborated = elaboratedIdea(t, pm, admin, f.p, "Elaborated")
		var pr CreatedProposal
		ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": f.p, "title": "P", "inputType": "idea",
			"inputUuids": []string{f.elaborated}}, &pr)
		f.proposal = pr.UUID
		var tasks CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": f.p, "tasks": []map[string]any{
			{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "Doomed", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &tasks)
		f.task, f.doomedTask = tasks.Tasks[0].UUID, tasks.Tasks[1].UUID
		for _, d := range []*string{&f.doc, &f.doomedDoc} {
			var doc map[string]any
			ok(t, admin, "chorus_pm_create_document", map[string]any{"projectUuid": f.p, "type": "guide", "title": "Guide"}, &doc)
			*d = doc["uuid"].(string)
		}
		for _, r := range []*string{&f.ref, &f.doomedRef} {
			var ref map[string]any
			ok(t, admin, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": f.task, "type": "repo",
				"url": "https://example.com/repo", "title": "Repo"}, &ref)
			*r = ref["uuid"].(string)
		}

		// Three users, each owning an agent that holds every permission bit.
		role := map[string]*mcpsdk.ClientSession{}
		for _, r := range []string{"viewer", "editor", "outsider"} {
			u, s := e.userAgent(r+"@example.com", perm.AdminAgent)
			role[r] = s
			if r != "outsider" {
				for _, p := range []string{f.p, f.q} {
					_, err := e.st.SetProjectMember(ctx, e.company, p, u, r)
					require.NoError(t, err)
				}
			}
		}
		var me CheckinOut
		ok(t, role["editor"], "chorus_checkin", map[string]any{}, &me)
		f.editorAgent = me.Agent.UUID
		f.user = e.owner

		cases := roleCases(f)
		var table []string
		for _, en := range toolTable() {
			name := en.spec().Name
			table = append(table, name)
			_, listed := cases[name]
			require.True(t, listed, "%s is not in roleCases: say which gate it has", name)
		}
		require.Len(t, cases, len(table), "roleCases names a tool the table does not have")

		answer := func(s *mcpsdk.ClientSession, name string, args map[string]any) (string, bool) {
			if args == nil {
				args = map[string]any{}
			}
			res := call(t, s, name, args)
			return text(res), res.IsError
		}
		// The viewer and the outsider first: the gate refuses them before anything changes.
		for _, name := range table {
			c := cases[name]
			if c.gate == company {
				continue
			}
			msg, isErr := answer(role["outsider"], name, c.args)
			require.True(t, isErr, "%s: a non-member got %s", name, msg)
			require.True(t, strings.HasSuffix(msg, "not found"), "%s: a non-member must find nothing, got %q", name, msg)
			require.True(t, accessRefusal(msg), "%s: %q is not the gate's answer", name, msg)

			msg, isErr = answer(role["viewer"], name, c.args)
			switch c.gate {
			case viewerGate:
				require.False(t, isErr, "%s: a viewer may read: %s", name, msg)
			case editorGate:
				require.True(t, isErr, "%s: a viewer changed something: %s", name, msg)
				require.True(t, strings.HasSuffix(msg, "Insufficient project access") && accessRefusal(msg), "%s: %q", name, msg)
			case manageGate:
				require.Equal(t, "Only project admins can manage this project", msg, name)
			}
		}
		// Then the editor, in table order: past every gate (its calls may still meet guards).
		for _, name := range table {
			c := cases[name]
			if c.gate == company {
				continue
			}
			msg, isErr := answer(role["editor"], name, c.args)
			switch c.gate {
			case manageGate:
				require.Equal(t, "Only project admins can manage this project", msg, "%s: manage_project is admin on a private project", name)
			default:
				require.False(t, isErr && accessRefusal(msg), "%s: the editor was refused by the gate: %s", name, msg)
			}
		}
		// Session check-ins: each role checks one of its own sessions in to the task.
		for r, want := range map[string]string{"outsider": "Task not found", "viewer": "Insufficient project access", "editor": ""} {
			var sess struct {
				UUID string `json:"uuid"`
			}
			ok(t, role[r], "chorus_create_session", map[string]any{"name": r + " session"}, &sess)
			for _, tool := range []string{"chorus_session_checkin_task", "chorus_session_checkout_task"} {
				msg, isErr := answer(role[r], tool, map[string]any{"sessionUuid": sess.UUID, "taskUuid": f.task})
				if want == "" {
					require.False(t, isErr && accessRefusal(msg), "%s: the editor was refused by the gate: %s", tool, msg)
				} else {
					require.Equal(t, want, msg, "%s as %s", tool, r)
				}
			}
		}
		// The moved idea went to Q, where the editor is editor and the viewer still only viewer.
		msg, _ := answer(role["viewer"], "chorus_get_idea", map[string]any{"ideaUuid": f.movingIdea})
		require.Contains(t, msg, f.q)
		e.requireAgreement()
	})
}
