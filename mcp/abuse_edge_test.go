package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// The abuse suite of the HTTP edge (issue 18; docs/security.md): limits per key and per
// company, Host and Origin checks against DNS rebinding, and the headers of every answer.

// edgeProcess is another API process over the env's database with the given limits, edge
// options, metrics and query hooks.
func (e *env) edgeProcess(limits Limits, edge EdgeOptions, m *Metrics, hooks ...bun.QueryHook) *env {
	e.t.Helper()
	p := *e
	p.st = storetest.OpenDSN(e.t, e.dsn)
	for _, h := range hooks {
		p.st.DB.AddQueryHook(h)
	}
	p.deps = &Deps{Store: p.st, Flows: e.deps.Flows, Log: e.deps.Log, CallTimeout: e.deps.CallTimeout,
		Limits: limits, Edge: edge, Metrics: m}
	p.url = serve(e.t, p.deps)
	return &p
}

// post sends one JSON-RPC message with key and extra headers, and returns the answer.
func (e *env) post(path, key, body string, header map[string]string) answer {
	e.t.Helper()
	h := map[string]string{"Content-Type": "application/json", ToolsetsHeader: "all"}
	if key != "" {
		h["Authorization"] = "Bearer " + key
	}
	for k, v := range header {
		h[k] = v
	}
	return e.send(http.MethodPost, path, h, body)
}

func toolCallBody(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// callOK reports whether an answer is a tool result without isError.
func callOK(a answer) bool {
	if a.status != http.StatusOK {
		return false
	}
	var m struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	return json.Unmarshal([]byte(a.body), &m) == nil && m.Result != nil && !m.Result.IsError
}

// requireLimited checks a 429 refusal: Retry-After in whole seconds, at least 1, and a
// JSON-RPC error that says what to do.
func requireLimited(t *testing.T, a answer) int {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, a.status, a.body)
	secs, err := strconv.Atoi(a.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", a.header.Get("Retry-After"))
	require.GreaterOrEqual(t, secs, 1)
	code, msg := a.rpcErr(t)
	require.Equal(t, codeRateLimited, code)
	require.Contains(t, msg, "Too many requests")
	require.Contains(t, msg, "Retry after")
	return secs
}

// searchGate holds every full-text search query until it is opened, counting those it holds.
type searchGate struct {
	held atomic.Int32
	open chan struct{}
}

func (g *searchGate) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if strings.Contains(ev.Query, "search_fts MATCH") || strings.Contains(ev.Query, "::tsquery") {
		g.held.Add(1)
		<-g.open
	}
	return ctx
}

func (g *searchGate) AfterQuery(context.Context, *bun.QueryEvent) {}

// A noisy key (300 calls at once) is refused beyond its in-flight cap with 429 and Retry-After,
// while every call of another key of the same company is admitted and succeeds during the
// flood: with the default limits, the noisy key holds at most DefaultLimits().KeyInFlight
// requests of the process, far below the company's cap. (How long the quiet key's calls take
// meanwhile is measured by BenchmarkNoisyNeighbor, not asserted here.)
func TestNoisyKeyCannotCrowdOutAnother(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			base := newEnv(t, d)
			gate := &searchGate{open: make(chan struct{})}
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			lim := DefaultLimits()
			e := base.edgeProcess(lim, EdgeOptions{}, m, gate)
			noisy := e.agent("Noisy", perm.PMAgent)
			quiet := e.agent("Quiet", perm.PMAgent)
			var project struct{ UUID string }
			ok(t, e.client(quiet), "chorus_admin_create_project", map[string]any{"name": "Apollo"}, &project)

			const flood = 300
			answers := make(chan answer, flood)
			var wg sync.WaitGroup
			for i := range flood {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers <- e.post(Path, noisy, toolCallBody(i, "chorus_search", map[string]any{"query": "apollo"}), nil)
				}()
			}
			// Every call past the cap is refused at once; the admitted ones wait at the gate.
			refused := 0
			for refused < flood-lim.KeyInFlight {
				select {
				case a := <-answers:
					requireLimited(t, a)
					require.Contains(t, a.body, "too many requests running at once")
					refused++
				case <-time.After(time.Minute):
					t.Fatalf("only %d of the %d calls over the cap were refused", refused, flood-lim.KeyInFlight)
				}
			}
			requireEventually(t, func() bool { return gate.held.Load() == int32(lim.KeyInFlight) },
				"the %d admitted calls reach the database", lim.KeyInFlight)
			require.Equal(t, float64(flood-lim.KeyInFlight), testutil.ToFloat64(m.limited.WithLabelValues(LimitKeyInFlight)))

			// While the noisy key's calls hold their slots, the quiet key's calls, reads and
			// writes, are all admitted and succeed.
			for i := range 20 {
				a := e.post(Path, quiet, toolCallBody(1000+i, "chorus_get_project", map[string]any{"projectUuid": project.UUID}), nil)
				require.True(t, callOK(a), "quiet read %d: %d %s", i, a.status, a.body)
				a = e.post(Path, quiet, toolCallBody(2000+i, "chorus_admin_create_project",
					map[string]any{"name": fmt.Sprintf("Quiet %d", i)}), nil)
				require.True(t, callOK(a), "quiet write %d: %d %s", i, a.status, a.body)
			}
			require.Len(t, answers, 0, "no admitted noisy call finished while the gate was shut")

			close(gate.open)
			wg.Wait()
			close(answers)
			for a := range answers {
				require.True(t, callOK(a), "an admitted call runs to its end: %d %s", a.status, a.body)
			}
			// Slots are given back: the noisy key is admitted again.
			require.True(t, callOK(e.post(Path, noisy, toolCallBody(9, "chorus_checkin", nil), nil)))
		})
	}
}

