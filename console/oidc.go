package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/chorus-dev/chorus/store"
)

// OIDCConfig is the OpenID Connect provider people sign in with (docs/security.md "Console
// sign-in", docs/production.md "Sign-in through your identity provider"). Register Chorus with
// the provider as a confidential web client whose redirect URL is RedirectURL.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL (https; http only on a loopback address), exactly as
	// its ID tokens' iss claim says it; its discovery document is Issuer + "/.well-known/openid-configuration".
	Issuer string
	// ClientID and ClientSecret are the client's credentials at the provider.
	ClientID     string
	ClientSecret string
	// RedirectURL is the console's public callback: <public origin>/console/login/oidc/callback.
	RedirectURL string
	// HTTPClient talks to the provider (discovery, keys, token exchange); nil is a client with a
	// 15 s timeout.
	HTTPClient *http.Client
}

// OIDCCallbackPath is the path of the callback the provider sends the browser back to.
const OIDCCallbackPath = Path + "/login/oidc/callback"

// oidcCookie holds a started sign-in's state, nonce, PKCE verifier and next page for ten
// minutes, on the sign-in paths alone: the callback must come back to the browser that started it.
const (
	oidcCookie    = "chorus_oidc"
	oidcCookieTTL = 10 * time.Minute
)

// The sign-in page's messages for a failed OpenID Connect sign-in; nothing was changed by any.
const (
	errOIDCState = "This sign-in did not start in this browser, was already used, or took longer than 10 minutes. " +
		"Nothing was changed: sign in again."
	errOIDCProvider = "The sign-in provider could not be reached or did not confirm the sign-in. Nothing was changed: " +
		"sign in again, or use a sign-in link (chorus user login-link)."
	errOIDCDenied = "The sign-in provider refused the sign-in (%s). Nothing was changed: sign in again."
)

// Validate checks the configuration and names the field to fix.
func (o *OIDCConfig) Validate() error {
	iss, err := url.Parse(o.Issuer)
	switch {
	case err != nil || iss.Host == "" || (iss.Scheme != "https" && iss.Scheme != "http"):
		return fmt.Errorf("oidc issuer: %q is not a URL (https://login.example.com/realm)", o.Issuer)
	case iss.Scheme == "http" && !loopback(iss.Hostname()):
		return fmt.Errorf("oidc issuer: %q must use https (http only on 127.0.0.1 or localhost)", o.Issuer)
	case o.ClientID == "":
		return errors.New("oidc client id: required (the client's id at the provider)")
	case o.ClientSecret == "":
		return errors.New("oidc client secret: required (set CHORUS_OIDC_CLIENT_SECRET or --oidc-client-secret-file)")
	}
	red, err := url.Parse(o.RedirectURL)
	if err != nil || red.Host == "" || red.Path != OIDCCallbackPath || red.RawQuery != "" {
		return fmt.Errorf("oidc redirect URL: %q must be the console's public origin + %s (set --console-url)",
			o.RedirectURL, OIDCCallbackPath)
	}
	return nil
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// oidcClient is the provider once discovered: discovery runs on the first sign-in (and again
// after a failure), so the console starts while the provider is unreachable.
type oidcClient struct {
	cfg      OIDCConfig
	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// discover is the provider's OAuth 2 configuration and ID token verifier.
func (o *oidcClient) discover(ctx context.Context, now func() time.Time) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.oauth != nil {
		return o.oauth, o.verifier, nil
	}
	ctx, cancel := context.WithTimeout(o.context(ctx), 15*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		return nil, nil, err
	}
	o.oauth = &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.cfg.RedirectURL, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
	o.verifier = p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, Now: now})
	return o.oauth, o.verifier, nil
}

// context carries the provider's HTTP client for go-oidc and oauth2.
func (o *oidcClient) context(ctx context.Context) context.Context {
	hc := o.cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	return context.WithValue(oidc.ClientContext(ctx, hc), oauth2.HTTPClient, hc)
}

// oidcPending is the content of the oidc cookie.
type oidcPending struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
}

// oidcStart sends the browser to the provider: authorization code flow with PKCE (S256), a
// fresh state and nonce, all three kept in the browser's short-lived oidc cookie.
func (c *Console) oidcStart(ctx echo.Context) error {
	if c.oidc == nil {
		return echo.ErrNotFound
	}
	conf, _, err := c.oidc.discover(ctxOf(ctx), c.cfg.Now)
	if err != nil {
		c.log.WarnContext(ctxOf(ctx), "console oidc discovery failed", "issuer", c.oidc.cfg.Issuer, "err", err)
		return c.signInPage(ctx, http.StatusBadGateway, errOIDCProvider)
	}
	p := oidcPending{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(),
		Next: safeNext(ctx.QueryParam("next"))}
	raw, _ := json.Marshal(p)
	c.setOIDCCookie(ctx, base64.RawURLEncoding.EncodeToString(raw), int(oidcCookieTTL.Seconds()))
	to := conf.AuthCodeURL(p.State, oidc.Nonce(p.Nonce), oauth2.S256ChallengeOption(p.Verifier))
	return ctx.Redirect(http.StatusSeeOther, to)
}

