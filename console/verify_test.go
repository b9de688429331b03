package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// verifyFixture is work agents did over MCP: a private project with a task in to_verify (two
// criteria, self-checked, reported on, submitted), a second submitted task with one criterion,
// and an open task nothing depends on yet.
type verifyFixture struct {
	pm, dev           *mcpclient.Agent
	project           string
	task, other, open string
	criteria          []string // the task's criteria, in order
}

// toVerify has the agents produce the fixture through MCP, as they would.
func (s *stack) toVerify() verifyFixture {
	s.t.Helper()
	f := verifyFixture{pm: s.connect(s.adminKey), dev: s.agent("Dev Agent", s.admin, perm.DeveloperAgent)}
	f.project = s.call(f.pm, "chorus_admin_create_project", map[string]any{"name": "Checkout revamp", "visibility": "private"})["uuid"].(string)
	created := s.call(f.pm, "chorus_create_tasks", map[string]any{"projectUuid": f.project, "tasks": []map[string]any{
		{"title": "Ship the login form", "description": "Email and password, with errors inline.", "acceptanceCriteriaItems": []map[string]any{
			{"description": "A wrong password shows an error"}, {"description": "The form submits with Enter"}}},
		{"title": "Write the release note", "acceptanceCriteriaItems": []map[string]any{{"description": "It names the new form"}}},
		{"title": "Design the session schema", "acceptanceCriteriaItems": []map[string]any{{"description": "Reviewed"}}},
	}})["tasks"].([]any)
	uuidOf := func(i int) string { return created[i].(map[string]any)["uuid"].(string) }
	f.task, f.other, f.open = uuidOf(0), uuidOf(1), uuidOf(2)
	for _, id := range []string{f.task, f.other} {
		s.call(f.dev, "chorus_claim_task", map[string]any{"taskUuid": id})
		s.call(f.dev, "chorus_update_task", map[string]any{"taskUuid": id, "status": "in_progress"})
		var items []map[string]any
		for _, c := range s.call(f.dev, "chorus_get_task", map[string]any{"taskUuid": id})["acceptanceCriteriaItems"].([]any) {
			cu := c.(map[string]any)["uuid"].(string)
			if id == f.task {
				f.criteria = append(f.criteria, cu)
			}
			items = append(items, map[string]any{"uuid": cu, "devStatus": "passed", "devEvidence": "tests pass: " + cu[:8]})
		}
		s.call(f.dev, "chorus_report_criteria_self_check", map[string]any{"taskUuid": id, "criteria": items})
		require.NoError(s.t, f.dev.Call(context.Background(), "chorus_report_work",
			map[string]any{"taskUuid": id, "report": "Implemented it; the unit tests cover both paths."}, nil))
		s.call(f.dev, "chorus_submit_for_verify", map[string]any{"taskUuid": id, "summary": "Ready: see the report."})
	}
	return f
}

// verifyState is a task as the tool reads it: its status and each criterion's verification mark.
func (s *stack) verifyState(a *mcpclient.Agent, task string) (status string, marks []string) {
	s.t.Helper()
	v := s.call(a, "chorus_get_task", map[string]any{"taskUuid": task})
	for _, c := range v["acceptanceCriteriaItems"].([]any) {
		marks = append(marks, c.(map[string]any)["status"].(string))
	}
	return v["status"].(string), marks
}

// verifyActivities are a task's activity rows of one action.
func (s *stack) verifyActivities(task, action string) []store.Activity {
	s.t.Helper()
	var rows []store.Activity
	require.NoError(s.t, s.st.DB.NewSelect().Model(&rows).Where("target_uuid = ?", task).Where("action = ?", action).
		Scan(context.Background()))
	return rows
}

// verifyTick clicks a radio button or checkbox (no page load follows).
func (b *browser) verifyTick(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(sel))
}

