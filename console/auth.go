package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
)

// The cookies: the session (its token; the row has the digest) and, before sign-in, a random
// value the sign-in forms' CSRF token is bound to.
const (
	sessionCookie   = "chorus_session"
	preLoginCookie  = "chorus_signin"
	csrfField       = "_csrf"
	csrfHeader      = "X-CSRF-Token"
	requestIDField  = "requestId"
	principalCtxKey = "console.principal"
	sessionCtxKey   = "console.session"
)

// signedIn is what requireSession puts in the request: the person and their session's CSRF token.
type signedIn struct {
	user *store.User
	csrf string
}

// csrfToken is the CSRF token bound to a secret (a session token, or the pre-sign-in cookie):
// an HMAC of it, so it cannot be guessed without the cookie and needs no storage.
func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("chorus-console-csrf-v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK reports whether the request carries the CSRF token of secret, in the form field
// _csrf or the X-CSRF-Token header.
func csrfOK(ctx echo.Context, secret string) bool {
	got := ctx.FormValue(csrfField)
	if got == "" {
		got = ctx.Request().Header.Get(csrfHeader)
	}
	want := csrfToken(secret)
	return secret != "" && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// errCSRF is the answer to a change without its form's token: nothing was done.
const errCSRF = "This form has expired or did not come from the console (its security token is missing or wrong). " +
	"Nothing was changed: reload the page and submit again."

// requireSession lets a request through with a live session, and sends the browser to sign in
// otherwise (an expired or ended session too). A change (POST) must carry the session's CSRF token.
func (c *Console) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ctx echo.Context) error {
		ck, err := ctx.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			return c.toSignIn(ctx)
		}
		u, _, err := c.app.Store.ConsoleSessionUser(ctx.Request().Context(), ck.Value)
		switch {
		case errors.Is(err, store.ErrNoSession):
			c.clearCookie(ctx, sessionCookie)
			return c.toSignIn(ctx)
		case err != nil:
			return c.failure(ctx, err)
		}
		who := &signedIn{user: u, csrf: csrfToken(ck.Value)}
		ctx.Set(sessionCtxKey, who)
		ctx.Set(principalCtxKey, app.UserPrincipal(u))
		if m := ctx.Request().Method; m == http.MethodGet || m == http.MethodHead {
			return next(ctx)
		}
		if ok, err := c.readForm(ctx); !ok {
			return err
		}
		if !csrfOK(ctx, ck.Value) {
			return c.render(ctx, http.StatusForbidden, "error", page{Title: "Not changed", Error: errCSRF})
		}
		if msg := formTooLarge(ctx.Request().PostForm); msg != "" {
			return c.render(ctx, http.StatusUnprocessableEntity, "error", page{Title: "Not changed", Error: msg})
		}
		return next(ctx)
	}
}

// toSignIn answers a request without a session: a redirect to the sign-in page that comes back
// here afterwards (a GET), or to the sign-in page alone (a POST, whose form is lost).
func (c *Console) toSignIn(ctx echo.Context) error {
	target := Path + "/login"
	if ctx.Request().Method == http.MethodGet {
		target += "?next=" + url.QueryEscape(ctx.Request().URL.RequestURI())
	}
	return ctx.Redirect(http.StatusSeeOther, target)
}

// safeNext is where to go after sign-in: a console path, never another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Path+"/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Path + "/"
	}
	return next
}

