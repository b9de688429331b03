package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
)

// inboxFixture is a private project with an idea the admin agent made, a person who edits it,
// and the admin agent's uuid.
type inboxFixture struct {
	project, idea, agentUUID string
}

func (s *stack) inboxFixture(editors ...*store.User) inboxFixture {
	s.t.Helper()
	pm := s.connect(s.adminKey)
	f := inboxFixture{}
	f.project = s.call(pm, "chorus_admin_create_project", map[string]any{"name": "Vault", "visibility": "private"})["uuid"].(string)
	f.idea = s.call(pm, "chorus_pm_create_idea", map[string]any{"projectUuid": f.project, "title": "Dark mode"})["uuid"].(string)
	f.agentUUID = s.call(pm, "chorus_checkin", map[string]any{})["agent"].(map[string]any)["uuid"].(string)
	for _, u := range editors {
		s.call(pm, "chorus_admin_add_project_member", map[string]any{"projectUuid": f.project, "userUuid": u.UUID, "role": "editor"})
	}
	return f
}

// unread is how many unread notifications u has, read as the console reads them.
func (s *stack) unread(u *store.User) int {
	s.t.Helper()
	n, err := s.app.UnreadNotifications(context.Background(), app.Request{Who: app.UserPrincipal(u)})
	require.NoError(s.t, err)
	return n
}

// An agent @-mentions a person in a comment on an idea: the person sees it in the nav's count
// and the inbox, marks it read; then comments back mentioning the agent, which the agent's
// notifications and chorus_get_comments show, written by the person (author type "user").
func TestInboxMentionRoundTrip(t *testing.T) {
	s := newStack(t, "sqlite")
	pat := s.user("pat@example.com", store.RoleMember)
	f := s.inboxFixture(pat)
	pm := s.connect(s.adminKey)
	s.agent("Helper", pat, "developer_agent")
	var helper string
	require.NoError(t, s.st.DB.NewSelect().Table("agents").Column("uuid").Where("name = 'Helper'").Scan(context.Background(), &helper))
	s.call(pm, "chorus_add_comment", map[string]any{"targetType": "idea", "targetUuid": f.idea,
		"content": "Can you look at the contrast, @[Pat](user:" + pat.UUID + ")?"})
	require.Equal(t, 1, s.unread(pat), "the mention reached the person (recipient type user)")

	b := s.newBrowser()
	b.signIn(s.link(pat))
	b.open("/console/inbox")
	require.Equal(t, "1", b.text("header nav .unread"), "the nav shows the unread count")
	row := b.text("table.notifications tr.unread")
	require.Contains(t, row, `Admin Agent mentioned you: "Can you look at the contrast, @Pat?"`)
	require.Contains(t, row, "Dark mode")
	require.Equal(t, "/console/ideas/"+f.idea, eval[string](b, `document.querySelector("table.notifications tr.unread a").getAttribute("href")`))
	require.Contains(t, b.text(".waiting"), "1 unread mention of you")
	require.Contains(t, b.text(".waiting"), "0 proposals to review")

	b.click("table.notifications tr.unread button.mark-read")
	b.waitText("Marked read.")
	require.Zero(t, s.unread(pat), "marked read")
	require.Zero(t, eval[int](b, `document.querySelectorAll("header nav .unread").length`), "no count once all are read")
	require.Contains(t, b.text("table.notifications tr.read"), "mentioned you")

	// The person answers on the idea's comments, mentioning the agent.
	b.open("/console/comments/idea/" + f.idea)
	require.Contains(t, b.text("#comments"), "Can you look at the contrast, @Pat?", "the agent's comment, mention shown as @Name")
	offered := eval[string](b, `document.querySelector("details.mentionables").textContent`)
	require.Contains(t, offered, "@[Ada Admin](user:"+s.admin.UUID+")", "people who see the project are offered")
	require.Contains(t, offered, "@[Helper](agent:"+helper+")", "and the person's own agents (as chorus_search_mentionables)")
	b.fill("#comment-content", "Done, @[Admin Agent](agent:"+f.agentUUID+") please re-check")
	b.click(".comment-form button[type=submit]")
	b.waitText("Comment added.")
	require.Contains(t, b.text("#comments"), "Done, @Admin Agent please re-check")

	notes := s.call(pm, "chorus_get_notifications", map[string]any{"status": "all"})["notifications"].([]any)
	var mentioned map[string]any
	for _, n := range notes {
		if m := n.(map[string]any); m["action"] == "mentioned" {
			mentioned = m
		}
	}
	require.NotNil(t, mentioned, "the agent was notified of the mention: %v", notes)
	require.Equal(t, "user", mentioned["actorType"])
	require.Equal(t, pat.UUID, mentioned["actorUuid"])
	require.Equal(t, f.idea, mentioned["entityUuid"])

	comments := s.call(pm, "chorus_get_comments", map[string]any{"targetType": "idea", "targetUuid": f.idea})["comments"].([]any)
	require.Len(t, comments, 2)
	author := comments[0].(map[string]any)["author"].(map[string]any)
	require.Equal(t, map[string]any{"type": "user", "uuid": pat.UUID, "name": pat.DisplayName()}, author)

	acts := s.call(pm, "chorus_get_activity", map[string]any{"projectUuid": f.project, "targetType": "idea", "targetUuid": f.idea})["activities"].([]any)
	var byPat int
	for _, a := range acts {
		if m := a.(map[string]any); m["actorType"] == "user" && m["actorUuid"] == pat.UUID {
			byPat++
		}
	}
	require.Equal(t, 2, byPat, "comment_added and mentioned, with the person as the actor: %v", acts)
}