// oidcCallback finishes a sign-in: the state must be the one this browser's cookie holds (the
// cookie is spent first, so a callback works once), the code is exchanged with the PKCE
// verifier, the ID token verified (signature, issuer, audience, expiry, then nonce), and the
// person mapped to their user (store.LinkOIDCUser) in the deployment's company.
func (c *Console) oidcCallback(ctx echo.Context) error {
	if c.oidc == nil {
		return echo.ErrNotFound
	}
	p, ok := c.oidcPendingOf(ctx)
	c.setOIDCCookie(ctx, "", -1)
	if !ok || subtle.ConstantTimeCompare([]byte(p.State), []byte(ctx.QueryParam("state"))) != 1 {
		return c.signInPage(ctx, http.StatusBadRequest, errOIDCState)
	}
	if e := ctx.QueryParam("error"); e != "" {
		return c.signInPage(ctx, http.StatusUnauthorized, fmt.Sprintf(errOIDCDenied, e))
	}
	id, err := c.oidcIdentity(ctx, p)
	if err != nil {
		c.log.WarnContext(ctxOf(ctx), "console oidc sign-in not confirmed", "err", err)
		return c.signInPage(ctx, http.StatusUnauthorized, errOIDCProvider)
	}
	company, err := c.app.Store.DefaultCompany(ctxOf(ctx))
	if err != nil {
		return c.failure(ctx, err)
	}
	u, err := c.app.Store.LinkOIDCUser(ctxOf(ctx), company.UUID, id)
	if errors.Is(err, store.ErrNoOIDCUser) || errors.Is(err, store.ErrOIDCLinkedElsewhere) {
		c.log.InfoContext(ctxOf(ctx), "console oidc sign-in refused", "subject", id.Subject, "err", err)
		return c.signInPage(ctx, http.StatusForbidden, err.Error())
	}
	if err != nil {
		return c.failure(ctx, err)
	}
	return c.startSession(ctx, u, p.Next)
}

// oidcIdentity exchanges the callback's code and verifies the ID token it brings.
func (c *Console) oidcIdentity(ctx echo.Context, p oidcPending) (store.OIDCIdentity, error) {
	conf, verifier, err := c.oidc.discover(ctxOf(ctx), c.cfg.Now)
	if err != nil {
		return store.OIDCIdentity{}, err
	}
	rctx, cancel := context.WithTimeout(c.oidc.context(ctxOf(ctx)), 15*time.Second)
	defer cancel()
	tok, err := conf.Exchange(rctx, ctx.QueryParam("code"), oauth2.VerifierOption(p.Verifier))
	var refused *oauth2.RetrieveError
	if errors.As(err, &refused) { // its body may echo the code: keep the provider's error code alone
		return store.OIDCIdentity{}, fmt.Errorf("code exchange refused by the provider: %q", refused.ErrorCode)
	}
	if err != nil {
		return store.OIDCIdentity{}, fmt.Errorf("code exchange: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return store.OIDCIdentity{}, errors.New("the token response has no id_token")
	}
	idt, err := verifier.Verify(rctx, raw)
	if err != nil {
		return store.OIDCIdentity{}, fmt.Errorf("id token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.Nonce)) != 1 {
		return store.OIDCIdentity{}, errors.New("id token: nonce does not match this sign-in")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified *bool  `json:"email_verified"`
	}
	if err := idt.Claims(&claims); err != nil {
		return store.OIDCIdentity{}, fmt.Errorf("id token claims: %w", err)
	}
	return store.OIDCIdentity{Subject: store.OIDCSubject(idt.Issuer, idt.Subject), Email: claims.Email,
		EmailVerified: claims.EmailVerified != nil && *claims.EmailVerified}, nil
}

// oidcPendingOf reads the browser's oidc cookie.
func (c *Console) oidcPendingOf(ctx echo.Context) (oidcPending, bool) {
	var p oidcPending
	ck, err := ctx.Cookie(oidcCookie)
	if err != nil {
		return p, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || json.Unmarshal(raw, &p) != nil || p.State == "" || p.Nonce == "" || p.Verifier == "" {
		return p, false
	}
	return p, true
}

// setOIDCCookie sets (or, maxAge -1, clears) the oidc cookie, sent only to the sign-in paths.
func (c *Console) setOIDCCookie(ctx echo.Context, value string, maxAge int) {
	ctx.SetCookie(&http.Cookie{Name: oidcCookie, Value: value, Path: Path + "/login/oidc", MaxAge: maxAge,
		HttpOnly: true, Secure: c.cfg.Secure || ctx.Request().TLS != nil, SameSite: http.SameSiteLaxMode})
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// oidcEnabled reports whether the sign-in page offers OpenID Connect.
func (c *Console) oidcEnabled() bool { return c.oidc != nil }