// Past its bucket a key is refused with 429 and a Retry-After that says when a token is back,
// on every path of the MCP route group, while another key and another company are admitted;
// the company's bucket and in-flight cap bind all its keys together.
func TestKeyAndCompanyBudgets(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			base := newEnv(t, d)
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg)
			// One token an hour after a burst of 3 per key; 5 per company.
			e := base.edgeProcess(Limits{KeyRate: 1.0 / 3600, KeyBurst: 3, CompanyRate: 1.0 / 3600, CompanyBurst: 5},
				EdgeOptions{}, m)
			a, b, c := e.agent("A", perm.DeveloperAgent), e.agent("B", perm.DeveloperAgent), e.agent("C", perm.DeveloperAgent)
			other := otherCompanyKey(t, e)
			checkin := toolCallBody(1, "chorus_checkin", nil)
			for range 3 {
				require.True(t, callOK(e.post(Path, a, checkin, nil)))
			}
			// A's bucket is empty: refused on every path of the group, tools/list included.
			for _, path := range []string{Path, Path + "/", Path + "/x/tasks", Path + "/readonly"} {
				secs := requireLimited(t, e.post(path, a, checkin, nil))
				require.Greater(t, secs, 3000, "the next token is about an hour away")
			}
			requireLimited(t, e.post(Path, a, listBody, nil))
			require.Equal(t, float64(5), testutil.ToFloat64(m.limited.WithLabelValues(LimitKeyRate)))
			// B has its own bucket, but the company's holds 5: A took 3, B gets 2.
			require.True(t, callOK(e.post(Path, b, checkin, nil)))
			require.True(t, callOK(e.post(Path, b, checkin, nil)))
			requireLimited(t, e.post(Path, c, checkin, nil))
			require.Equal(t, float64(1), testutil.ToFloat64(m.limited.WithLabelValues(LimitCompanyRate)))
			// Another company is untouched.
			require.True(t, callOK(e.post(Path, other, checkin, nil)))
			require.Equal(t, float64(6), testutil.ToFloat64(m.refusals.WithLabelValues(KindRateLimited)))
		})
	}
}

// The company's in-flight cap binds all its keys; another company's keys are admitted.
func TestCompanyInFlightCap(t *testing.T) {
	base := newEnv(t, "sqlite")
	gate := &searchGate{open: make(chan struct{})}
	e := base.edgeProcess(Limits{KeyInFlight: 10, CompanyInFlight: 3}, EdgeOptions{}, nil, gate)
	a, b := e.agent("A", perm.DeveloperAgent), e.agent("B", perm.DeveloperAgent)
	other := otherCompanyKey(t, e)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.True(t, callOK(e.post(Path, a, toolCallBody(i, "chorus_search", map[string]any{"query": "x"}), nil)))
		}()
	}
	requireEventually(t, func() bool { return gate.held.Load() == 3 }, "three searches held")
	r := e.post(Path, b, toolCallBody(1, "chorus_checkin", nil), nil)
	requireLimited(t, r)
	require.Contains(t, r.body, "your company's agents together have too many requests running at once")
	require.True(t, callOK(e.post(Path, other, toolCallBody(1, "chorus_checkin", nil), nil)))
	close(gate.open)
	wg.Wait()
	require.True(t, callOK(e.post(Path, b, toolCallBody(1, "chorus_checkin", nil), nil)))
}