// A person verifies a task criterion by criterion: the queue lists it, its page shows the
// agent's report, summary and self-checks; with one criterion failed, verify is refused in the
// use case's words and changes nothing; with both passed it is done, and the verification is
// recorded as the person's.
func TestVerifyATaskCriterionByCriterion(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.toVerify()
	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/verify")
	b.waitText("Ship the login form")
	queue := b.page()
	for _, want := range []string{"Checkout revamp", "Dev Agent", "0 of 2 passed", "self-check: 2 of 2 passed", "Write the release note"} {
		require.Contains(t, queue, want)
	}
	require.Less(t, strings.Index(queue, "Ship the login form"), strings.Index(queue, "Write the release note"), "oldest submission first")
	require.NotContains(t, queue, "Design the session schema", "an open task does not wait for verification")

	b.click(`a[href="/console/tasks/` + f.task + `"]`)
	b.waitText("Implemented it; the unit tests cover both paths.")
	page := b.page()
	for _, want := range []string{"Ready: see the report.", "tests pass: " + f.criteria[0][:8], "A wrong password shows an error",
		"Email and password, with errors inline.", "Dev Agent"} {
		require.Contains(t, page, want)
	}

	b.verifyTick("#c0-passed")
	b.verifyTick("#c1-failed")
	b.fill("#c1-note", "Enter does nothing in Safari")
	b.click("#save-marks")
	b.waitText("Marks saved.")
	status, marks := s.verifyState(f.pm, f.task)
	require.Equal(t, "to_verify", status)
	require.Equal(t, []string{"passed", "failed"}, marks)
	require.Contains(t, b.page(), "Enter does nothing in Safari")

	b.click("#verify")
	const refusal = "Cannot verify task: Not all required acceptance criteria are passed. Required: 2, Passed: 1, Failed: 1, Pending: 0."
	b.waitText(refusal)
	require.Contains(t, b.text(".error"), refusal, "the use case's refusal, at the top")
	status, marks = s.verifyState(f.pm, f.task)
	require.Equal(t, "to_verify", status, "a refused verify changes nothing")
	require.Equal(t, []string{"passed", "failed"}, marks)

	b.verifyTick("#c1-passed")
	b.click("#save-marks")
	b.waitText("Marks saved.")
	b.click("#verify")
	b.waitText("Task verified")
	require.Equal(t, "done", b.text("#task-status"))
	status, _ = s.verifyState(f.pm, f.task)
	require.Equal(t, "done", status)
	verified := s.verifyActivities(f.task, "verified")
	require.Len(t, verified, 1)
	assert.Equal(t, "user", verified[0].ActorType)
	assert.Equal(t, s.admin.UUID, verified[0].ActorUUID)
	crit := s.call(f.pm, "chorus_get_task", map[string]any{"taskUuid": f.task})["acceptanceCriteriaItems"].([]any)[1].(map[string]any)
	assert.Equal(t, "user", crit["markedByType"])
	assert.Equal(t, s.admin.UUID, crit["markedBy"])

	b.open("/console/verify")
	b.waitText("Write the release note")
	require.NotContains(t, b.page(), "Ship the login form", "a verified task leaves the queue")
}

// verifyPost sends a console form with the session's CSRF token and returns the final status and page.
func verifyPost(t *testing.T, c *http.Client, csrf, to string, form url.Values) (int, string) {
	t.Helper()
	form.Set("_csrf", csrf)
	res, err := c.PostForm(to, form)
	require.NoError(t, err)
	return res.StatusCode, readAll(t, res)
}

// verifyGet reads a console page.
func verifyGet(t *testing.T, c *http.Client, to string) (int, string) {
	t.Helper()
	res, err := c.Get(to)
	require.NoError(t, err)
	return res.StatusCode, readAll(t, res)
}

