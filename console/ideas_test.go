package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
)

// ideaFixture is a project with a parent idea and a child idea that a PM agent holds, with one
// pending elaboration round of two questions: "scope" (small | large) and "audience" (shops |
// buyers).
type ideaFixture struct {
	pm                       *mcpclient.Agent
	project, parent, idea    string
	round                    string
	projectName, parentTitle string
}

// newIdeaFixture builds an ideaFixture in a project of the given visibility, created by a PM
// agent the admin owns (so the admin is the project's admin).
func newIdeaFixture(s *stack, visibility string) ideaFixture {
	f := ideaFixture{pm: s.agent("Planner", s.admin, "pm"), projectName: "Checkout revamp", parentTitle: "Payments"}
	f.project = s.call(f.pm, "chorus_admin_create_project", map[string]any{"name": f.projectName, "visibility": visibility})["uuid"].(string)
	f.parent = s.call(f.pm, "chorus_pm_create_idea", map[string]any{"projectUuid": f.project, "title": f.parentTitle,
		"isContainer": true})["uuid"].(string)
	f.idea = s.call(f.pm, "chorus_pm_create_idea", map[string]any{"projectUuid": f.project, "title": "One-click pay",
		"content": "Let returning buyers pay with one click.", "parentUuid": f.parent})["uuid"].(string)
	s.call(f.pm, "chorus_claim_idea", map[string]any{"ideaUuid": f.idea})
	f.round = s.call(f.pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": f.idea, "depth": "standard",
		"questions": []any{
			map[string]any{"id": "scope", "text": "How far should it go?", "category": "scope", "options": []any{
				map[string]any{"id": "small", "label": "Cards on file only"}, map[string]any{"id": "large", "label": "Every payment method"}}},
			map[string]any{"id": "audience", "text": "Who is it for?", "category": "user_scenario", "options": []any{
				map[string]any{"id": "shops", "label": "Shops"}, map[string]any{"id": "buyers", "label": "Buyers"}}},
		}})["uuid"].(string)
	return f
}

// elaboration is chorus_get_elaboration's answer for the fixture's idea, as the agent reads it.
func (f ideaFixture) elaboration(s *stack) map[string]any {
	return s.call(f.pm, "chorus_get_elaboration", map[string]any{"ideaUuid": f.idea})
}

// answers maps question id to its answer ({selectedOptionId, customText, answeredBy}) or nil.
func answers(el map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range el["rounds"].([]any) {
		for _, q := range r.(map[string]any)["questions"].([]any) {
			qm := q.(map[string]any)
			a, _ := qm["answer"].(map[string]any)
			out[qm["questionId"].(string)] = a
		}
	}
	return out
}

// ideaActivities are the activity rows of an action on an idea.
func ideaActivities(s *stack, idea, action string) []store.Activity {
	var rows []store.Activity
	require.NoError(s.t, s.st.DB.NewSelect().Model(&rows).Where("target_uuid = ?", idea).Where("action = ?", action).
		Scan(context.Background()))
	return rows
}