// otherCompanyKey makes a second company with one agent and returns its key.
func otherCompanyKey(t *testing.T, e *env) string {
	t.Helper()
	ctx := context.Background()
	co := store.Company{UUID: store.NewUUID(), Name: "Other Co", EmailDomains: []string{}, CreatedAt: store.Now(), UpdatedAt: store.Now()}
	_, err := e.st.DB.NewInsert().Model(&co).Exec(ctx)
	require.NoError(t, err)
	_, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: co.UUID, Name: "Outsider", Roles: []string{perm.DeveloperAgent}})
	require.NoError(t, err)
	return key
}

// A DNS-rebinding page reaches the endpoint under its own name (a foreign Host) and sends its
// own Origin: both are refused with 403 before anything runs, a valid key or not. The
// allow-lists admit what they name, and requests without an Origin (every non-browser client)
// are not concerned.
func TestRebindingRequestsAreRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, base *env) {
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		e := base.edgeProcess(Limits{}, EdgeOptions{}, m)
		key := e.agent("PM", perm.PMAgent)
		create := toolCallBody(1, "chorus_admin_create_project", map[string]any{"name": "Planted"})
		projects := func() int {
			n, err := e.st.DB.NewSelect().Table("projects").Where("name = 'Planted'").Count(context.Background())
			require.NoError(t, err)
			return int(n)
		}

		// A foreign Host, on the endpoint and on every other path, with or without a key.
		for _, path := range []string{Path, Path + "/", "/healthz", "/metrics", "/anything"} {
			for _, k := range []string{key, ""} {
				a := e.hostPost(path, "evil.example:80", k, create, nil)
				require.Equal(t, http.StatusForbidden, a.status, "%s %s", path, a.body)
				_, msg := a.rpcErr(t)
				require.Contains(t, msg, "Host header")
				require.Equal(t, "nosniff", a.header.Get("X-Content-Type-Options"))
			}
		}
		// A foreign Origin: the preflight and the call itself.
		for _, origin := range []string{"http://evil.example", "http://evil.example:" + portOf(e.url), "null",
			"http://localhost.evil.example", "file://"} {
			pre := e.send(http.MethodOptions, Path, map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST"}, "")
			require.Equal(t, http.StatusForbidden, pre.status, origin)
			require.Empty(t, pre.header.Get("Access-Control-Allow-Origin"), origin)
			a := e.post(Path, key, create, map[string]string{"Origin": origin})
			require.Equal(t, http.StatusForbidden, a.status, "%s: %s", origin, a.body)
			require.Empty(t, a.header.Get("Access-Control-Allow-Origin"))
			_, msg := a.rpcErr(t)
			require.Contains(t, msg, "origin")
		}
		require.Zero(t, projects(), "no refused request ran")
		require.Equal(t, float64(10), testutil.ToFloat64(m.refusals.WithLabelValues(KindForbiddenHost)))
		require.Equal(t, float64(10), testutil.ToFloat64(m.refusals.WithLabelValues(KindForbiddenOrigin)))

		// Loopback names and origins pass by default; a request without an Origin too.
		for _, host := range []string{"localhost:" + portOf(e.url), "127.0.0.1", "[::1]:8637", "LOCALHOST"} {
			require.True(t, callOK(e.hostPost(Path, host, key, toolCallBody(2, "chorus_checkin", nil), nil)), host)
		}
		for _, origin := range []string{"http://localhost:6274", "http://127.0.0.1:8080", "https://[::1]"} {
			a := e.post(Path, key, toolCallBody(2, "chorus_checkin", nil), map[string]string{"Origin": origin})
			require.True(t, callOK(a), "%s: %s", origin, a.body)
			require.Equal(t, "*", a.header.Get("Access-Control-Allow-Origin"))
		}

		// Configured allow-lists replace the defaults.
		c := base.edgeProcess(Limits{}, EdgeOptions{AllowedHosts: []string{"chorus.example.com"},
			AllowedOrigins: []string{"https://app.example.com"}}, nil)
		require.True(t, callOK(c.hostPost(Path, "chorus.example.com", key, toolCallBody(3, "chorus_checkin", nil),
			map[string]string{"Origin": "https://app.example.com"})))
		require.Equal(t, http.StatusForbidden, c.hostPost(Path, "127.0.0.1", key, listBody, nil).status)
		require.Equal(t, http.StatusForbidden, c.hostPost(Path, "chorus.example.com", key, listBody,
			map[string]string{"Origin": "http://localhost:6274"}).status)
		any := base.edgeProcess(Limits{}, EdgeOptions{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"*"}}, nil)
		require.True(t, callOK(any.hostPost(Path, "anything.example", key, toolCallBody(4, "chorus_checkin", nil),
			map[string]string{"Origin": "https://elsewhere.example"})))
		require.Zero(t, projects())
	})
}

