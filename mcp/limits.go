package mcp

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/chorus-dev/chorus/store"
)

// Limits bound what one API key, and one company's keys together, may ask of one API process
// (docs/rules.md §3.8, docs/security.md): a token bucket (Rate requests a second on average, at
// most Burst at once after a quiet spell) and a cap on requests in flight, past which requests
// are refused; and, per key, how many mutating tool calls run at once, past which they wait
// their turn. A zero field turns that limit off; the zero Limits limits nothing.
type Limits struct {
	KeyRate     float64 // requests per second, per API key
	KeyBurst    int     // bucket size, per API key
	KeyInFlight int     // requests being served at once, per API key
	// KeyWrites is how many mutating tool calls (tools that are not read-only) of one key run at
	// once; the key's further ones wait, in order, within KeyInFlight. Lifecycle writes share
	// Temporal and the database with every other key, so a key's burst of them would queue
	// everyone's behind it (BenchmarkNoisyNeighbor); one at a time, it queues only its own.
	KeyWrites int
	// The same, for all the keys of one company together.
	CompanyRate     float64
	CompanyBurst    int
	CompanyInFlight int
}

// DefaultLimits are what `chorus serve` and `chorus dev` apply unless told otherwise. An agent
// driven by a model makes a call every second or two and a few at once; a team of 50 makes a
// few dozen a second. A runaway loop makes hundreds a second, or hundreds at once, and meets
// them at once.
func DefaultLimits() Limits {
	return Limits{KeyRate: 20, KeyBurst: 200, KeyInFlight: 16, KeyWrites: 1,
		CompanyRate: 300, CompanyBurst: 1000, CompanyInFlight: 200}
}

// The limits a refusal names: the "limit" label of chorus_limit_refusals_total.
const (
	LimitKeyRate         = "key_rate"
	LimitKeyInFlight     = "key_in_flight"
	LimitCompanyRate     = "company_rate"
	LimitCompanyInFlight = "company_in_flight"
)

// LimitNames are the limits chorus_limit_refusals_total counts, each exported from the start.
var LimitNames = []string{LimitKeyRate, LimitKeyInFlight, LimitCompanyRate, LimitCompanyInFlight}

// limiter holds one bucket and one in-flight count per key (by the SHA-256 of the key, as the
// store keeps it) and per company.
type limiter struct {
	cfg       Limits
	mu        sync.Mutex
	keys      map[string]*budget
	companies map[string]*budget
	sweptAt   time.Time
}

// budget is the state of one key or company.
type budget struct {
	bucket   *rate.Limiter // nil when the rate limit is off
	inFlight int
	seen     time.Time
	writes   *semaphore.Weighted // a key's turns for mutating calls; made on first use
	company  string              // a key's company, once a request of it authenticated
	// refused: authentication refused the key since (revoked, expired, gone). Its requests are
	// still held to its own budget, but take nothing from the company it no longer acts for.
	refused bool
}

func newLimiter(cfg Limits) *limiter {
	return &limiter{cfg: cfg, keys: map[string]*budget{}, companies: map[string]*budget{}, sweptAt: time.Now()}
}

// off reports whether no limit applies.
func (l *limiter) off() bool {
	c := l.cfg
	return c.KeyRate <= 0 && c.KeyInFlight <= 0 && c.CompanyRate <= 0 && c.CompanyInFlight <= 0 && c.KeyWrites <= 0
}

// writeTurn waits until the key may run one more mutating call (KeyWrites at once) and returns
// what gives the turn back; an error when ctx ends first (the client went away). The key's
// budget exists: the request was admitted, and holds it until it ends.
func (l *limiter) writeTurn(ctx context.Context, key string) (func(), error) {
	if l.cfg.KeyWrites <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	b := budgetFor(l.keys, key, l.cfg.KeyRate, l.cfg.KeyBurst, time.Now())
	if b.writes == nil {
		b.writes = semaphore.NewWeighted(int64(l.cfg.KeyWrites))
	}
	sem := b.writes
	l.mu.Unlock()
	if err := sem.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	return func() { sem.Release(1) }, nil
}

func budgetFor(m map[string]*budget, id string, r float64, burst int, now time.Time) *budget {
	b := m[id]
	if b == nil {
		b = &budget{}
		if r > 0 {
			b.bucket = rate.NewLimiter(rate.Limit(r), max(burst, 1))
		}
		m[id] = b
	}
	b.seen = now
	return b
}

// admitKnown is admit for a key a request authenticated with before (its company is known):
// the request is judged before its key is looked up in the database, so a flood past the
// limits costs no database read. known is false for a key not seen yet (or forgotten when
// idle), which admit judges after authentication.
func (l *limiter) admitKnown(key string) (release func(), refused string, retryAfter time.Duration, known bool) {
	l.mu.Lock()
	kb := l.keys[key]
	company, disowned := "", false
	if kb != nil {
		company, disowned = kb.company, kb.refused
	}
	l.mu.Unlock()
	if company == "" && !disowned {
		return nil, "", 0, false
	}
	release, refused, retryAfter = l.admit(key, company)
	return release, refused, retryAfter, true
}

// disown marks a key authentication refused (revoked, expired or gone) after it had been
// admitted as known: its further requests keep being judged by its own budget before any
// lookup, but spend nothing of its company's, so a revoked runaway key cannot starve the
// company's other keys. A key the limiter does not know stays unknown (no entry is made for
// keys that never authenticated).
func (l *limiter) disown(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kb := l.keys[key]; kb != nil {
		kb.company, kb.refused = "", true
	}
}