// A form submitted twice (the same requestId) applies once: the second mark does not undo a
// change made in between, and the second verify (or close) answers as the first did, with one
// activity, the person's.
func TestVerifyDoubleSubmitAppliesOnce(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.toVerify()
	c, _ := s.httpSignIn(s.admin)
	code, html := verifyGet(t, c, s.url+"/console/tasks/"+f.task)
	require.Equal(t, http.StatusOK, code)
	csrf := formValue(html, "_csrf")
	marks := url.Values{"requestId": {store.NewUUID()}, "criteria[0].uuid": {f.criteria[0]}, "criteria[0].status": {"passed"},
		"criteria[1].uuid": {f.criteria[1]}, "criteria[1].status": {"passed"}}
	code, html = verifyPost(t, c, csrf, s.url+"/console/tasks/"+f.task+"/criteria", marks)
	require.Equal(t, http.StatusOK, code, html)
	require.Contains(t, html, "Marks saved.")
	s.call(f.pm, "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": f.task,
		"criteria": []map[string]any{{"uuid": f.criteria[1], "status": "failed"}}})
	code, _ = verifyPost(t, c, csrf, s.url+"/console/tasks/"+f.task+"/criteria", marks)
	require.Equal(t, http.StatusOK, code)
	_, got := s.verifyState(f.pm, f.task)
	require.Equal(t, []string{"passed", "failed"}, got, "the repeated form did not apply again")

	s.call(f.pm, "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": f.task,
		"criteria": []map[string]any{{"uuid": f.criteria[1], "status": "passed"}}})
	verify := url.Values{"requestId": {store.NewUUID()}}
	for range 2 {
		code, html = verifyPost(t, c, csrf, s.url+"/console/tasks/"+f.task+"/verify", verify)
		require.Equal(t, http.StatusOK, code, html)
		require.Contains(t, html, "Task verified")
	}
	status, _ := s.verifyState(f.pm, f.task)
	require.Equal(t, "done", status)
	require.Len(t, s.verifyActivities(f.task, "verified"), 1, "verified once")

	closing := url.Values{"requestId": {store.NewUUID()}}
	for range 2 {
		code, html = verifyPost(t, c, csrf, s.url+"/console/tasks/"+f.other+"/close", closing)
		require.Equal(t, http.StatusOK, code, html)
		require.Contains(t, html, "Task closed.")
	}
	status, _ = s.verifyState(f.pm, f.other)
	require.Equal(t, "closed", status)
	closed := s.verifyActivities(f.other, "closed")
	require.Len(t, closed, 1, "closed once")
	assert.Equal(t, [2]string{"user", s.admin.UUID}, [2]string{closed[0].ActorType, closed[0].ActorUUID})
}

// Reopening a task with an unresolved dependency is refused without force, in the use case's
// words beside the force box, naming the blocker, and changes nothing; with force it is back in
// progress, recorded as the person's forced change.
func TestVerifyReopenForcePastBlockers(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.toVerify()
	s.call(f.pm, "chorus_update_task", map[string]any{"taskUuid": f.task, "addDependsOn": []string{f.open}})
	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/tasks/" + f.task)
	b.waitText("Blocked by (1)")
	b.click("#reopen")
	const refusal = "Task is blocked by 1 unresolved dependency(ies). Use force=true to bypass."
	b.waitText(refusal)
	require.Contains(t, b.text(".reopen .field-error"), refusal, "beside the force box")
	require.Contains(t, b.text(".blockers"), "Design the session schema")
	status, _ := s.verifyState(f.pm, f.task)
	require.Equal(t, "to_verify", status, "a refused reopen changes nothing")

	b.verifyTick("#force")
	b.click("#reopen")
	b.waitText("Task reopened past its unresolved dependencies")
	status, _ = s.verifyState(f.pm, f.task)
	require.Equal(t, "in_progress", status)
	forced := s.verifyActivities(f.task, "force_status_change")
	require.Len(t, forced, 1)
	assert.Equal(t, "user", forced[0].ActorType)
	assert.Equal(t, s.admin.UUID, forced[0].ActorUUID)
}

