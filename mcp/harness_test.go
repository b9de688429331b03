package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// env is a running endpoint over a real store, for black-box tests through a real MCP client.
type env struct {
	t        testing.TB
	st       *store.Store
	dsn      string // the database's DSN ("" with a faulty store)
	queue    string // the Temporal task queue of the env's workflows, when it has Temporal
	url      string
	adminKey string
	company  string
	owner    string

	// With Temporal: its client, the endpoint's dependencies, and the fault hooks in use.
	tc     client.Client
	deps   *Deps
	faults *wftest.ActivityFaults
	// outage switches the database off and on (envOptions.faultyDB).
	outage *storetest.Outage
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(noisyAgentEnv); spec != "" { // BenchmarkNoisyNeighbor's noisy agent
		os.Exit(noisyAgentMain(spec))
	}
	os.Exit(wftest.Main(m))
}

// envOptions shape an env.
type envOptions struct {
	// flows gives the env Temporal (the shared dev server unless temporal is set) and, unless
	// noWorker, a worker on the env's own task queue.
	flows    bool
	noWorker bool
	temporal client.Client
	// faultyDB opens the store through storetest.OpenFaulty.
	faultyDB bool
	// callTimeout bounds each tool call (Deps.CallTimeout); zero keeps the default.
	callTimeout time.Duration
}

// newEnv is an endpoint over a fresh store, with no Temporal (for tools that only read and
// write records).
func newEnv(t testing.TB, dialect string) *env { return startEnv(t, dialect, envOptions{}) }

// newFlowEnv is an endpoint over a fresh store, with the Temporal dev server and a worker on
// the env's own task queue, so lifecycle tools run for real.
func newFlowEnv(t testing.TB, dialect string) *env {
	return startEnv(t, dialect, envOptions{flows: true})
}

// newFlowEnvNoWorker is newFlowEnv without a worker: the test runs its own.
func newFlowEnvNoWorker(t testing.TB, dialect string) *env {
	return startEnv(t, dialect, envOptions{flows: true, noWorker: true})
}

func startEnv(t testing.TB, dialect string, o envOptions) *env {
	t.Helper()
	e := &env{t: t}
	if o.faultyDB {
		e.st, e.outage = storetest.OpenFaulty(t, dialect)
	} else {
		e.dsn = storetest.NewDSN(t, dialect)
		e.st = storetest.OpenDSN(t, e.dsn)
	}
	boot, err := e.st.EnsureBootstrap(context.Background(), store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
	require.NoError(t, err)
	e.adminKey, e.company, e.owner = boot.Key, boot.Company.UUID, boot.Owner.UUID
	var logs io.Writer = io.Discard
	if os.Getenv("CHORUS_TEST_LOG") != "" { // see what a failing test's server logged
		logs = os.Stderr
	}
	e.deps = &Deps{Store: e.st, Log: slog.New(slog.NewTextHandler(logs, nil)), CallTimeout: o.callTimeout}
	if o.flows {
		e.tc = o.temporal
		if e.tc == nil {
			e.tc = wftest.Server(t).Client()
		}
		e.queue = "test-" + store.NewUUID()
		e.faults = wftest.NewActivityFaults()
		if !o.noWorker {
			e.startWorker()
		}
		e.deps.Flows = workflows.NewClient(e.tc, e.queue, e.st)
	}
	e.url = serve(t, e.deps)
	return e
}

// serve mounts an endpoint over deps on a test HTTP server and returns its MCP URL.
func serve(t testing.TB, deps *Deps) string {
	t.Helper()
	ep, err := NewEndpoint(deps, "test")
	require.NoError(t, err)
	ech := echo.New()
	ep.Mount(ech)
	srv := httptest.NewServer(ech)
	t.Cleanup(srv.Close)
	return srv.URL + Path
}

// process is another API process over the env's database: its own store and connection pool,
// with hooks installed before its first query, and its own endpoint, sharing the env's Temporal
// client, agents and keys. It runs no worker.
func (e *env) process(hooks ...bun.QueryHook) *env {
	e.t.Helper()
	require.NotEmpty(e.t, e.dsn, "a process needs the env's DSN")
	p := *e
	p.st = storetest.OpenDSN(e.t, e.dsn)
	for _, h := range hooks {
		p.st.DB.AddQueryHook(h)
	}
	p.deps = &Deps{Store: p.st, Flows: e.deps.Flows, Log: e.deps.Log, CallTimeout: e.deps.CallTimeout}
	p.url = serve(e.t, p.deps)
	return &p
}

// startWorker starts a worker for the env's task queue, with the env's fault hooks; it stops
// when the test ends (stopping it twice is harmless).
func (e *env) startWorker() worker.Worker {
	e.t.Helper()
	w := workflows.NewWorker(e.tc, e.queue, activities.New(e.st, e.tc),
		worker.Options{Interceptors: []interceptor.WorkerInterceptor{e.faults}})
	require.NoError(e.t, w.Start())
	e.t.Cleanup(w.Stop)
	return w
}

// ops is chorus ops over the env.
func (e *env) ops() *ops.Ops {
	return &ops.Ops{Store: e.st, Flows: workflows.NewClient(e.tc, e.queue, e.st)}
}

// requireAgreement fails unless chorus ops check finds every workflow of the env in agreement
// with its rows (polling briefly: a signal may still be on its way).
// repairOnly runs chorus ops check, requires exactly one finding and of kind, repairs it, and
// returns the finding and what repair said it did.
func (e *env) repairOnly(t *testing.T, kind string) (ops.Finding, string) {
	t.Helper()
	ctx := context.Background()
	found, err := e.ops().Check(ctx, "")
	require.NoError(t, err)
	require.Len(t, found, 1, "%+v", found)
	require.Equal(t, kind, found[0].Kind)
	did, err := e.ops().Repair(ctx, found[0])
	require.NoError(t, err)
	return found[0], did
}

func (e *env) requireAgreement() {
	e.t.Helper()
	var found []ops.Finding
	deadline := time.Now().Add(15 * time.Second)
	for {
		var err error
		found, err = e.ops().Check(context.Background(), "")
		require.NoError(e.t, err)
		if len(found) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Empty(e.t, found, "chorus ops check must be clean")
}

// agent creates an agent with the given presets (owned by the company owner) and returns its key.
func (e *env) agent(name string, presets ...string) string {
	e.t.Helper()
	owner := e.owner
	_, key, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: name,
		Roles: presets, OwnerUUID: &owner})
	require.NoError(e.t, err)
	return key
}