// admit takes a slot for one request of key in company ("" for a key authentication refused:
// its own budget only), or says which limit refuses it and after how long a retry may pass. A
// refused request takes nothing; release gives back what an admitted one took.
func (l *limiter) admit(key, company string) (release func(), refused string, retryAfter time.Duration) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	kb := budgetFor(l.keys, key, l.cfg.KeyRate, l.cfg.KeyBurst, now)
	kb.company = company
	cb := &budget{} // a refused key's requests count against no company
	if company != "" {
		cb = budgetFor(l.companies, company, l.cfg.CompanyRate, l.cfg.CompanyBurst, now)
	}
	// In-flight caps first: a request refused for them spends no token.
	if l.cfg.KeyInFlight > 0 && kb.inFlight >= l.cfg.KeyInFlight {
		return nil, LimitKeyInFlight, time.Second
	}
	if l.cfg.CompanyInFlight > 0 && cb.inFlight >= l.cfg.CompanyInFlight {
		return nil, LimitCompanyInFlight, time.Second
	}
	var kr *rate.Reservation
	if kb.bucket != nil {
		kr = kb.bucket.ReserveN(now, 1)
		if d := kr.DelayFrom(now); d > 0 {
			kr.CancelAt(now)
			return nil, LimitKeyRate, d
		}
	}
	if cb.bucket != nil {
		cr := cb.bucket.ReserveN(now, 1)
		if d := cr.DelayFrom(now); d > 0 {
			cr.CancelAt(now)
			if kr != nil {
				kr.CancelAt(now) // the key's token goes back: nothing ran
			}
			return nil, LimitCompanyRate, d
		}
	}
	kb.inFlight++
	cb.inFlight++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			kb.inFlight--
			cb.inFlight--
			l.mu.Unlock()
		})
	}, "", 0
}

// sweep forgets, every minute, the keys and companies idle for ten: their buckets are full
// again, so a new budget is the same. It keeps the maps as small as the set of active keys.
func (l *limiter) sweep(now time.Time) {
	if now.Sub(l.sweptAt) < time.Minute {
		return
	}
	l.sweptAt = now
	for _, m := range []map[string]*budget{l.keys, l.companies} {
		for id, b := range m {
			if b.inFlight == 0 && now.Sub(b.seen) > 10*time.Minute {
				delete(m, id)
			}
		}
	}
}

// limitKnown and limit are the MCP route middlewares around authenticate: they admit the
// request under its key's and its company's budgets, or answer HTTP 429 with Retry-After (whole
// seconds, at least 1) and a JSON-RPC error naming the limit, before the body is read. A key
// that authenticated before is judged by limitKnown, before its database lookup, so refusing a
// flood costs no database read; a key seen for the first time is judged by limit, once
// authenticate has found its company.
//
// Why 429 rather than a tool result with isError: the limit guards every request (tools/list
// and initialize too, not only tools/call), a refusal costs nothing past reading the headers,
// and 429 with Retry-After is what HTTP clients, proxies and the MCP SDKs already understand.
// The TypeScript SDK puts the status and this body's text in the error it raises, so an agent
// reads the same sentence a tool error would give it.
func (e *Endpoint) limitKnown(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if e.limits == nil {
			return next(c)
		}
		headers := c.Request().Header.Values("Authorization")
		key, ok := bearerKey(strings.Join(headers, ", "))
		if !ok || len(headers) > 1 {
			return next(c) // authenticate answers 401
		}
		hash := store.HashKey(key)
		ctx := context.WithValue(c.Request().Context(), limitKey{}, hash)
		release, refused, wait, known := e.limits.admitKnown(hash)
		if !known {
			c.SetRequest(c.Request().WithContext(ctx))
			return next(c)
		}
		if refused != "" {
			return e.tooMany(c, refused, wait)
		}
		defer release()
		c.SetRequest(c.Request().WithContext(context.WithValue(ctx, admittedKey{}, true)))
		return next(c)
	}
}

// limitKey carries the request's key hash from limitKnown to limit; admittedKey marks a
// request limitKnown admitted.
type (
	limitKey    struct{}
	admittedKey struct{}
)

func (e *Endpoint) limit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if e.limits == nil || ctx.Value(admittedKey{}) != nil {
			return next(c)
		}
		p, ok := principalFrom(ctx)
		hash, _ := ctx.Value(limitKey{}).(string)
		if !ok || hash == "" {
			return next(c)
		}
		release, refused, wait := e.limits.admit(hash, p.Caller.CompanyUUID)
		if refused != "" {
			return e.tooMany(c, refused, wait)
		}
		defer release()
		return next(c)
	}
}

// tooMany answers a request a limit refused.
func (e *Endpoint) tooMany(c echo.Context, limit string, wait time.Duration) error {
	e.deps.Metrics.limitRefusal(limit)
	secs := max(1, int(math.Ceil(wait.Seconds())))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return rpcError(c, http.StatusTooManyRequests, codeRateLimited, nil, limitMessage(limit, secs))
}

// codeRateLimited is the JSON-RPC error code of a request refused by a limit (a server error
// code, in the range JSON-RPC leaves to implementations).
const codeRateLimited = -32029

func limitMessage(limit string, secs int) string {
	what := map[string]string{
		LimitKeyRate:         "this API key sent more requests per second than it may",
		LimitKeyInFlight:     "this API key has too many requests running at once",
		LimitCompanyRate:     "your company's agents together sent more requests per second than they may",
		LimitCompanyInFlight: "your company's agents together have too many requests running at once",
	}[limit]
	return fmt.Sprintf("Too many requests: %s, so nothing was run. Retry after %d second(s), and send fewer calls "+
		"at once; a retry with the same requestId is safe.", what, secs)
}
