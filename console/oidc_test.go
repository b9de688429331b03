package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/store"
)

// startProvider starts a test OpenID Connect provider (mockoidc) for the test's lifetime. It
// answers every authorization at once, as the user queued last (QueueUser).
func startProvider(t *testing.T) *mockoidc.MockOIDC {
	t.Helper()
	m, err := mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

// oidcStack is a stack whose console signs in through m.
func oidcStack(t *testing.T, m *mockoidc.MockOIDC) *stack {
	t.Helper()
	return startStack(t, "sqlite", stackOptions{configure: func(origin string, cfg *console.Config) {
		p := m.Config()
		cfg.OIDC = &console.OIDCConfig{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
			RedirectURL: origin + console.OIDCCallbackPath}
	}})
}

// A person whose user was added by e-mail signs in through the provider in a browser: the
// sign-in page's button leads through the provider back to the console, signed in as that user,
// whose oidc_sub is now the provider's identity; the next sign-in finds them by that identity
// even when the provider reports another e-mail.
func TestOIDCSignInLinksTheUserByVerifiedEmail(t *testing.T) {
	m := startProvider(t)
	s := oidcStack(t, m)
	jane := s.user("jane@example.com", store.RoleMember)
	m.QueueUser(&mockoidc.MockUser{Subject: "jane-1", Email: "Jane@Example.com", EmailVerified: true})

	b := s.newBrowser()
	b.open("/console/")
	require.Contains(t, b.location(), "/console/login?next=")
	b.click("a.button[href^='/console/login/oidc']")
	b.waitText("Projects")
	require.Equal(t, s.url+"/console/", b.location())
	require.Contains(t, b.text("header .me"), "jane@example.com")
	got, err := s.st.UserByUUID(context.Background(), jane.UUID)
	require.NoError(t, err)
	require.Equal(t, store.OIDCSubject(m.Issuer(), "jane-1"), got.OIDCSub, "linked on first sign-in")

	b.click("header .me button")
	m.QueueUser(&mockoidc.MockUser{Subject: "jane-1", Email: "jane.renamed@example.com", EmailVerified: true})
	b.open("/console/login")
	b.click("a.button[href^='/console/login/oidc']")
	b.waitText("Projects")
	require.Contains(t, b.text("header .me"), "jane@example.com", "found by subject, not by the new e-mail")
}

// oidcClient is a plain HTTP client (own cookies) that stops at the console's callback, so a
// test holds the callback URL the provider sent.
func oidcClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == console.OIDCCallbackPath {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// startOIDC starts a sign-in with c and returns the callback URL the provider sent back.
func (s *stack) startOIDC(c *http.Client) string {
	s.t.Helper()
	res, err := c.Get(s.url + "/console/login/oidc?next=/console/")
	require.NoError(s.t, err)
	readAll(s.t, res)
	require.Equal(s.t, http.StatusFound, res.StatusCode, "the provider sends the browser back")
	cb := res.Header.Get("Location")
	require.Contains(s.t, cb, console.OIDCCallbackPath)
	return cb
}

// get fetches u with c without following redirects and returns the status, Location and body.
func oidcGet(t *testing.T, c *http.Client, u string) (int, string, string) {
	t.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := nc.Get(u)
	require.NoError(t, err)
	body := readAll(t, res)
	return res.StatusCode, res.Header.Get("Location"), body
}

// A callback with another state than the browser's is refused and signs nobody in; a callback
// replayed in the same browser finds its sign-in spent; replayed with a copy of the old cookie,
// the provider refuses the spent code. Each replay starts no session.
func TestOIDCWrongStateAndReplayAreRefused(t *testing.T) {
	m := startProvider(t)
	s := oidcStack(t, m)
	s.user("jane@example.com", store.RoleMember)
	queue := func() {
		m.QueueUser(&mockoidc.MockUser{Subject: "jane-1", Email: "jane@example.com", EmailVerified: true})
	}

	queue()
	c := oidcClient()
	cb := s.startOIDC(c)
	u, _ := url.Parse(cb)
	q := u.Query()
	q.Set("state", "forged")
	u.RawQuery = q.Encode()
	status, _, body := oidcGet(t, c, u.String())
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "did not start in this browser")
	requireSessions(t, s, 0)

	queue()
	c = oidcClient()
	cb = s.startOIDC(c)
	cbURL, _ := url.Parse(cb)
	pending := c.Jar.Cookies(cbURL)
	status, loc, _ := oidcGet(t, c, cb)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/console/", loc)
	requireSessions(t, s, 1)

	status, _, body = oidcGet(t, c, cb)
	require.Equal(t, http.StatusBadRequest, status, "the same browser again: the sign-in is spent")
	require.Contains(t, body, "was already used")

	other := oidcClient()
	other.Jar.SetCookies(cbURL, pending)
	status, _, body = oidcGet(t, other, cb)
	require.Equal(t, http.StatusUnauthorized, status, "a copy of the cookie: the provider refuses the spent code")
	require.Contains(t, body, "did not confirm the sign-in")
	requireSessions(t, s, 1)
}

// A person the provider knows but Chorus does not is refused with what to do; so is an
// unverified e-mail of an existing user (which stays unlinked), and a verified e-mail whose user
// is linked to another identity (the link does not move).
func TestOIDCUnknownPersonIsRefused(t *testing.T) {
	m := startProvider(t)
	s := oidcStack(t, m)
	jane := s.user("jane@example.com", store.RoleMember)
	try := func(u *mockoidc.MockUser) (int, string) {
		m.QueueUser(u)
		c := oidcClient()
		status, _, body := oidcGet(t, c, s.startOIDC(c))
		return status, body
	}

	status, body := try(&mockoidc.MockUser{Subject: "zed-1", Email: "zed@example.com", EmailVerified: true})
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, body, "Chorus has no user for you: ask an admin to add you (chorus user create")

	status, body = try(&mockoidc.MockUser{Subject: "jane-1", Email: "jane@example.com", EmailVerified: false})
	require.Equal(t, http.StatusForbidden, status, "an unverified e-mail links nobody")
	require.Contains(t, body, "Chorus has no user for you")
	got, err := s.st.UserByUUID(context.Background(), jane.UUID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(got.OIDCSub, "local:"), "still unlinked: %s", got.OIDCSub)

	status, _ = try(&mockoidc.MockUser{Subject: "jane-1", Email: "jane@example.com", EmailVerified: true})
	require.Equal(t, http.StatusSeeOther, status)
	status, body = try(&mockoidc.MockUser{Subject: "mallory-9", Email: "jane@example.com", EmailVerified: true})
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, body, "linked to another account of the sign-in provider")
	requireSessions(t, s, 1)
}