// A person who followed the README signs in, finds the idea that waits for them in the tracker
// (with its lineage), answers the round with an option and with their own text, and resolves the
// elaboration; the agent reads the answers through MCP, and the activity names the person.
func TestIdeaElaborationAnsweredAndResolvedInTheBrowser(t *testing.T) {
	s := newStack(t, "sqlite")
	f := newIdeaFixture(s, "public")
	bo := s.user("bo@example.com", store.RoleMember)

	b := s.newBrowser()
	b.signIn(s.link(bo))
	b.open("/console/projects/" + f.project + "/ideas")
	b.waitText("One-click pay")
	row := `tr[data-idea="` + f.idea + `"]`
	require.True(t, eval[bool](b, `document.querySelector('`+row+`').classList.contains("waiting")`), "the idea waiting for a person is highlighted")
	require.Contains(t, b.text(row), "human_conduct_required")
	require.Contains(t, b.text(row), "pending_answers")
	require.Contains(t, b.text(row), "Planner")
	require.Contains(t, b.text(row), "from "+f.parentTitle, "lineage: the idea it came from")
	require.Contains(t, b.text(`tr[data-idea="`+f.parent+`"]`), "1 derived")

	b.click(row + " a")
	b.waitText("How far should it go?")
	require.Contains(t, b.text("#elaboration-status"), "pending_answers")
	require.Contains(t, b.page(), f.parentTitle)
	b.do(chromedp.Click(`input[name="option:scope"][value="large"]`))
	b.do(chromedp.Click(`input[name="option:audience"][value=""]`))
	b.fill(`textarea[name="text:audience"]`, "Buyers on mobile")
	require.False(t, eval[bool](b, `!!document.querySelector("#resolve")`), "no resolve while a round is pending")
	b.click("#submit-answers")
	b.waitText("Answers saved.")

	got := answers(f.elaboration(s))
	require.Equal(t, "large", got["scope"]["selectedOptionId"])
	require.Nil(t, got["scope"]["customText"])
	require.Nil(t, got["audience"]["selectedOptionId"])
	require.Equal(t, "Buyers on mobile", got["audience"]["customText"])
	acts := ideaActivities(s, f.idea, "elaboration_answered")
	require.Len(t, acts, 1)
	require.Equal(t, "user", acts[0].ActorType)
	require.Equal(t, bo.UUID, acts[0].ActorUUID)

	b.click("#resolve")
	b.waitText("Elaboration resolved.")
	require.Contains(t, b.text("#elaboration-status"), "resolved")
	require.Contains(t, b.text("#idea-status"), "elaborated")
	el := f.elaboration(s)
	require.Equal(t, "resolved", el["status"])
	resolved := ideaActivities(s, f.idea, "elaboration_resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, bo.UUID, resolved[0].ActorUUID)
	require.Contains(t, b.page(), "Every payment method", "the answered round shows its answer")
}

// ideaPost posts the answer form of the idea's page as c, with fields on top of the page's
// hidden _csrf and requestId (read from html).
func ideaPost(t *testing.T, s *stack, c *http.Client, html, idea, action string, fields url.Values) (*http.Response, string) {
	t.Helper()
	form := url.Values{"_csrf": {formValue(html, "_csrf")}, "requestId": {formValue(html, "requestId")}}
	for k, v := range fields {
		form[k] = v
	}
	res, err := c.PostForm(s.url+"/console/ideas/"+idea+"/"+action, form)
	require.NoError(t, err)
	return res, readAll(t, res)
}

// get fetches a console page as c.
func get(t *testing.T, s *stack, c *http.Client, path string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(s.url + path)
	require.NoError(t, err)
	return res, readAll(t, res)
}

// beside is the part of a page's HTML for a question's fieldset: where its error is shown.
func beside(html, question string) string {
	i := strings.Index(html, `id="q-`+question+`"`)
	if i < 0 {
		return ""
	}
	rest := html[i:]
	return rest[:strings.Index(rest, "</fieldset>")]
}

// Bad input in the form gets the tool's own field-named refusal, beside the field it names, and
// changes nothing: an option that is not one of the question's, and "own answer" without text.
func TestIdeaAnswerBadInputChangesNothing(t *testing.T) {
	s := newStack(t, "sqlite")
	f := newIdeaFixture(s, "public")
	c, _ := s.httpSignIn(s.user("bo@example.com", store.RoleMember))
	_, html := get(t, s, c, "/console/ideas/"+f.idea)

	res, body := ideaPost(t, s, c, html, f.idea, "answers", url.Values{"roundUuid": {f.round}, "question": {"scope", "audience"},
		"option:scope": {"medium"}, "option:audience": {"buyers"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	var toolErr *mcpclient.ToolError
	err := f.pm.Call(context.Background(), "chorus_answer_elaboration", map[string]any{"ideaUuid": f.idea,
		"answers": []any{map[string]any{"questionId": "scope", "selectedOptionId": "medium"}}}, nil)
	require.True(t, errors.As(err, &toolErr), "the tool refuses the same input: %v", err)
	msg := "Failed to answer elaboration: Invalid option &#39;medium&#39; for question &#39;scope&#39;"
	require.Contains(t, toolErr.Text, strings.ReplaceAll(msg, "&#39;", "'"))
	require.Contains(t, beside(body, "scope"), `class="field-error"`)
	require.Contains(t, beside(body, "scope"), msg, "shown beside the field it names")
	require.NotContains(t, beside(body, "audience"), "field-error")
	require.Contains(t, beside(body, "audience"), `value="buyers" checked`, "the form keeps what the person chose")

	res, body = ideaPost(t, s, c, html, f.idea, "answers", url.Values{"roundUuid": {f.round}, "question": {"scope", "audience"},
		"option:scope": {"small"}, "option:audience": {""}, "text:audience": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, beside(body, "audience"), "Question &#39;audience&#39;: custom text is required when no option is selected")
	require.NotContains(t, beside(body, "scope"), "field-error")

	for q, a := range answers(f.elaboration(s)) {
		require.Nil(t, a, "question %s: a refused form answers nothing", q)
	}
	require.Empty(t, ideaActivities(s, f.idea, "elaboration_answered"))
}

// The same form posted twice (its requestId unchanged, as a double click sends it) applies once.
func TestIdeaAnswerDoubleSubmitAppliesOnce(t *testing.T) {
	s := newStack(t, "sqlite")
	f := newIdeaFixture(s, "public")
	c, _ := s.httpSignIn(s.user("bo@example.com", store.RoleMember))
	_, html := get(t, s, c, "/console/ideas/"+f.idea)
	require.NotEmpty(t, formValue(html, "requestId"))
	fields := url.Values{"roundUuid": {f.round}, "question": {"scope"}, "option:scope": {"small"}}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for range 2 {
		res, _ := ideaPost(t, s, c, html, f.idea, "answers", fields)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
	}
	require.Len(t, ideaActivities(s, f.idea, "elaboration_answered"), 1, "applied once")
	got := answers(f.elaboration(s))
	require.Equal(t, "small", got["scope"]["selectedOptionId"])
	require.Nil(t, got["audience"], "the question left blank stays open")

	// The page offers no resolve while a round is pending; the post is refused all the same.
	_, html = get(t, s, c, "/console/ideas/"+f.idea)
	require.NotContains(t, html, `id="resolve"`)
	res, body := ideaPost(t, s, c, html, f.idea, "resolve", url.Values{"requestId": {store.NewUUID()}})
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, body, "Failed to resolve elaboration: Cannot resolve: 1 round(s) still have unanswered questions")
	require.Equal(t, "pending_answers", f.elaboration(s)["status"])
	require.Empty(t, ideaActivities(s, f.idea, "elaboration_resolved"))
}

// On a private project a viewer reads the idea but gets no form, and the form posted anyway is
// refused by the use case with nothing changed; a person outside the project gets not found.
func TestIdeaViewerCannotActOutsiderGetsNotFound(t *testing.T) {
	s := newStack(t, "sqlite")
	f := newIdeaFixture(s, "private")
	viewer := s.user("vi@example.com", store.RoleMember)
	s.call(f.pm, "chorus_admin_add_project_member", map[string]any{"projectUuid": f.project, "userUuid": viewer.UUID, "role": "viewer"})

	c, _ := s.httpSignIn(viewer)
	res, html := get(t, s, c, "/console/ideas/"+f.idea)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, html, "How far should it go?")
	require.NotContains(t, html, "submit-answers", "no form for a viewer")
	require.NotContains(t, html, `id="resolve"`)
	res, body := ideaPost(t, s, c, html, f.idea, "answers", url.Values{"requestId": {store.NewUUID()}, "question": {"scope"},
		"option:scope": {"small"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Contains(t, body, "Insufficient project access")
	res, body = ideaPost(t, s, c, html, f.idea, "resolve", url.Values{"requestId": {store.NewUUID()}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Contains(t, body, "Insufficient project access")
	for q, a := range answers(f.elaboration(s)) {
		require.Nil(t, a, "question %s: the viewer's post changed nothing", q)
	}
	require.Equal(t, "pending_answers", f.elaboration(s)["status"])
	require.Empty(t, ideaActivities(s, f.idea, "elaboration_answered"))

	out, _ := s.httpSignIn(s.user("out@example.com", store.RoleMember))
	res, body = get(t, s, out, "/console/ideas/"+f.idea)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "Idea not found")
	require.NotContains(t, body, "One-click pay")
	res, body = get(t, s, out, "/console/projects/"+f.project+"/ideas")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "Project not found")
	_, page := get(t, s, out, "/console/")
	res, body = ideaPost(t, s, out, page, f.idea, "answers", url.Values{"requestId": {store.NewUUID()}, "question": {"scope"},
		"option:scope": {"small"}})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "Idea not found")
	require.Empty(t, ideaActivities(s, f.idea, "elaboration_answered"))
}

// The tracker shows 50 ideas a page, newest first, and pages on to the rest.
func TestIdeaTrackerPages(t *testing.T) {
	s := newStack(t, "sqlite")
	pm := s.agent("Planner", s.admin, "pm")
	project := s.call(pm, "chorus_admin_create_project", map[string]any{"name": "Backlog"})["uuid"].(string)
	for i := 1; i <= 51; i++ {
		s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": fmt.Sprintf("Idea %02d", i)})
	}
	c, _ := s.httpSignIn(s.user("bo@example.com", store.RoleMember))
	res, first := get(t, s, c, "/console/projects/"+project+"/ideas")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 50, strings.Count(first, `class="idea-row`))
	require.Contains(t, first, "Ideas 1–50 of 51")
	require.Contains(t, first, "Idea 51")
	require.NotContains(t, first, "Idea 01")
	require.Contains(t, first, `href="?page=2"`)
	_, second := get(t, s, c, "/console/projects/"+project+"/ideas?page=2")
	require.Equal(t, 1, strings.Count(second, `class="idea-row`))
	require.Contains(t, second, "Idea 01")
	require.Contains(t, second, `href="?page=1"`)
	require.NotContains(t, second, `href="?page=3"`)
}