type bearer struct {
	key  string
	base http.RoundTripper
	// header is sent with every request (a toolset selection, read-only mode).
	header http.Header
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	for k, v := range b.header {
		r.Header[k] = v
	}
	return b.base.RoundTrip(r)
}

// client connects a real MCP client with the given key, selecting every toolset, so that a
// test reaches every tool its key permits (connectAs chooses otherwise).
func (e *env) client(key string) *mcpsdk.ClientSession {
	e.t.Helper()
	return e.connectAs(key, "", http.Header{ToolsetsHeader: {"all"}})
}

// connectAs connects a real MCP client with the given key to the endpoint path below /api/mcp
// ("" for /api/mcp itself, "x/develop", "readonly") and headers.
func (e *env) connectAs(key, sub string, header http.Header) *mcpsdk.ClientSession {
	e.t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	url := e.url
	if sub != "" {
		url += "/" + sub
	}
	tr := &mcpsdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{key: key, base: http.DefaultTransport, header: header}}}
	s, err := c.Connect(context.Background(), tr, nil)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// call calls a tool and returns its result.
func call(t testing.TB, s *mcpsdk.ClientSession, name string, args any) *mcpsdk.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "tools/call %s", name)
	return res
}

// ok calls a tool that must succeed and decodes its structured result into out.
func ok(t testing.TB, s *mcpsdk.ClientSession, name string, args any, out any) {
	t.Helper()
	res := call(t, s, name, args)
	require.False(t, res.IsError, "%s failed: %s", name, text(res))
	if out != nil {
		// Start from zero: decoding into a used value would merge maps and keep stale fields.
		rv := reflect.ValueOf(out).Elem()
		rv.Set(reflect.Zero(rv.Type()))
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, out), "decode %s result %s", name, b)
	}
}

// decode reads a successful result's structured content.
func decode[T any](t testing.TB, res *mcpsdk.CallToolResult) T {
	t.Helper()
	var out T
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// fails calls a tool that must fail and returns its error text.
func fails(t testing.TB, s *mcpsdk.ClientSession, name string, args any) string {
	t.Helper()
	res := call(t, s, name, args)
	require.True(t, res.IsError, "%s should have failed but returned %s", name, text(res))
	return text(res)
}

func text(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rawPost sends one JSON-RPC body to the endpoint with the given Authorization header value.
func (e *env) rawPost(auth, body string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ToolsetsHeader, "all")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// forEachDialect runs f as a subtest against SQLite and PostgreSQL.
func forEachDialect(t *testing.T, f func(t *testing.T, e *env)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			f(t, newEnv(t, d))
		})
	}
}

// forEachDialectWithFlows is forEachDialect with Temporal and a worker.
func forEachDialectWithFlows(t *testing.T, f func(t *testing.T, e *env)) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			f(t, newFlowEnv(t, d))
		})
	}
}

// requireEventually polls cond until it holds or five seconds pass.
func requireEventually(t testing.TB, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition never held: "+msg, args...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func bunInSlice(ids []string) any { return bun.List(ids) }
