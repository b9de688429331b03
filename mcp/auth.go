package mcp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Principal is the authenticated caller of a request (app.Principal).
type Principal = app.Principal

type principalKey struct{}

func withPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

func principalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// authenticate is the echo middleware in front of POST /api/mcp (docs/rules.md §3.2, §1.4): it accepts
// "Authorization: Bearer cho_...", resolves the key, and puts the Principal in the request
// context. A missing, malformed, unknown, revoked or expired key gets HTTP 401 with a JSON body
// and a WWW-Authenticate challenge; a database failure gets 500.
func (e *Endpoint) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// Every response names its request (docs/operations.md "Logs"): the tool call's log line carries the
		// same id as ref, so an operator finds the line from what the client saw.
		ref := newRef()
		c.Response().Header().Set(RequestIDHeader, ref)
		c.SetRequest(c.Request().WithContext(withRef(withRequestStart(c.Request().Context(), time.Now()), ref)))
		headers := c.Request().Header.Values("Authorization")
		header := strings.Join(headers, ", ")
		key, ok := bearerKey(header)
		if !ok || len(headers) > 1 { // two credentials are none: never guess which one was meant
			e.deps.Metrics.refusal(KindUnauthenticated)
			return unauthorized(c, msgBadKey, strings.TrimSpace(header) != "")
		}
		ctx := c.Request().Context()
		p, err := resolvePrincipal(ctx, e.deps, key)
		switch {
		case errors.Is(err, store.ErrKeyUnknown), errors.Is(err, store.ErrKeyRevoked), errors.Is(err, store.ErrKeyExpired):
			e.deps.Metrics.refusal(KindUnauthenticated)
			if hash, ok := ctx.Value(limitKey{}).(string); ok && e.limits != nil {
				e.limits.disown(hash) // it no longer spends its company's budget (limits.go)
			}
			return unauthorized(c, err.Error(), true)
		case store.IsUnavailable(err):
			// An outage is not the caller's fault and passes: say so, and when to come back.
			e.deps.Log.WarnContext(ctx, "authenticate: database unavailable", "err", err)
			c.Response().Header().Set("Retry-After", "5")
			return rpcError(c, http.StatusServiceUnavailable, codeInternalError, nil,
				"Service unavailable: Chorus cannot reach its database right now; nothing was run. Retry in a few seconds "+
					"(with the same requestId).")
		case err != nil:
			e.deps.Log.ErrorContext(ctx, "authenticate", "err", err)
			return c.JSON(http.StatusInternalServerError, map[string]string{"error": "Internal server error"})
		}
		c.SetRequest(c.Request().WithContext(withPrincipal(ctx, p)))
		return next(c)
	}
}

// resolvePrincipal resolves a plaintext key to its Principal, recording the key's use; the
// store's sentinel errors (unknown, revoked, expired key) pass through unwrapped.
func resolvePrincipal(ctx context.Context, d *Deps, key string) (Principal, error) {
	a, err := d.Store.Authenticate(ctx, key)
	if err != nil {
		return Principal{}, err
	}
	// Recording use is bookkeeping: a locked or slow database must not hold the call up (a
	// key-use write once added seconds unseen), so each write gets a short deadline of its own,
	// and a process records a key or an agent at most once per touchEvery: a burst of one key's
	// requests (hundreds at once) would otherwise each try the same write, and queue every other
	// key's requests behind them for the database's write lock.
	touchCtx, cancel := context.WithTimeout(ctx, touchPatience)
	defer cancel()
	if d.firstTouch("key/" + a.Key.UUID) {
		if err := d.Store.TouchKey(touchCtx, &a.Key); err != nil {
			d.Log.WarnContext(ctx, "could not record key use", "key", a.Key.UUID, "err", err)
		}
	}
	if d.firstTouch("agent/" + a.Agent.UUID) {
		if err := d.Store.TouchAgent(touchCtx, &a.Agent); err != nil {
			d.Log.WarnContext(ctx, "could not record agent activity", "agent", a.Agent.UUID, "err", err)
		}
	}
	p := Principal{
		Caller:  store.Caller{CompanyUUID: a.Agent.CompanyUUID, AgentUUID: a.Agent.UUID, AgentName: a.Agent.Name},
		Perms:   perm.Effective(a.Agent.Roles, a.Agent.Permissions),
		KeyUUID: a.Key.UUID, ReadOnlyKey: a.Key.ReadOnly, Agent: a.Agent, Owner: a.Owner,
	}
	if a.Owner != nil {
		p.Caller.OwnerUUID = a.Owner.UUID
	}
	return p, nil
}

// touchPatience bounds the writes that record a key's and an agent's last use during
// authentication.
const touchPatience = 500 * time.Millisecond

// touchEvery is how often one process records a key's or an agent's use; the store writes it
// at most once a minute anyway (store.TouchKey), so a shorter spell loses nothing.
const touchEvery = 10 * time.Second

// firstTouch reports whether this process has not recorded id's use within touchEvery, and
// marks it recorded now.
func (d *Deps) firstTouch(id string) bool {
	now := time.Now()
	if last, ok := d.touched.Load(id); ok && now.Sub(last.(time.Time)) < touchEvery {
		return false
	}
	d.touched.Store(id, now)
	return true
}

// bearerKey extracts a "cho_" key from an Authorization header value.
func bearerKey(h string) (string, bool) {
	scheme, key, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	if !strings.HasPrefix(key, store.KeyPrefix) || len(key) == len(store.KeyPrefix) {
		return "", false
	}
	return key, true
}

// unauthorized answers 401. RFC 6750: a request with no credentials gets a bare challenge; one
// with bad credentials gets error="invalid_token".
func unauthorized(c echo.Context, msg string, badToken bool) error {
	challenge := `Bearer realm="chorus"`
	if badToken {
		challenge += `, error="invalid_token"`
	}
	c.Response().Header().Set("WWW-Authenticate", challenge)
	return c.JSON(http.StatusUnauthorized, map[string]string{"error": msg})
}

// msgBadKey answers a request whose Authorization header is missing or is no "Bearer cho_..." key.
const msgBadKey = "Missing or invalid API key"

// KeyPrincipal authenticates r by its "Authorization: Bearer cho_..." header as POST /api/mcp
// does, with the same refusal texts, for the other front ends that take an API key (GET
// /api/events). ok is false when r has no Authorization header at all. Errors: a malformed or
// doubled header; the store's ErrKeyUnknown, ErrKeyRevoked, ErrKeyExpired; an outage.
func (e *Endpoint) KeyPrincipal(r *http.Request) (p Principal, ok bool, err error) {
	headers := r.Header.Values("Authorization")
	if len(headers) == 0 {
		return Principal{}, false, nil
	}
	key, good := bearerKey(strings.Join(headers, ", "))
	if !good || len(headers) > 1 {
		return Principal{}, false, errors.New(msgBadKey)
	}
	p, err = resolvePrincipal(r.Context(), e.deps, key)
	return p, err == nil, err
}
