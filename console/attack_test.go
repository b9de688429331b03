package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// A careless or hostile person's posts: forms over the size one change may carry, a requestId
// sent again with another action, paths that are no page, and forms with a foreign CSRF token.

// attackPoster posts forms as a signed-in person with their CSRF token.
type attackPoster struct {
	t    *testing.T
	s    *stack
	c    *http.Client
	csrf string
}

func (s *stack) poster(t *testing.T, u *store.User) attackPoster {
	c, _ := s.httpSignIn(u)
	res, err := c.Get(s.url + "/console/")
	require.NoError(t, err)
	csrf := formValue(readAll(t, res), "_csrf")
	require.NotEmpty(t, csrf)
	return attackPoster{t: t, s: s, c: c, csrf: csrf}
}

func (p attackPoster) post(path string, form url.Values) (int, string) {
	p.t.Helper()
	form.Set("_csrf", p.csrf)
	res, err := p.c.PostForm(p.s.url+path, form)
	require.NoError(p.t, err)
	return res.StatusCode, readAll(p.t, res)
}

func (s *stack) count(table, where string, args ...any) int {
	s.t.Helper()
	q := s.st.DB.NewSelect().Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	n, err := q.Count(context.Background())
	require.NoError(s.t, err)
	return int(n)
}

// A note or comment over 512 KiB (as JSON, as the MCP tools measure their arguments) is refused
// before any use case runs, naming the field, and changes nothing; before this bound a 3 MB
// review note reached the proposal's workflow, whose task then failed on every attempt (the
// proposal could no longer be decided). A body over 4 MiB is refused as too large.
func TestFormOverTheChangeLimitIsRefused(t *testing.T) {
	s := newStack(t, "sqlite")
	f := s.pendingProposal("public")
	p := s.poster(t, s.admin)

	status, body := p.post("/console/proposals/"+f.proposal+"/reject",
		url.Values{"requestId": {"r1"}, "reviewNote": {strings.Repeat("n", 600<<10)}})
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, body, "reviewNote: the form&#39;s text takes")
	assert.Contains(t, body, "at most 524288 (512 KiB)")
	assert.Equal(t, "pending", s.proposalStatus(f), "nothing changed")

	comments := s.count("comments", "")
	// 100,000 control characters are 100 kB posted, and 600 kB as JSON: refused too.
	for _, content := range []string{strings.Repeat("c", 1<<20), strings.Repeat("\x01", 100_000)} {
		status, body = p.post("/console/comments", url.Values{"requestId": {store.NewUUID()}, "targetType": {"proposal"},
			"targetUuid": {f.proposal}, "content": {content}, "back": {"/console/"}})
		assert.Equal(t, http.StatusUnprocessableEntity, status)
		assert.Contains(t, body, "content: the form&#39;s text takes")
	}
	status, body = p.post("/console/comments", url.Values{"requestId": {store.NewUUID()}, "targetType": {"proposal"},
		"targetUuid": {f.proposal}, "content": {strings.Repeat("c", 5<<20)}, "back": {"/console/"}})
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, body, "The form is over 4194304 bytes (4 MiB)")
	assert.Equal(t, comments, s.count("comments", ""), "no comment was added")

	// Just within the bound, the decision goes through: the workflow was never reached by the long
	// note, and the longest note it may carry stays below Temporal's limit.
	status, _ = p.post("/console/proposals/"+f.proposal+"/reject",
		url.Values{"requestId": {"r2"}, "reviewNote": {strings.Repeat("n", 512<<10-64)}})
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "draft", s.proposalStatus(f))
}