// Mark all read, and the inbox's unread-first order and paging bounds.
func TestInboxMarkAllRead(t *testing.T) {
	s := newStack(t, "sqlite")
	pat := s.user("pat@example.com", store.RoleMember)
	f := s.inboxFixture(pat)
	pm := s.connect(s.adminKey)
	dev := s.agent("Dev", s.admin, "developer_agent")
	for _, a := range []struct {
		who  string
		text string
	}{{"pm", "first"}, {"dev", "second"}} {
		c := pm
		if a.who == "dev" {
			c = dev
		}
		s.call(c, "chorus_add_comment", map[string]any{"targetType": "idea", "targetUuid": f.idea,
			"content": a.text + " @[Pat](user:" + pat.UUID + ")"})
	}
	require.Equal(t, 2, s.unread(pat), "two actors: two notifications")
	now := store.Now()
	_, err := s.st.DB.NewInsert().Model(&store.Proposal{UUID: store.NewUUID(), CompanyUUID: s.company, ProjectUUID: f.project,
		Title: "Pending", InputType: "idea", InputUUIDs: []string{f.idea}, DocumentDrafts: []store.DocumentDraft{},
		TaskDrafts: []store.TaskDraft{}, Status: "pending", CreatedByUUID: f.agentUUID, CreatedByType: "agent",
		CreatedAt: now, UpdatedAt: now}).Exec(context.Background())
	require.NoError(t, err)

	c, _ := s.httpSignIn(pat)
	res, err := c.Get(s.url + "/console/inbox")
	require.NoError(t, err)
	body := readAll(t, res)
	require.Contains(t, body, "2 unread of 2")
	require.Contains(t, body, `<strong class="waiting-mentions">2</strong> unread mentions`)
	require.Contains(t, body, `<a href="/console/review"><strong class="waiting-proposals">1</strong> proposal to review</a>`,
		"a proposal waits in the project Pat edits")
	require.Contains(t, body, `<strong class="waiting-tasks">0</strong> tasks to verify`)
	form := url.Values{"_csrf": {formValue(body, "_csrf")}}
	res, err = c.PostForm(s.url+"/console/inbox/read-all", form)
	require.NoError(t, err)
	body = readAll(t, res)
	require.Contains(t, body, "Marked 2 notifications read.")
	require.Contains(t, body, "0 unread of 2")
	require.Zero(t, s.unread(pat))

	// Someone else's notification (or none) is not found, as the tool says.
	res, err = c.PostForm(s.url+"/console/inbox/read", url.Values{"_csrf": form["_csrf"], "notificationUuid": {store.NewUUID()}})
	require.NoError(t, err)
	body = readAll(t, res)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "Notification not found")
}

// The comment form over plain HTTP: a double submit adds one comment; a blank one is refused
// beside the field and adds nothing; a viewer is refused (changes need editor, docs/rules.md
// §6.3); an outsider finds the idea not found, as the tool says.
func TestCommentFormRules(t *testing.T) {
	s := newStack(t, "sqlite")
	pat := s.user("pat@example.com", store.RoleMember)
	vic := s.user("vic@example.com", store.RoleMember)
	olly := s.user("olly@example.com", store.RoleMember)
	f := s.inboxFixture(pat)
	pm := s.connect(s.adminKey)
	s.call(pm, "chorus_admin_add_project_member", map[string]any{"projectUuid": f.project, "userUuid": vic.UUID, "role": "viewer"})
	count := func() int {
		n, err := s.st.DB.NewSelect().Model((*store.Comment)(nil)).Where("target_uuid = ?", f.idea).Count(context.Background())
		require.NoError(t, err)
		return int(n)
	}
	page := "/console/comments/idea/" + f.idea
	post := func(c *http.Client, body, content string) (*http.Response, string) {
		form := url.Values{"_csrf": {formValue(body, "_csrf")}, "requestId": {formValue(body, "requestId")},
			"targetType": {"idea"}, "targetUuid": {f.idea}, "back": {formValue(body, "back")}, "content": {content}}
		res, err := c.PostForm(s.url+"/console/comments", form)
		require.NoError(t, err)
		return res, readAll(t, res)
	}

	c, _ := s.httpSignIn(pat)
	res, err := c.Get(s.url + page)
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, page, formValue(body, "back"))
	for range 2 {
		res, got := post(c, body, "Looks good")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, page, res.Request.URL.Path, "back to the page the form was on")
		require.Contains(t, got, "Looks good")
	}
	require.Equal(t, 1, count(), "the same requestId adds one comment")

	res, got := post(c, body, "   ")
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, got, `<span class="field-error" role="alert">Input validation error: content must not be blank`)
	require.Equal(t, 1, count(), "a blank comment adds nothing")

	// A viewer sees the comments and the form, but adding one is a change: refused.
	cv, _ := s.httpSignIn(vic)
	res, err = cv.Get(s.url + page)
	require.NoError(t, err)
	vbody := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, got = post(cv, vbody, "I only read")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Contains(t, got, "Insufficient project access")
	require.Contains(t, got, "I only read", "the text is kept")
	require.Equal(t, 1, count(), "a viewer's comment is not added")

	// An outsider: the page and the post both answer not found, with the tool's text.
	co, _ := s.httpSignIn(olly)
	res, err = co.Get(s.url + page)
	require.NoError(t, err)
	obody := readAll(t, res)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, obody, "Idea not found")
	res, got = post(co, strings.Replace(body, formValue(body, "_csrf"), formValue(obody, "_csrf"), 1), "hello")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, got, "Idea not found")
	require.NotContains(t, got, "Dark mode")
	require.Equal(t, 1, count())

	// The form returns only to a console page, never to another site.
	res, err = c.PostForm(s.url+"/console/comments", url.Values{"_csrf": {formValue(body, "_csrf")}, "requestId": {store.NewUUID()},
		"targetType": {"idea"}, "targetUuid": {f.idea}, "back": {"//evil.example/x"}, "content": {"Second"}})
	require.NoError(t, err)
	readAll(t, res)
	require.Equal(t, strings.TrimPrefix(s.url, "http://"), res.Request.URL.Host)
	require.Equal(t, "/console/", res.Request.URL.Path)
	require.Equal(t, 2, count())
}

