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
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// env is a running endpoint over a real store, for black-box tests through a real MCP client.
type env struct {
	t        testing.TB
	st       *store.Store
	queue    string // the Temporal task queue of the env's workflows, when it has Temporal
	url      string
	adminKey string
	company  string
	owner    string
}

func TestMain(m *testing.M) { os.Exit(wftest.Main(m)) }

// newEnv is an endpoint over a fresh store, with no Temporal (for tools that only read and
// write records).
func newEnv(t testing.TB, dialect string) *env { return startEnv(t, dialect, false) }

// newFlowEnv is an endpoint over a fresh store, with the Temporal dev server and a worker on
// the env's own task queue, so lifecycle tools run for real.
func newFlowEnv(t testing.TB, dialect string) *env { return startEnv(t, dialect, true) }

// newFlowEnvNoWorker is newFlowEnv without a worker: the test runs its own.
func newFlowEnvNoWorker(t testing.TB, dialect string) *env { return startEnv(t, dialect, false, true) }

func startEnv(t testing.TB, dialect string, flows bool, noWorker ...bool) *env {
	t.Helper()
	st := storetest.Open(t, dialect)
	boot, err := st.EnsureBootstrap(context.Background(), store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
	require.NoError(t, err)
	deps := &Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	queue := ""
	if flows || len(noWorker) > 0 {
		srv := wftest.Server(t)
		queue = "test-" + store.NewUUID()
		if flows {
			w := workflows.NewWorker(srv.Client(), queue, activities.New(st, srv.Client()), worker.Options{})
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)
		}
		deps.Flows = workflows.NewClient(srv.Client(), queue)
	}
	ep, err := NewEndpoint(deps, "test")
	require.NoError(t, err)
	e := echo.New()
	ep.Mount(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &env{t: t, st: st, queue: queue, url: srv.URL + Path, adminKey: boot.Key, company: boot.Company.UUID, owner: boot.Owner.UUID}
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
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// client connects a real MCP client with the given key.
func (e *env) client(key string) *mcpsdk.ClientSession {
	e.t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	tr := &mcpsdk.StreamableClientTransport{Endpoint: e.url,
		HTTPClient: &http.Client{Transport: bearer{key: key, base: http.DefaultTransport}}}
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