// A requestId sent again with another action or other values is that action, done as asked:
// never the first post's result passed off as its own (before, a second comment with the same
// requestId was silently dropped with "Comment added.", other marks were dropped with "Marks
// saved.", and a comment on another task was an internal error). The same form posted twice
// still applies once.
func TestReusedRequestIDIsAnotherAction(t *testing.T) {
	s := newStack(t, "sqlite")
	v := s.toVerify()
	p := s.poster(t, s.admin)
	comment := func(task, content string) {
		t.Helper()
		status, body := p.post("/console/comments", url.Values{"requestId": {"same"}, "targetType": {"task"},
			"targetUuid": {task}, "content": {content}, "back": {"/console/tasks/" + task}})
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, "Comment added.")
	}
	comment(v.task, "first")
	comment(v.task, "first") // the double submit
	comment(v.task, "second")
	comment(v.other, "third")
	for content, want := range map[string]int{"first": 1, "second": 1, "third": 1} {
		assert.Equal(t, want, s.count("comments", "content = ? AND author_uuid = ?", content, s.admin.UUID), content)
	}

	mark := func(status string) {
		t.Helper()
		code, body := p.post("/console/tasks/"+v.task+"/criteria", url.Values{"requestId": {"marks"},
			"criteria[0].uuid": {v.criteria[0]}, "criteria[0].status": {status}})
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, 1, s.count("acceptance_criteria", "uuid = ? AND status = ?", v.criteria[0], status), status)
	}
	mark("passed")
	mark("failed")
}

// A path the console does not serve, or a page posted to, is the console's own not-found page
// with its security headers. A change with the CSRF token of another session, or with the token
// of the sign-in form (the pre-sign-in cookie's), is refused and changes nothing.
func TestNoSuchPageAndForeignCSRFTokens(t *testing.T) {
	s := newStack(t, "sqlite")
	v := s.toVerify()
	p := s.poster(t, s.admin)
	for _, req := range [][2]string{{"GET", "/console/nope"}, {"POST", "/console/tasks/" + v.task}, {"GET", "/console/inbox/read"}} {
		r, err := http.NewRequest(req[0], s.url+req[1], strings.NewReader(url.Values{"_csrf": {p.csrf}}.Encode()))
		require.NoError(t, err)
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := p.c.Do(r)
		require.NoError(t, err)
		body := readAll(t, res)
		assert.Equal(t, http.StatusNotFound, res.StatusCode, req)
		assert.Contains(t, body, "There is no such page in the console.", req)
		assert.Contains(t, res.Header.Get("Content-Security-Policy"), "script-src 'self'", req)
		assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"), req)
	}

	other := s.poster(t, s.user("pat@example.com", store.RoleMember))
	jar, _ := cookiejar.New(nil)
	fresh := &http.Client{Jar: jar}
	res, err := fresh.Get(s.url + "/console/login/link/chl_unknown")
	require.NoError(t, err)
	preSignIn := formValue(readAll(t, res), "_csrf")
	require.NotEmpty(t, preSignIn)
	for _, token := range []string{other.csrf, preSignIn} {
		q := attackPoster{t: t, s: s, c: p.c, csrf: token}
		status, body := q.post("/console/tasks/"+v.task+"/close", url.Values{"requestId": {store.NewUUID()}})
		assert.Equal(t, http.StatusForbidden, status)
		assert.Contains(t, body, "security token is missing or wrong")
	}
	assert.Equal(t, 1, s.count("tasks", "uuid = ? AND status = 'to_verify'", v.task), "the task was not closed")
}