// The inbox pages unread notifications first (50 to a page), then read ones; the comments
// partial pages 20 comments at a time. Neither loads more than it shows.
func TestInboxAndCommentPages(t *testing.T) {
	s := newStack(t, "sqlite")
	pat := s.user("pat@example.com", store.RoleMember)
	f := s.inboxFixture(pat)
	ctx := context.Background()
	base := store.Now().Add(-time.Hour)
	for i := range 55 {
		at := base.Add(time.Duration(i) * time.Second)
		n := store.Notification{UUID: store.NewUUID(), CompanyUUID: s.company, ProjectUUID: &f.project, RecipientType: "user",
			RecipientUUID: pat.UUID, EntityType: "idea", EntityUUID: f.idea, EntityTitle: "Dark mode", Action: "comment_added",
			Message: fmt.Sprintf("note %02d", i), ActorType: "agent", ActorUUID: f.agentUUID, ActorName: "Admin Agent", CreatedAt: at, UpdatedAt: at}
		if i >= 52 { // the three newest are read: they still come after every unread one
			n.ReadAt = &at
		}
		_, err := s.st.DB.NewInsert().Model(&n).Exec(ctx)
		require.NoError(t, err)
	}
	for i := range 21 {
		at := base.Add(time.Duration(i) * time.Second)
		_, err := s.st.DB.NewInsert().Model(&store.Comment{UUID: store.NewUUID(), CompanyUUID: s.company, TargetType: "idea",
			TargetUUID: f.idea, Content: fmt.Sprintf("comment %02d", i), AuthorType: "agent", AuthorUUID: f.agentUUID,
			CreatedAt: at, UpdatedAt: at}).Exec(ctx)
		require.NoError(t, err)
	}
	c, _ := s.httpSignIn(pat)
	get := func(path string) string {
		res, err := c.Get(s.url + path)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		return readAll(t, res)
	}
	first := get("/console/inbox")
	require.Contains(t, first, "52 unread of 55")
	require.Equal(t, 50, strings.Count(first, `<tr class="unread"`))
	require.Zero(t, strings.Count(first, `<tr class="read"`))
	require.Less(t, strings.Index(first, "note 51"), strings.Index(first, "note 02"), "newest first")
	require.Contains(t, first, `<a href="/console/inbox?offset=50">Older</a>`)
	second := get("/console/inbox?offset=50")
	require.Equal(t, 2, strings.Count(second, `<tr class="unread"`))
	require.Equal(t, 3, strings.Count(second, `<tr class="read"`))
	require.Less(t, strings.Index(second, "note 01"), strings.Index(second, "note 54"), "unread before read")
	require.NotContains(t, second, ">Older<")
	require.Contains(t, second, `<a href="/console/inbox?offset=0">Newer</a>`)

	page := "/console/comments/idea/" + f.idea
	body := get(page)
	require.Equal(t, 20, strings.Count(body, `<article class="comment card"`))
	require.Contains(t, body, "comment 20")
	require.NotContains(t, body, "comment 00")
	require.Contains(t, body, `href="`+page+`?coff=20#comments" class="more"`)
	older := get(page + "?coff=20")
	require.Equal(t, 1, strings.Count(older, `<article class="comment card"`))
	require.Contains(t, older, "comment 00")
	require.Equal(t, page, formValue(older, "back"), "the form returns to the page, not to its older comments")
}
