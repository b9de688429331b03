package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// A person signs in with a one-time link, sees the projects agents made, and signs out; the
// link does not work twice, and the ended session is sent to sign in.
func TestSignInWithALinkAndOut(t *testing.T) {
	s := newStack(t, "sqlite")
	pm := s.connect(s.adminKey)
	s.call(pm, "chorus_admin_create_project", map[string]any{"name": "Checkout revamp"})

	b := s.newBrowser()
	b.open("/console/")
	require.Contains(t, b.location(), "/console/login?next=", "no session: sent to sign in")
	link := s.link(s.admin)
	b.signIn(link)
	b.waitText("Checkout revamp")
	require.Contains(t, b.page(), "Ada Admin")

	other := s.newBrowser()
	other.signIn(link)
	other.waitText("unknown, used or expired")
	require.NotContains(t, other.page(), "Checkout revamp", "a link signs in once")

	b.click("header .me button")
	require.Contains(t, b.location(), "/console/login")
	b.open("/console/")
	require.Contains(t, b.location(), "/console/login", "signed out: the session is gone")
}

// The cookies and the session row: HttpOnly, SameSite=Lax, path /console; the row holds only a
// digest; an expired session is sent to sign in; a change without the session's CSRF token is
// refused and changes nothing.
func TestSessionCookieAndCSRF(t *testing.T) {
	s := startStack(t, "sqlite", stackOptions{})
	c, session := s.httpSignIn(s.admin)
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, session.SameSite)
	require.Equal(t, "/console", session.Path)
	n, err := s.st.DB.NewSelect().Table("console_sessions").Where("token_hash = ?", session.Value).Count(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "the row keeps a digest, never the token")

	// Sign-out without the form's token is refused: the session lives on.
	res, err := c.PostForm(s.url+"/console/logout", url.Values{})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	_, _, err = s.st.ConsoleSessionUser(context.Background(), session.Value)
	require.NoError(t, err, "a refused form changed nothing")

	// An expired session: the next page is the sign-in page.
	_, err = s.st.DB.NewUpdate().Table("console_sessions").Set("expires_at = ?", store.Now().Add(-time.Minute)).
		Where("user_uuid = ?", s.admin.UUID).Exec(context.Background())
	require.NoError(t, err)
	res, err = c.Get(s.url + "/console/")
	require.NoError(t, err)
	res.Body.Close()
	require.Contains(t, res.Request.URL.String(), "/console/login?next=")
}

// httpSignIn signs u in with a plain HTTP client (no browser) and returns it and its session cookie.
func (s *stack) httpSignIn(u *store.User) (*http.Client, *http.Cookie) {
	s.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	link := s.link(u)
	res, err := c.Get(link)
	require.NoError(s.t, err)
	body := readAll(s.t, res)
	token := link[strings.LastIndex(link, "/")+1:]
	res, err = c.PostForm(s.url+"/console/login/link", url.Values{"_csrf": {formValue(body, "_csrf")}, "token": {token}})
	require.NoError(s.t, err)
	readAll(s.t, res)
	require.Equal(s.t, http.StatusOK, res.StatusCode)
	for _, ck := range res.Request.Response.Cookies() {
		if ck.Name == "chorus_session" && ck.Value != "" {
			return c, ck
		}
	}
	s.t.Fatal("no session cookie after sign-in")
	return nil, nil
}

// An unknown console address answers a console page (404) saying so, not the server's JSON.
func TestUnknownConsolePathIsAPage(t *testing.T) {
	s := newStack(t, "sqlite")
	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/no-such-page")
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "text/html")
	require.Contains(t, body, "There is no such page in the console.")
}