// A viewer of the private project reads the task but cannot act: every form's post is refused
// "Insufficient project access" and changes nothing. A person outside it gets "Task not found"
// (404), for the page and the actions alike, and the queue does not list it.
func TestVerifyViewerCannotActOutsiderGetsNotFound(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.toVerify()
	viewer, outsider := s.user("vera@example.com", store.RoleMember), s.user("otto@example.com", store.RoleMember)
	_, err := s.st.SetProjectMember(context.Background(), s.company, f.project, viewer.UUID, "viewer")
	require.NoError(t, err)

	c, _ := s.httpSignIn(viewer)
	code, html := verifyGet(t, c, s.url+"/console/verify")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, html, "Ship the login form", "a viewer sees the queue")
	code, html = verifyGet(t, c, s.url+"/console/tasks/"+f.task)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, html, "needs editor access")
	require.NotContains(t, html, `id="verify"`, "no actions offered")
	csrf := formValue(html, "_csrf")
	s.call(f.pm, "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": f.task, "criteria": []map[string]any{
		{"uuid": f.criteria[0], "status": "passed"}, {"uuid": f.criteria[1], "status": "passed"}}})
	for _, action := range []url.Values{
		{"requestId": {store.NewUUID()}, "criteria[0].uuid": {f.criteria[0]}, "criteria[0].status": {"failed"}},
		{"requestId": {store.NewUUID()}},
	} {
		to := s.url + "/console/tasks/" + f.task + "/verify"
		if action.Has("criteria[0].uuid") {
			to = s.url + "/console/tasks/" + f.task + "/criteria"
		}
		code, html = verifyPost(t, c, csrf, to, action)
		require.Equal(t, http.StatusForbidden, code)
		require.Contains(t, html, "Insufficient project access")
	}
	status, marks := s.verifyState(f.pm, f.task)
	require.Equal(t, "to_verify", status, "the viewer's verify changed nothing")
	require.Equal(t, []string{"passed", "passed"}, marks, "the viewer's mark changed nothing")

	o, _ := s.httpSignIn(outsider)
	code, html = verifyGet(t, o, s.url+"/console/tasks/"+f.task)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, html, "Task not found")
	code, html = verifyGet(t, o, s.url+"/console/verify")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, html, "Ship the login form")
	code, html = verifyPost(t, o, formValue(html, "_csrf"), s.url+"/console/tasks/"+f.task+"/verify", url.Values{"requestId": {store.NewUUID()}})
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, html, "Task not found")
	status, _ = s.verifyState(f.pm, f.task)
	require.Equal(t, "to_verify", status)
}

// Bad input in the criteria form (a status value or a criterion uuid tampered with) gets the
// tool's field-named refusal, shown beside that criterion, and changes nothing.
func TestVerifyBadInputShowsTheFieldError(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.toVerify()
	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/tasks/" + f.task)
	b.waitText("Ship the login form")

	b.verifyTick("#c1-passed")
	eval[bool](b, `(document.getElementById("c1-passed").value = "done", true)`)
	b.click("#save-marks")
	tool := f.pm.Call(context.Background(), "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": f.task,
		"criteria": []map[string]any{{"uuid": f.criteria[1], "status": "done"}}}, nil)
	var te *mcpclient.ToolError
	require.True(t, errors.As(tool, &te), "the tool refuses it too: %v", tool)
	require.Equal(t, `Input validation error: criteria[0].status must be one of passed, failed, got "done"`, te.Text)
	b.waitText(te.Text)
	require.Contains(t, b.text("#criterion-1 .field-error"), te.Text, "beside the criterion")

	stranger := store.NewUUID()
	b.verifyTick("#c0-failed")
	eval[bool](b, `(document.querySelector('input[name="criteria[0].uuid"]').value = "`+stranger+`", true)`)
	b.click("#save-marks")
	want := "Criterion " + stranger + " does not belong to task " + f.task
	b.waitText(want)
	require.Contains(t, b.text("#criterion-0 .field-error"), want, "beside the criterion")
	status, marks := s.verifyState(f.pm, f.task)
	require.Equal(t, "to_verify", status)
	require.Equal(t, []string{"pending", "pending"}, marks, "bad input changed nothing")
}