// hostPost is post with the request's Host set to host.
func (e *env) hostPost(path, host, key, body string, header map[string]string) answer {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(e.url, Path)+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ToolsetsHeader, "all")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func portOf(u string) string {
	rest := strings.TrimPrefix(u, "http://")
	hostport, _, _ := strings.Cut(rest, "/")
	_, port, _ := strings.Cut(hostport, ":")
	return port
}

// Every answer of the endpoint, whoever writes it (the edge, the SDK, a tool), says nosniff and
// no-store: answers carry private text.
func TestAnswersAreNotSniffedOrStored(t *testing.T) {
	base := newEnv(t, "sqlite")
	e := base.edgeProcess(Limits{KeyRate: 1.0 / 3600, KeyBurst: 100}, EdgeOptions{}, nil)
	key := e.agent("Dev", perm.DeveloperAgent)
	spent := e.agent("Spent", perm.DeveloperAgent)
	for range 100 {
		require.True(t, callOK(e.post(Path, spent, toolCallBody(1, "chorus_checkin", nil), nil)))
	}
	cases := []struct {
		name   string
		a      answer
		status int
	}{
		{"tool result (JSON)", e.post(Path, key, toolCallBody(1, "chorus_checkin", nil), nil), http.StatusOK},
		{"tool result (event)", e.post(Path, key, toolCallBody(1, "chorus_checkin", nil), map[string]string{"Accept": "text/event-stream"}), http.StatusOK},
		{"tools/list", e.post(Path, key, listBody, nil), http.StatusOK},
		{"tool error", e.post(Path, key, toolCallBody(1, "chorus_get_task", map[string]any{"taskUuid": store.NewUUID()}), nil), http.StatusOK},
		{"unknown method", e.post(Path, key, `{"jsonrpc":"2.0","id":1,"method":"nope"}`, nil), http.StatusOK},
		{"parse error", e.post(Path, key, `{`, nil), http.StatusBadRequest},
		{"no key", e.post(Path, "", listBody, nil), http.StatusUnauthorized},
		{"GET", e.send(http.MethodGet, Path, map[string]string{"Authorization": "Bearer " + key}, ""), http.StatusMethodNotAllowed},
		{"deeper path", e.post(Path+"/deeper", key, listBody, nil), http.StatusNotFound},
		{"foreign origin", e.post(Path, key, listBody, map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden},
		{"limited", e.post(Path, spent, listBody, nil), http.StatusTooManyRequests},
	}
	for _, c := range cases {
		require.Equal(t, c.status, c.a.status, "%s: %s", c.name, c.a.body)
		require.Equal(t, "nosniff", c.a.header.Get("X-Content-Type-Options"), c.name)
		require.Equal(t, "no-store", c.a.header.Get("Cache-Control"), c.name)
	}
}

// markGate holds every SELECT that contains mark until it is opened, counting those it holds.
type markGate struct {
	mark string
	held atomic.Int32
	open chan struct{}
	once sync.Once
}

func (g *markGate) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if strings.HasPrefix(ev.Query, "SELECT") && strings.Contains(ev.Query, g.mark) {
		g.held.Add(1)
		<-g.open
	}
	return ctx
}