// requireSessions asserts how many console sessions exist.
func requireSessions(t *testing.T, s *stack, want int) {
	t.Helper()
	n, err := s.st.DB.NewSelect().Table("console_sessions").Count(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, want, n)
}

// The configuration names the field to fix; a console without OpenID Connect has no such routes
// and its sign-in page no such button.
func TestOIDCConfigIsChecked(t *testing.T) {
	ok := console.OIDCConfig{Issuer: "https://login.example.com/realm", ClientID: "chorus", ClientSecret: "s",
		RedirectURL: "https://chorus.example.com" + console.OIDCCallbackPath}
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		change func(*console.OIDCConfig)
		want   string
	}{
		{func(o *console.OIDCConfig) { o.Issuer = "http://login.example.com" }, "oidc issuer: \"http://login.example.com\" must use https"},
		{func(o *console.OIDCConfig) { o.Issuer = "login.example.com" }, "oidc issuer: \"login.example.com\" is not a URL"},
		{func(o *console.OIDCConfig) { o.ClientID = "" }, "oidc client id: required"},
		{func(o *console.OIDCConfig) { o.ClientSecret = "" }, "oidc client secret: required"},
		{func(o *console.OIDCConfig) { o.RedirectURL = "https://chorus.example.com/callback" }, "oidc redirect URL"},
	} {
		o := ok
		tc.change(&o)
		require.ErrorContains(t, o.Validate(), tc.want)
	}

	s := startStack(t, "sqlite", stackOptions{})
	status, _, body := oidcGet(t, http.DefaultClient, s.url+"/console/login")
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, body, "/console/login/oidc")
	status, _, _ = oidcGet(t, http.DefaultClient, s.url+"/console/login/oidc")
	require.Equal(t, http.StatusNotFound, status)
}

// The ID token must carry this sign-in's nonce, and the code must be redeemed with this
// sign-in's PKCE verifier: an authorization request changed on its way to the provider (another
// nonce, another challenge) signs nobody in.
func TestOIDCTamperedNonceOrChallengeIsRefused(t *testing.T) {
	m := startProvider(t)
	s := oidcStack(t, m)
	s.user("jane@example.com", store.RoleMember)
	for _, param := range []string{"nonce", "code_challenge"} {
		m.QueueUser(&mockoidc.MockUser{Subject: "jane-1", Email: "jane@example.com", EmailVerified: true})
		c := oidcClient()
		status, authorize, _ := oidcGet(t, c, s.url+"/console/login/oidc")
		require.Equal(t, http.StatusSeeOther, status)
		u, err := url.Parse(authorize)
		require.NoError(t, err)
		q := u.Query()
		require.NotEmpty(t, q.Get(param), "the request carries a %s", param)
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		q.Set(param, "tampered-"+q.Get(param)[:20])
		u.RawQuery = q.Encode()
		status, callback, _ := oidcGet(t, c, u.String())
		require.Equal(t, http.StatusFound, status)
		status, _, body := oidcGet(t, c, callback)
		require.Equal(t, http.StatusUnauthorized, status, param)
		require.Contains(t, body, "did not confirm the sign-in")
	}
	requireSessions(t, s, 0)
}