// The database lost mid-use: every page and form answers "try again" (503) in the console's
// words, with no Go error, SQL or driver text; back up, the same pages work.
func TestDatabaseOutageShowsNoInternals(t *testing.T) {
	s := startStack(t, "sqlite", stackOptions{faulty: true})
	v := s.toVerify()
	p := s.poster(t, s.admin)
	s.outage.Down()
	pages := []string{"/console/", "/console/projects/" + v.project, "/console/tasks/" + v.task, "/console/inbox",
		"/console/verify", "/console/review", "/console/agents", "/console/comments/task/" + v.task}
	check := func(what string, status int, body string) {
		t.Helper()
		assert.Equal(t, http.StatusServiceUnavailable, status, what)
		lower := strings.ToLower(body)
		for _, leak := range []string{"sql", "database is", "goroutine", "panic", "driver", "outage", ".go:", "dial tcp"} {
			assert.False(t, strings.Contains(lower, leak), "%s shows %q: %s", what, leak, body)
		}
	}
	for _, path := range pages {
		res, err := p.c.Get(s.url + path)
		require.NoError(t, err)
		check(path, res.StatusCode, readAll(t, res))
	}
	status, body := p.post("/console/tasks/"+v.task+"/close", url.Values{"requestId": {store.NewUUID()}})
	check("close", status, body)
	status, body = p.post("/console/comments", url.Values{"requestId": {store.NewUUID()}, "targetType": {"task"},
		"targetUuid": {v.task}, "content": {"hi"}, "back": {"/console/"}})
	check("comment", status, body)
	s.outage.Up()
	for _, path := range pages {
		res, err := p.c.Get(s.url + path)
		require.NoError(t, err)
		readAll(t, res)
		assert.Equal(t, http.StatusOK, res.StatusCode, path)
	}
	assert.Equal(t, 1, s.count("tasks", "uuid = ? AND status = 'to_verify'", v.task), "the refused close changed nothing")
}

// Sessions against a careless or hostile browser: a session cookie set before sign-in (fixation)
// is not the one signing in makes; an expired link and a spent one do not sign in; a session
// whose person was deleted is sent to sign in; next= never leaves the console.
func TestSessionFixationExpiredLinksAndDeletedPeople(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	pat := s.user("pat@example.com", store.RoleMember)

	// Fixation: the attacker's planted cookie is replaced, and does not become a session.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	origin, _ := url.Parse(s.url + "/console/")
	planted := "chs_planted-by-the-attacker"
	jar.SetCookies(origin, []*http.Cookie{{Name: "chorus_session", Value: planted, Path: "/console"}})
	link := s.link(pat)
	res, err := c.Get(link)
	require.NoError(t, err)
	body := readAll(t, res)
	res, err = c.PostForm(s.url+"/console/login/link", url.Values{"_csrf": {formValue(body, "_csrf")},
		"token": {link[strings.LastIndex(link, "/")+1:]}, "next": {"//evil.example/x"}})
	require.NoError(t, err)
	readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "/console/", res.Request.URL.Path, "next= outside the console goes to the console")
	assert.Equal(t, s.url[len("http://"):], res.Request.URL.Host)
	var session string
	for _, ck := range jar.Cookies(origin) {
		if ck.Name == "chorus_session" {
			session = ck.Value
		}
	}
	assert.NotEqual(t, planted, session)
	_, _, err = s.st.ConsoleSessionUser(ctx, planted)
	assert.ErrorIs(t, err, store.ErrNoSession, "the planted value is no session")

	// The spent link and an expired one sign no one in.
	expired, err := s.st.CreateLoginLink(ctx, pat, -time.Minute)
	require.NoError(t, err)
	for _, token := range []string{link[strings.LastIndex(link, "/")+1:], expired} {
		fresh, _ := cookiejar.New(nil)
		other := &http.Client{Jar: fresh}
		res, err := other.Get(s.url + "/console/login/link/" + token)
		require.NoError(t, err)
		body := readAll(t, res)
		res, err = other.PostForm(s.url+"/console/login/link", url.Values{"_csrf": {formValue(body, "_csrf")}, "token": {token}})
		require.NoError(t, err)
		body = readAll(t, res)
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
		assert.Contains(t, body, "unknown, used or expired")
	}

	// The person deleted: their session is over.
	_, err = s.st.DB.NewDelete().Table("users").Where("uuid = ?", pat.UUID).Exec(ctx)
	require.NoError(t, err)
	res, err = c.Get(s.url + "/console/")
	require.NoError(t, err)
	readAll(t, res)
	assert.Equal(t, "/console/login", res.Request.URL.Path)
}
