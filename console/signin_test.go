package console_test

import (
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/store"
)

// More sign-in attempts from one address than the burst are answered 429 with the message and a
// Retry-After, on every sign-in route (link page, link post, OpenID Connect start); a fresh
// X-Forwarded-For per try does not make a new address. The sign-in page itself stays open.
func TestRateLimitSignIn(t *testing.T) {
	s := startStack(t, "sqlite", stackOptions{console: console.Config{SignInRate: rate.Every(time.Hour), SignInBurst: 3}})
	post := func(i int) *http.Response {
		req, err := http.NewRequest(http.MethodPost, s.url+"/console/login/link", strings.NewReader("token=chl_guess"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", "203.0.113."+string(rune('1'+i)))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return res
	}
	for i := range 3 {
		res := post(i)
		readAll(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "attempt %d: within the burst, refused for its missing token", i+1)
	}
	res := post(3)
	body := readAll(t, res)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Contains(t, body, "Too many sign-in attempts from here. Wait a minute, then try again.")
	require.Equal(t, "60", res.Header.Get("Retry-After"))

	for _, path := range []string{"/console/login/link/chl_guess", "/console/login/oidc"} {
		status, _, body := oidcGet(t, http.DefaultClient, s.url+path)
		require.Equal(t, http.StatusTooManyRequests, status, path)
		require.Contains(t, body, "Too many sign-in attempts")
	}
	status, _, _ := oidcGet(t, http.DefaultClient, s.url+"/console/login")
	require.Equal(t, http.StatusOK, status, "the sign-in page is not an attempt")
}

// Behind a trusted proxy, attempts count against the client its X-Forwarded-For names: other
// clients through the same proxy still sign in; the same client is limited.
func TestRateLimitSignInBehindATrustedProxy(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s := startStack(t, "sqlite", stackOptions{console: console.Config{SignInRate: rate.Every(time.Hour), SignInBurst: 1,
		TrustedProxies: []*net.IPNet{loopback}}})
	try := func(client string) int {
		req, err := http.NewRequest(http.MethodGet, s.url+"/console/login/link/chl_guess", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", client)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		readAll(t, res)
		return res.StatusCode
	}
	require.Equal(t, http.StatusOK, try("203.0.113.1"))
	require.Equal(t, http.StatusOK, try("203.0.113.2"), "another client through the proxy")
	require.Equal(t, http.StatusTooManyRequests, try("203.0.113.1"), "the same client again")
	require.Equal(t, http.StatusTooManyRequests, try("10.9.9.9, 203.0.113.2"), "an address the client prepends is not believed")
}

// In a browser, a form whose hidden _csrf input was removed is refused with the page that says
// nothing changed: the sign-in link is not spent (it signs in afterwards), and a sign-out without
// its token leaves the session signed in.
func TestCSRFFormWithoutTokenIsRefused(t *testing.T) {
	s := newStack(t, "sqlite")
	link := s.link(s.admin)
	b := s.newBrowser()
	b.open(link)
	eval[bool](b, `document.querySelector("form input[name=_csrf]").remove(), true`)
	b.click("#signin")
	b.waitText("Nothing was changed")
	require.Contains(t, b.page(), "security token is missing or wrong")
	requireSessions(t, s, 0)

	b.signIn(link)
	b.waitText("Projects")
	require.Equal(t, s.url+"/console/", b.location(), "the link was not spent by the refused form")

	eval[bool](b, `document.querySelector("header .me input[name=_csrf]").remove(), true`)
	b.click("header .me button")
	b.waitText("Nothing was changed")
	b.open("/console/")
	require.Equal(t, s.url+"/console/", b.location(), "still signed in")
	requireSessions(t, s, 1)
}

// signOut posts the sign-out form of the console's front page with c, with everywhere=1 when all.
func (s *stack) signOut(c *http.Client, all bool) {
	s.t.Helper()
	res, err := c.Get(s.url + "/console/")
	require.NoError(s.t, err)
	form := url.Values{"_csrf": {formValue(readAll(s.t, res), "_csrf")}}
	if all {
		form.Set("everywhere", "1")
	}
	res, err = c.PostForm(s.url+"/console/logout", form)
	require.NoError(s.t, err)
	readAll(s.t, res)
	require.Equal(s.t, http.StatusOK, res.StatusCode)
	require.Equal(s.t, "/console/login", res.Request.URL.Path)
}

// signedIn reports whether c's session lets it see the console's front page.
func (s *stack) signedIn(c *http.Client) bool {
	s.t.Helper()
	res, err := c.Get(s.url + "/console/")
	require.NoError(s.t, err)
	readAll(s.t, res)
	return res.Request.URL.Path == "/console/"
}

// Sign-out ends the session in every client that holds its cookie: a second client with a copy
// of the cookie is sent to sign in too.
func TestSessionSignOutEndsItEverywhereItIsUsed(t *testing.T) {
	s := newStack(t, "sqlite")
	c1, ck := s.httpSignIn(s.admin)
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(s.url + "/console/")
	jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/console"}})
	c2 := &http.Client{Jar: jar}
	require.True(t, s.signedIn(c2), "the copy works while the session lives")

	s.signOut(c1, false)
	require.False(t, s.signedIn(c1))
	require.False(t, s.signedIn(c2), "the copy is sent to sign in")
	_, _, err := s.st.ConsoleSessionUser(context.Background(), ck.Value)
	require.ErrorIs(t, err, store.ErrNoSession)
}

// Sign out everywhere ends every session of the person, and no one else's.
func TestSessionSignOutEverywhere(t *testing.T) {
	s := newStack(t, "sqlite")
	a1, _ := s.httpSignIn(s.admin)
	a2, _ := s.httpSignIn(s.admin)
	b1, _ := s.httpSignIn(s.user("bo@example.com", store.RoleMember))
	s.signOut(a1, true)
	require.False(t, s.signedIn(a2), "the person's other session ended")
	require.True(t, s.signedIn(b1), "another person's session lives on")
	requireSessions(t, s, 1)
}

// Cookies are Secure when Config.Secure says so (a proxy terminates TLS), and over TLS whatever
// it says; HttpOnly and SameSite=Lax always.
func TestSessionCookiesSecure(t *testing.T) {
	s := startStack(t, "sqlite", stackOptions{console: console.Config{Secure: true}})
	linkSignIn(t, http.DefaultClient, s.url, s.link(s.admin))

	plain := newStack(t, "sqlite") // Secure unset: served over TLS, the cookies are Secure anyway
	e := echo.New()
	plain.con.Mount(e)
	srv := httptest.NewTLSServer(e)
	t.Cleanup(srv.Close)
	plain.url = srv.URL
	linkSignIn(t, srv.Client(), srv.URL, plain.link(plain.admin))
}

// linkSignIn signs in with a link over c (no cookie jar: the cookies are passed by hand, as a
// client that is not a browser may send a Secure cookie over plain HTTP) and checks that both
// cookies are Secure, HttpOnly and SameSite=Lax.
func linkSignIn(t *testing.T, c *http.Client, origin, link string) {
	t.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := nc.Get(link)
	require.NoError(t, err)
	body := readAll(t, res)
	pre := cookieNamed(t, res.Cookies(), "chorus_signin")
	req, err := http.NewRequest(http.MethodPost, origin+"/console/login/link",
		strings.NewReader(url.Values{"_csrf": {formValue(body, "_csrf")}, "token": {link[strings.LastIndex(link, "/")+1:]}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: pre.Name, Value: pre.Value})
	res, err = nc.Do(req)
	require.NoError(t, err)
	readAll(t, res)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "signed in")
	session := cookieNamed(t, res.Cookies(), "chorus_session")
	for _, ck := range []*http.Cookie{pre, session} {
		require.True(t, ck.Secure, "%s is Secure", ck.Name)
		require.True(t, ck.HttpOnly, "%s is HttpOnly", ck.Name)
		require.Equal(t, http.SameSiteLaxMode, ck.SameSite, ck.Name)
	}
}

// cookieNamed is the cookie called name among cks; missing fails the test.
func cookieNamed(t *testing.T, cks []*http.Cookie, name string) *http.Cookie {
	t.Helper()
	for _, ck := range cks {
		if ck.Name == name && ck.Value != "" {
			return ck
		}
	}
	t.Fatalf("no %s cookie among %v", name, cks)
	return nil
}

// The request log keeps no credential: a sign-in link's token and an OpenID Connect callback's
// code and state are REDACTED; other URIs are kept as they are.
func TestSignInLogSafeURI(t *testing.T) {
	for in, want := range map[string]string{
		"/console/login/link/chl_secret":                     "/console/login/link/REDACTED",
		"/console/login/link/chl_secret?next=%2Fconsole%2F":  "/console/login/link/REDACTED?next=%2Fconsole%2F",
		"/console/login/oidc/callback?code=c0de&state=st4te": "/console/login/oidc/callback?REDACTED",
		"/console/login/oidc/callback?error=access_denied":   "/console/login/oidc/callback?REDACTED",
		"/console/login/oidc?next=%2Fconsole%2Fprojects":     "/console/login/oidc?next=%2Fconsole%2Fprojects",
		"/console/projects?page=2":                           "/console/projects?page=2",
	} {
		require.Equal(t, want, console.LogSafeURI(in), in)
	}
}