// preLoginSecret is the browser's pre-sign-in cookie value, set now if it has none.
func (c *Console) preLoginSecret(ctx echo.Context) string {
	if ck, err := ctx.Cookie(preLoginCookie); err == nil && len(ck.Value) >= 32 {
		return ck.Value
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	v := base64.RawURLEncoding.EncodeToString(b[:])
	c.setCookie(ctx, preLoginCookie, v, 0)
	return v
}

// signInPage shows how to sign in, with a message (an error, or why the person is here).
func (c *Console) signInPage(ctx echo.Context, status int, msg string) error {
	return c.render(ctx, status, "login", page{Title: "Sign in", Error: msg, CSRF: csrfToken(c.preLoginSecret(ctx)),
		Data: map[string]any{"Next": safeNext(ctx.QueryParam("next")), "OIDC": c.oidcEnabled()}})
}

// linkPage is where a sign-in link lands: a button that signs in. Following the link changes
// nothing, so a mail scanner or a link preview cannot spend it.
func (c *Console) linkPage(ctx echo.Context) error {
	return c.render(ctx, http.StatusOK, "link", page{Title: "Sign in", CSRF: csrfToken(c.preLoginSecret(ctx)),
		Data: map[string]any{"Token": ctx.Param("token"), "Next": safeNext(ctx.QueryParam("next"))}})
}

// consumeLink spends a sign-in link and starts a session.
func (c *Console) consumeLink(ctx echo.Context) error {
	ck, err := ctx.Cookie(preLoginCookie)
	if err != nil || !csrfOK(ctx, ck.Value) {
		return c.signInPage(ctx, http.StatusForbidden, errCSRF)
	}
	u, err := c.app.Store.ConsumeLoginLink(ctx.Request().Context(), ctx.FormValue("token"))
	if errors.Is(err, store.ErrLinkUnusable) {
		return c.signInPage(ctx, http.StatusUnauthorized, err.Error())
	}
	if err != nil {
		return c.failure(ctx, err)
	}
	return c.startSession(ctx, u, ctx.FormValue("next"))
}

// startSession signs the person in: a new session row, its cookie, and on to next.
func (c *Console) startSession(ctx echo.Context, u *store.User, next string) error {
	token, err := c.app.Store.StartConsoleSession(ctx.Request().Context(), u, c.cfg.SessionTTL)
	if err != nil {
		return c.failure(ctx, err)
	}
	c.setCookie(ctx, sessionCookie, token, int(c.cfg.SessionTTL.Seconds()))
	c.clearCookie(ctx, preLoginCookie)
	c.log.InfoContext(ctx.Request().Context(), "console sign-in", "user", u.UUID)
	return ctx.Redirect(http.StatusSeeOther, safeNext(next))
}

// logout ends this session (everywhere its cookie is) or, with everywhere=1, all of the
// person's sessions.
func (c *Console) logout(ctx echo.Context) error {
	rctx := ctx.Request().Context()
	ck, _ := ctx.Cookie(sessionCookie)
	var err error
	if ctx.FormValue("everywhere") == "1" {
		_, err = c.app.Store.EndUserConsoleSessions(rctx, c.who(ctx).user.UUID)
	} else if ck != nil {
		err = c.app.Store.EndConsoleSession(rctx, ck.Value)
	}
	if err != nil {
		return c.failure(ctx, err)
	}
	c.clearCookie(ctx, sessionCookie)
	return ctx.Redirect(http.StatusSeeOther, Path+"/login")
}

func (c *Console) setCookie(ctx echo.Context, name, value string, maxAge int) {
	ctx.SetCookie(&http.Cookie{Name: name, Value: value, Path: Path, MaxAge: maxAge, HttpOnly: true,
		Secure: c.cfg.Secure || ctx.Request().TLS != nil, SameSite: http.SameSiteLaxMode})
}

func (c *Console) clearCookie(ctx echo.Context, name string) { c.setCookie(ctx, name, "", -1) }

// who is the signed-in person of a request behind requireSession.
func (c *Console) who(ctx echo.Context) *signedIn {
	w, _ := ctx.Get(sessionCtxKey).(*signedIn)
	return w
}

// request is the use-case request of a form post or page: the person, and as the idempotency
// key the form's hidden requestId bound to what the form asks (formRequestID).
func (c *Console) request(ctx echo.Context) app.Request {
	p, _ := ctx.Get(principalCtxKey).(app.Principal)
	return app.Request{Who: p, RequestID: formRequestID(ctx)}
}

// formRequestID is the idempotency key of a form post (docs/rules.md §8.5): a digest of the
// form's hidden requestId with the path posted to and every other value of the form ("" without
// a requestId, and for a page). A double submit of one form sends the same values, so it applies
// once; the same requestId sent with another action or other values (a form edited after the
// browser's Back) is another key, so it is done as asked, never answered with the first post's
// result as if it were its own. The MCP endpoint refuses such a reuse instead (its ledger,
// store.BeginToolRequest); the console makes a fresh requestId each time it draws a form, so only
// a browser replaying an old page sends one again. The digest also keeps the key short,
// whatever was posted, before it names Temporal updates and derived uuids.
func formRequestID(ctx echo.Context) string {
	req := ctx.Request()
	if req.Method != http.MethodPost {
		return ""
	}
	rid := strings.TrimSpace(ctx.FormValue(requestIDField))
	if rid == "" {
		return ""
	}
	rest := url.Values{}
	for k, v := range req.PostForm {
		if k != csrfField && k != requestIDField {
			rest[k] = v
		}
	}
	h := sha256.New()
	for _, part := range []string{rid, req.URL.Path, rest.Encode()} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "console-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// ctxOf is the request's context.
func ctxOf(ctx echo.Context) context.Context { return ctx.Request().Context() }

// errSessionEnded answers a stream request whose console session has ended.
const errSessionEnded = "Your console session has ended: sign in again"

// SessionPrincipal authenticates r by the console's session cookie, for the other front ends a
// signed-in page calls (GET /api/events). ok is false when r has no session cookie. Errors: a
// session that has ended or expired; an outage.
func (c *Console) SessionPrincipal(r *http.Request) (app.Principal, bool, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return app.Principal{}, false, nil
	}
	u, _, err := c.app.Store.ConsoleSessionUser(r.Context(), ck.Value)
	switch {
	case errors.Is(err, store.ErrNoSession):
		return app.Principal{}, false, errors.New(errSessionEnded)
	case err != nil:
		return app.Principal{}, false, err
	}
	return app.UserPrincipal(u), true, nil
}
