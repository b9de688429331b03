package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// xss is agent-controlled text that would run or inject markup if a page wrote it unescaped:
// a script, an attribute break-out with an event handler, and a javascript: link.
const xss = `<script>window.__pwned=1</script>"><img src=x onerror=window.__pwned=1>'><svg onload=window.__pwned=1>`

// Every text an agent writes (project, idea, proposal, draft, task, criterion, report, comment,
// question, option and agent names, Markdown documents) reaches the pages escaped or sanitized:
// no page carries the markup, an event handler or a javascript: URL, the dependency graph's
// SVG included; every page has the CSP header.
func TestAgentTextIsEscapedOnEveryPage(t *testing.T) {
	s := newStack(t, "sqlite")
	admin := s.connect(s.adminKey)
	pm := s.agent("PM "+xss, s.admin, "pm_agent")
	dev := s.agent("Dev "+xss, s.admin, "developer_agent")
	project := str(s.call(admin, "chorus_admin_create_project", map[string]any{"name": "P " + xss, "description": xss}), "uuid")
	asked := str(s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "I " + xss, "content": xss}), "uuid")
	s.call(pm, "chorus_claim_idea", map[string]any{"ideaUuid": asked})
	s.call(pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": asked, "depth": "minimal",
		"questions": []any{map[string]any{"id": "q1", "text": "Q " + xss, "category": "scope", "options": []any{
			map[string]any{"id": "o1", "label": "O " + xss}, map[string]any{"id": "o2", "label": "plain"}}}}})
	idea := str(s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "J " + xss}), "uuid")
	s.call(pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea})
	s.call(pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": idea, "reason": xss})
	proposal := str(s.call(pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "R " + xss,
		"description": xss, "inputType": "idea", "inputUuids": []string{idea}}), "uuid")
	s.call(pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": proposal, "type": "prd", "title": "D " + xss,
		"content": "# H\n\n" + xss + "\n\n[link](javascript:window.__pwned=1)\n\n<a href=\"javascript:x\">a</a>\n"})
	first := str(s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": "T1 " + xss,
		"description": xss, "acceptanceCriteriaItems": []map[string]any{{"description": "C " + xss}}}), "draftUuid")
	s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": "T2 " + xss,
		"dependsOnDraftUuids": []string{first}, "acceptanceCriteriaItems": []map[string]any{{"description": "C2"}}})
	s.call(pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal})
	pending := str(s.call(pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "S " + xss,
		"inputType": "idea", "inputUuids": []string{idea}}), "uuid")
	s.call(pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": pending, "type": "prd", "title": "E " + xss,
		"content": xss})
	s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": pending, "title": "T3 " + xss,
		"acceptanceCriteriaItems": []map[string]any{{"description": "C3"}}})
	s.call(pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": pending})
	task := str(s.call(admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}), "materializedTasks.0.taskUuid")
	s.call(dev, "chorus_claim_task", map[string]any{"taskUuid": task})
	s.call(dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"})
	s.call(dev, "chorus_report_work", map[string]any{"taskUuid": task, "report": "W " + xss})
	s.call(dev, "chorus_submit_for_verify", map[string]any{"taskUuid": task, "summary": "S " + xss})
	s.call(dev, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": task,
		"content": "K " + xss + " @[Ada Admin](user:" + s.admin.UUID + ")"})
	var pmUUID string
	require.NoError(t, s.st.DB.NewSelect().Table("agents").Column("uuid").Where("name LIKE 'PM %'").Scan(context.Background(), &pmUUID))

	c, _ := s.httpSignIn(s.admin)
	for _, path := range []string{"/console/", "/console/projects/" + project, "/console/projects/" + project + "/ideas",
		"/console/ideas/" + asked, "/console/ideas/" + idea, "/console/ideas/" + idea + "/graph", "/console/proposals/" + proposal,
		"/console/proposals/" + pending, "/console/review", "/console/verify", "/console/tasks/" + task,
		"/console/comments/task/" + task, "/console/inbox", "/console/agents", "/console/agents/" + pmUUID,
		"/console/projects/" + project + "/settings"} {
		res, err := c.Get(s.url + path)
		require.NoError(t, err)
		body := readAll(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		assert.NotEmpty(t, res.Header.Get("Content-Security-Policy"), path)
		lower := strings.ToLower(body)
		// Escaped, the text reads "&lt;img src=x onerror=...": only markup itself is looked for.
		for _, bad := range []string{"<script>window", "<img src=x", "<svg onload", "javascript:"} {
			assert.False(t, strings.Contains(lower, bad), "%s carries %q", path, bad)
		}
		assert.Contains(t, body, "&lt;script&gt;", "%s shows the agent's text, escaped", path)
	}
	_ = store.NewUUID
}
