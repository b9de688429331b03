package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// prdDraft is a PRD document draft as an agent might write it: a table, a task list, and things
// that must never run in a reviewer's browser.
const prdDraft = "## Goal\n\nShip the new checkout to every shop without downtime; the table lists the steps.\n\n" +
	"| Step | Owner |\n|---|---|\n| Schema | Backend |\n| API | Platform |\n\n- [x] agreed\n- [ ] rolled out\n\n" +
	"<script>window.__pwned = true</script>\n\n<img src=\"x.png\" onerror=\"window.__pwned = true\">\n\n" +
	"[details](javascript:window.__pwned=true)\n"

// reviewFixture is a pending proposal built by agents over MCP, in a project of the stack.
type reviewFixture struct {
	project, proposal, idea string
	pm                      *mcpclient.Agent
}

// pendingProposal has a PM agent (owned by the admin) create an idea in a new project of
// visibility, claim it, skip its elaboration, propose a PRD and two task drafts ("API" depends
// on "Schema", each with acceptance criteria) and submit it.
func (s *stack) pendingProposal(visibility string) reviewFixture {
	s.t.Helper()
	admin := s.connect(s.adminKey)
	project := s.call(admin, "chorus_admin_create_project", map[string]any{"name": "Checkout", "visibility": visibility})["uuid"].(string)
	pm := s.agent("PM", s.admin, perm.PMAgent)
	idea := s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "One-page checkout"})["uuid"].(string)
	s.call(pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea})
	s.call(pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": idea, "reason": "The shops asked for exactly this."})
	proposal := s.call(pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Checkout v2",
		"description": "Replace the checkout", "inputType": "idea", "inputUuids": []string{idea}})["uuid"].(string)
	s.call(pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": proposal, "type": "prd", "title": "Checkout PRD", "content": prdDraft})
	schema := s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": "Schema",
		"description": "Tables for carts", "priority": "high",
		"acceptanceCriteriaItems": []map[string]any{{"description": "Carts table migrated"}}})["draftUuid"].(string)
	s.call(pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": "API",
		"description": "Cart endpoints", "priority": "medium", "dependsOnDraftUuids": []string{schema},
		"acceptanceCriteriaItems": []map[string]any{{"description": "POST /carts answers 201"}, {"description": "Docs updated", "required": false}}})
	require.Equal(s.t, "pending", s.call(pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal})["status"])
	return reviewFixture{project: project, proposal: proposal, idea: idea, pm: pm}
}

// proposalStatus is the proposal's status as the tool reads it.
func (s *stack) proposalStatus(f reviewFixture) string {
	s.t.Helper()
	return s.call(f.pm, "chorus_get_proposal", map[string]any{"proposalUuid": f.proposal})["status"].(string)
}

// proposalTasks are the titles of the tasks of the proposal, read with chorus_list_tasks.
func (s *stack) proposalTasks(f reviewFixture) []string {
	s.t.Helper()
	out := s.call(f.pm, "chorus_list_tasks", map[string]any{"projectUuid": f.project, "proposalUuids": []string{f.proposal}})
	var titles []string
	for _, t := range out["tasks"].([]any) {
		titles = append(titles, t.(map[string]any)["title"].(string))
	}
	return titles
}

// activities are the proposal's activity rows with action.
func (s *stack) activities(target, action string) []store.Activity {
	s.t.Helper()
	var rows []store.Activity
	require.NoError(s.t, s.st.DB.NewSelect().Model(&rows).Where("target_uuid = ?", target).Where("action = ?", action).Scan(context.Background()))
	return rows
}