func (g *markGate) AfterQuery(context.Context, *bun.QueryEvent) {}

func (g *markGate) release() { g.once.Do(func() { close(g.open) }) }

// A key's mutating calls take turns (Limits.KeyWrites, default 1): of five comments sent at
// once, one reaches the database and the others wait their turn, none refused, while another
// key's comment goes straight through and the key's own reads are not held back.
func TestKeyWritesTakeTurns(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			base := newEnv(t, d)
			admin := base.client(base.adminKey)
			project := createProject(t, admin, "Apollo")
			noisyDoc, quietDoc := createDocument(t, admin, project), createDocument(t, admin, project)
			// The gate holds the noisy comments' first look at their target, before any write.
			gate := &markGate{mark: noisyDoc, open: make(chan struct{})}
			t.Cleanup(gate.release)
			e := base.edgeProcess(DefaultLimits(), EdgeOptions{}, nil, gate)
			noisy, quiet := e.agent("Noisy", perm.PMAgent), e.agent("Quiet", perm.PMAgent)
			answers := make(chan answer, 5)
			for i := range 5 {
				go func() {
					answers <- e.post(Path, noisy, toolCallBody(i, "chorus_add_comment", map[string]any{
						"targetType": "document", "targetUuid": noisyDoc, "content": fmt.Sprintf("noise %d", i)}), nil)
				}()
			}
			requireEventually(t, func() bool { return gate.held.Load() >= 1 }, "the key's first write reaches the database")
			// Meanwhile: the noisy key reads, the quiet key writes.
			require.True(t, callOK(e.post(Path, noisy, toolCallBody(7, "chorus_get_comments", map[string]any{
				"targetType": "document", "targetUuid": quietDoc}), nil)))
			require.True(t, callOK(e.post(Path, quiet, toolCallBody(8, "chorus_add_comment", map[string]any{
				"targetType": "document", "targetUuid": quietDoc, "content": "real work"}), nil)))
			require.Equal(t, int32(1), gate.held.Load(), "the noisy key's other writes wait their turn")
			require.Len(t, answers, 0)
			gate.release()
			for range 5 {
				a := <-answers
				require.True(t, callOK(a), "a write that waited runs: %d %s", a.status, a.body)
			}
			require.Equal(t, 6, countRows(t, e, "comments"))
		})
	}
}

// A key an operator revoked (say, a runaway agent's) takes nothing from its company any more:
// once a request of it is refused 401, its further requests are still held to the key's own
// bucket (they cost no database read past it) but spend none of the company's, so the company's
// other keys keep their budget (docs/rules.md §3.8). Both databases.
func TestRevokedKeyTakesNothingFromItsCompany(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			base := newEnv(t, d)
			// One token an hour after a burst of 100 per key, 5 per company.
			e := base.edgeProcess(Limits{KeyRate: 1.0 / 3600, KeyBurst: 100, CompanyRate: 1.0 / 3600, CompanyBurst: 5,
				KeyInFlight: 16, CompanyInFlight: 200}, EdgeOptions{}, nil)
			a, b := e.agent("Runaway", perm.DeveloperAgent), e.agent("B", perm.DeveloperAgent)
			checkin := toolCallBody(1, "chorus_checkin", nil)
			require.True(t, callOK(e.post(Path, a, checkin, nil)), "the key is known to the limits now")
			_, err := e.st.RevokeKey(context.Background(), e.company, a)
			require.NoError(t, err)
			for range 10 {
				r := e.post(Path, a, checkin, nil)
				require.Equal(t, http.StatusUnauthorized, r.status, "a revoked key is refused as revoked, not limited: %s", r.body)
			}
			// The company's 5: the key's call, the request that found it revoked, and 3 for B.
			for i := range 3 {
				require.True(t, callOK(e.post(Path, b, checkin, nil)), "call %d of another key of the company", i+1)
			}
			requireLimited(t, e.post(Path, b, checkin, nil))
			// The revoked key is still held to its own bucket.
			for range 89 { // its bucket of 100: 1 call and 10 refusals above
				require.Equal(t, http.StatusUnauthorized, e.post(Path, a, checkin, nil).status)
			}
			requireLimited(t, e.post(Path, a, checkin, nil))
		})
	}
}