// The person's review journey: the queue lists the proposal with its project, idea, creator,
// drafts and validation; the page renders the PRD's Markdown (table kept, script, onerror and
// javascript: link gone), the task drafts with criteria and dependencies; a reject without a
// note shows the tool's refusal beside the note and changes nothing; approve makes the tasks,
// recorded as the person's act.
func TestReviewApproveAProposalAndSeeItsTasks(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.pendingProposal("private")
	b := s.newBrowser()
	b.signIn(s.link(s.admin))

	b.open("/console/review")
	row := b.text("table.review-queue tbody tr")
	for _, want := range []string{"Checkout v2", "Checkout", "One-page checkout", "PM", "1 document, 2 tasks", "passes"} {
		require.Contains(t, row, want)
	}
	b.click("table.review-queue a[href^='/console/proposals/']")
	require.Contains(t, b.location(), "/console/proposals/"+f.proposal)
	require.True(t, eval[bool](b, `document.querySelectorAll(".markdown table td").length === 4`), "the GFM table is rendered")
	require.True(t, eval[bool](b, `document.querySelectorAll(".markdown input[type=checkbox]").length === 2`), "the task list is rendered")
	require.True(t, eval[bool](b, `document.querySelectorAll("main script, [onerror], a[href^='javascript']").length === 0 && !window.__pwned`),
		"script, onerror and javascript: link are stripped")
	page := b.page()
	for _, want := range []string{"Carts table migrated", "POST /carts answers 201", "Docs updated (optional)", "Depends on: Schema",
		"idea “One-page checkout”", "Proposal should contain at least one tech design document draft"} {
		require.Contains(t, page, want)
	}

	// Reject without a note: the use case's refusal beside the note field; nothing changed.
	b.click("#reject")
	require.Equal(t, "Input validation error: reviewNote is required to reject a proposal", b.text("#reject-note-error"))
	require.Equal(t, "pending", s.proposalStatus(f))
	require.Empty(t, s.activities(f.proposal, "rejected_to_draft"))

	b.fill("#approve-note", "Ship it")
	b.click("#approve")
	b.waitText("Proposal approved: 2 tasks and 1 document made from its drafts.")
	require.Equal(t, "approved", b.text("#proposal-status"))
	require.Contains(t, b.text("#approved-tasks"), "Schema")
	require.Contains(t, b.text("#approved-tasks"), "API")
	require.Equal(t, s.url+"/console/projects/"+f.project, eval[string](b, `document.querySelector("#board-link").href`))
	require.True(t, eval[bool](b, `document.querySelectorAll(".markdown table").length === 1 && document.querySelectorAll("main script").length === 0`),
		"the approved proposal's document is rendered, sanitized")

	require.Equal(t, "approved", s.proposalStatus(f))
	require.ElementsMatch(t, []string{"Schema", "API"}, s.proposalTasks(f))
	acts := s.activities(f.proposal, "approved")
	require.Len(t, acts, 1)
	require.Equal(t, "user", acts[0].ActorType)
	require.Equal(t, s.admin.UUID, acts[0].ActorUUID)

	// The tasks are on the project's board.
	b.click("#board-link")
	b.waitText("Schema")
	require.Contains(t, b.page(), "API")
}

// postForm posts a proposal decision with the page's CSRF token and requestId.
func postForm(t *testing.T, c *http.Client, to string, v url.Values) (int, string) {
	t.Helper()
	res, err := c.PostForm(to, v)
	require.NoError(t, err)
	body := readAll(t, res)
	return res.StatusCode, body
}

// A double submit of approve (the same form, so the same requestId, posted twice) approves once
// and makes the tasks once. Before it, close with a blank note is refused with the tool's
// message beside the note field and changes nothing.
func TestReviewDoubleSubmitAppliesOnce(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.pendingProposal("public")
	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/proposals/" + f.proposal)
	require.NoError(t, err)
	html := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	form := url.Values{"_csrf": {formValue(html, "_csrf")}, "requestId": {formValue(html, "requestId")}}
	require.NotEmpty(t, form.Get("requestId"))

	status, body := postForm(t, c, s.url+"/console/proposals/"+f.proposal+"/close",
		url.Values{"_csrf": form["_csrf"], "requestId": {"close-1"}, "reviewNote": {"   "}})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Contains(t, body, `<span class="field-error" id="close-note-error">Input validation error: reviewNote is required to close a proposal</span>`)
	require.Equal(t, "pending", s.proposalStatus(f))

	for i := 0; i < 2; i++ {
		status, body = postForm(t, c, s.url+"/console/proposals/"+f.proposal+"/approve", form)
		require.Equal(t, http.StatusOK, status, "post %d: redirected to the proposal\n%s", i+1, body)
		require.Contains(t, body, `id="proposal-status">approved<`)
	}
	require.Len(t, s.proposalTasks(f), 2, "tasks made once")
	require.Len(t, s.activities(f.proposal, "approved"), 1, "approved once")
}

// A viewer of a private project reads the proposal but cannot decide: no forms, and a posted
// approve is refused ("Insufficient project access") and changes nothing.
func TestReviewViewerCannotAct(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.pendingProposal("private")
	viewer := s.user("vic@example.com", store.RoleMember)
	s.call(s.connect(s.adminKey), "chorus_admin_add_project_member",
		map[string]any{"projectUuid": f.project, "userUuid": viewer.UUID, "role": "viewer"})
	c, _ := s.httpSignIn(viewer)

	res, err := c.Get(s.url + "/console/review")
	require.NoError(t, err)
	require.Contains(t, readAll(t, res), "Checkout v2", "a viewer sees what waits")
	res, err = c.Get(s.url + "/console/proposals/" + f.proposal)
	require.NoError(t, err)
	html := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, html, "deciding on it needs editor access")
	require.NotContains(t, html, `id="approve-form"`)

	for _, action := range []string{"approve", "reject", "close"} {
		status, body := postForm(t, c, s.url+"/console/proposals/"+f.proposal+"/"+action,
			url.Values{"_csrf": {formValue(html, "_csrf")}, "requestId": {"viewer-" + action}, "reviewNote": {"no"}})
		require.Equal(t, http.StatusForbidden, status, action)
		require.Contains(t, body, "Insufficient project access", action)
	}
	require.Equal(t, "pending", s.proposalStatus(f))
	require.Empty(t, s.proposalTasks(f))
}

// A person outside a private project gets the tool's "Proposal not found" (404) for its proposal,
// reading or deciding, and the queue does not list it.
func TestReviewOutsiderGetsNotFound(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.pendingProposal("private")
	outsider := s.user("olga@example.com", store.RoleMember)
	var out map[string]any
	err := s.agent("Olga's agent", outsider, perm.PMAgent).Call(context.Background(), "chorus_get_proposal",
		map[string]any{"proposalUuid": f.proposal}, &out)
	require.ErrorContains(t, err, "Proposal not found", "the tool's answer")

	c, _ := s.httpSignIn(outsider)
	res, err := c.Get(s.url + "/console/proposals/" + f.proposal)
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "Proposal not found")
	require.NotContains(t, body, "Checkout v2")

	res, err = c.Get(s.url + "/console/review")
	require.NoError(t, err)
	body = readAll(t, res)
	require.NotContains(t, body, "Checkout v2")
	csrf := formValue(body, "_csrf")
	status, body := postForm(t, c, s.url+"/console/proposals/"+f.proposal+"/approve", url.Values{"_csrf": {csrf}, "requestId": {"x"}})
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, "Proposal not found")
	require.Equal(t, "pending", s.proposalStatus(f))
	require.False(t, strings.Contains(body, "Checkout"), "nothing of the proposal shows")
}

// Reject with a note sends the proposal back to draft, close with a note ends it: each is the
// tool's use case, recorded as the person's act (actor type "user", their uuid).
func TestReviewRejectThenClose(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.pendingProposal("public")
	c, _ := s.httpSignIn(s.admin)
	decide := func(action, note string) (int, string) {
		res, err := c.Get(s.url + "/console/proposals/" + f.proposal)
		require.NoError(t, err)
		html := readAll(t, res)
		return postForm(t, c, s.url+"/console/proposals/"+f.proposal+"/"+action,
			url.Values{"_csrf": {formValue(html, "_csrf")}, "requestId": {action + "-1"}, "reviewNote": {note}})
	}
	status, body := decide("reject", "Add a tech design")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Proposal rejected: it is back in draft")
	require.Equal(t, "draft", s.proposalStatus(f))
	acts := s.activities(f.proposal, "rejected_to_draft")
	require.Len(t, acts, 1)
	require.Equal(t, []string{"user", s.admin.UUID}, []string{acts[0].ActorType, acts[0].ActorUUID})

	status, body = decide("close", "too late")
	require.Equal(t, http.StatusConflict, status, "a draft is not closed")
	require.Contains(t, body, "Can only close pending Proposals, current status: draft")
	s.call(f.pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": f.proposal})
	status, body = decide("close", "Superseded by the new checkout")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Proposal closed for good.")
	require.Equal(t, "closed", s.proposalStatus(f))
	acts = s.activities(f.proposal, "closed")
	require.Len(t, acts, 1)
	require.Equal(t, []string{"user", s.admin.UUID}, []string{acts[0].ActorType, acts[0].ActorUUID})
	require.Empty(t, s.proposalTasks(f))
}
