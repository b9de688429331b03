package deploy

// TestProductionTopology is `make test-prod` (deploy/test-prod.sh builds the binaries and runs
// it): the production topology of docs/production.md "Production without Docker", set up from the
// repository's own files and the same ones docker-compose.yml mounts, then driven through MCP.
//
//   - PostgreSQL: two login roles (Chorus, Temporal) and deploy/postgres-init.sql for the three
//     databases; deploy/temporal-setup-schema.sh for Temporal's schemas (temporal-sql-tool);
//   - temporal-server with deploy/temporal-server.yaml and deploy/temporal-dynamicconfig.yaml;
//     `chorus temporal setup` for the namespace and the search attributes (no Temporal CLI);
//   - chorus migrate up, one `chorus serve --role api` and two `chorus serve --role worker`.
//
// Every process is started by this test, and stopped by its pid when the test ends (and, on
// Linux, killed by the kernel if the test process dies first). The databases and roles are
// dropped at the end, and before the start in case an earlier run was killed.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Names of what the test creates in PostgreSQL; dropped before and after. They start with
// $CHORUS_PROD_PREFIX (default chorus_prodtest), so that runs sharing one PostgreSQL server
// (several clones on one machine) do not drop each other's roles and databases.
var (
	prodChorusRole   = prodPrefix()
	prodTemporalRole = prodPrefix() + "_temporal"
	prodChorusDB     = prodPrefix()
	prodTemporalDB   = prodPrefix() + "_temporal"
	prodVisibilityDB = prodPrefix() + "_visibility"
)

func prodPrefix() string {
	p := os.Getenv("CHORUS_PROD_PREFIX")
	if p == "" {
		return "chorus_prodtest"
	}
	for _, r := range p {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			panic("CHORUS_PROD_PREFIX=" + p + ": use lower-case letters, digits and _ only (it names PostgreSQL roles and databases)")
		}
	}
	return p
}

// Offsets from the port base of every port the topology listens on. Temporal's membership
// ports must stay below 32768 (PostgreSQL stores them in a SMALLINT), so the base is picked
// below that, outside Linux's ephemeral range.
const (
	portFrontend = iota
	portFrontendHTTP
	portHistory
	portMatching
	portWorker
	portFrontendMember
	portHistoryMember
	portMatchingMember
	portWorkerMember
	portAPI
	portWorker1
	portWorker2
	portCount
)

// prodTopology is the running topology.
type prodTopology struct {
	t         *testing.T
	root      string // the repository
	bin       string // chorus, temporal-server, temporal-sql-tool, temporal
	work      string // logs
	base      int
	pgAdmin   string // superuser URL (database postgres)
	pgHost    string
	pgPort    string
	chorusPW  string
	temporPW  string
	adminKey  string
	mu        sync.Mutex
	procs     map[string]*prodProc
	temporal  client.Client
	st        *store.Store
	serverEnv []string
}

type prodProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func TestProductionTopology(t *testing.T) {
	binDir := os.Getenv("CHORUS_PROD_BIN_DIR")
	if binDir == "" {
		t.Skip("the production topology test runs with `make test-prod` (deploy/test-prod.sh), which builds its binaries")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	tp := &prodTopology{t: t, root: root, bin: binDir, procs: map[string]*prodProc{}}
	tp.work = os.Getenv("CHORUS_PROD_WORK_DIR")
	if tp.work == "" {
		tp.work = t.TempDir()
	}
	for _, b := range []string{"chorus", "temporal-server", "temporal-sql-tool"} {
		_, err := os.Stat(filepath.Join(binDir, b))
		require.NoError(t, err, "CHORUS_PROD_BIN_DIR has no %s: run the test through `make test-prod`", b)
	}
	_, err = exec.LookPath("psql")
	require.NoError(t, err, "psql (the PostgreSQL client) is needed: apt-get install postgresql-client")
	schemaRoot := os.Getenv("CHORUS_PROD_SCHEMA_ROOT")
	require.DirExists(t, filepath.Join(schemaRoot, "temporal", "versioned"),
		"CHORUS_PROD_SCHEMA_ROOT must be the schema/postgresql/v12 directory of the go.temporal.io/server module")
	tp.pgAdmin = prodAdminDSN(t)
	u, err := url.Parse(tp.pgAdmin)
	require.NoError(t, err)
	tp.pgHost, tp.pgPort = u.Hostname(), u.Port()
	if tp.pgPort == "" {
		tp.pgPort = "5432"
	}
	tp.base = prodPortBase(t)
	tp.chorusPW, tp.temporPW = prodSecret(12), prodSecret(12)
	tp.adminKey = "cho_" + prodSecret(33)
	t.Logf("ports %d-%d, logs in %s", tp.base, tp.base+portCount-1, tp.work)

	tp.dropDatabases()
	t.Cleanup(tp.dropDatabases)
	t.Cleanup(tp.stopAll) // runs first (cleanups run last-in first-out): processes, then databases
	t.Cleanup(func() {
		if t.Failed() {
			tp.dumpLogs()
		}
	})

	start := time.Now()
	tp.createDatabases()
	tp.run("temporal-schema", tp.temporalDBEnv("TEMPORAL_SCHEMA_ROOT="+schemaRoot, "SKIP_DB_CREATE=true"),
		"sh", filepath.Join(root, deploySchemaScript))
	tp.startTemporal()
	tp.run("temporal-namespace", []string{"TEMPORAL_ADDRESS=" + tp.temporalAddress(), "TEMPORAL_NAMESPACE=default",
		"TEMPORAL_NAMESPACE_RETENTION=24h"}, filepath.Join(binDir, "chorus"), "temporal", "setup")
	tp.run("chorus-migrate", tp.chorusEnv(), filepath.Join(binDir, "chorus"), "migrate", "up")
	tp.startChorus("api", portAPI, "CHORUS_BOOTSTRAP_ADMIN_KEY="+tp.adminKey)
	tp.startChorus("worker-1", portWorker1)
	tp.startChorus("worker-2", portWorker2)
	for _, p := range []int{portAPI, portWorker1, portWorker2} {
		tp.waitReady(p)
	}
	t.Logf("topology up in %s", time.Since(start).Round(time.Millisecond))

	ctx := context.Background()
	tp.temporal, err = client.Dial(client.Options{HostPort: tp.temporalAddress(), Namespace: "default",
		DataConverter: workflows.DataConverter()})
	require.NoError(t, err)
	t.Cleanup(tp.temporal.Close)
	tp.st, err = store.Open(ctx, tp.chorusURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tp.st.Close() })

	if args := os.Getenv("CHORUS_PROD_BENCH"); args != "" {
		// make bench-prod: `chorus bench` against this topology instead of the scenarios. The
		// reads phase is left out: it would seed workflow-less tasks into the live database.
		benchArgs := append([]string{"bench", "--endpoint", tp.mcpURL(), "--key", tp.adminKey,
			"--temporal-address", tp.temporalAddress(), "--database-url", tp.chorusURL(),
			"--phases", "floors,single,agents,race,bulk"}, strings.Fields(strings.TrimPrefix(args, "-"))...)
		cmd := tp.command(nil, filepath.Join(binDir, "chorus"), benchArgs...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		require.NoError(t, cmd.Run(), "chorus bench")
		tp.logConnections()
		return
	}
	t.Run("IdeaToDone", tp.ideaToDone)
	t.Run("WorkerKilledDuringApproval", tp.workerKilledDuringApproval)
	t.Run("TemporalRestartDuringCalls", tp.temporalRestartDuringCalls)
	t.Run("OpsCheckClean", func(t *testing.T) {
		out, err := tp.output(tp.chorusEnv(), filepath.Join(binDir, "chorus"), "ops", "check")
		require.NoError(t, err, "chorus ops check is not clean:\n%s", out)
		require.Contains(t, out, "clean")
	})
	tp.logConnections()
}

// logConnections logs how many PostgreSQL connections each role holds (docs/production.md,
// "Scaling each part").
func (tp *prodTopology) logConnections() {
	out, err := tp.output(nil, "psql", tp.pgAdmin, "-X", "-tA", "-c",
		fmt.Sprintf("SELECT usename || ': ' || count(*) FROM pg_stat_activity WHERE usename IN ('%s', '%s') GROUP BY usename",
			prodChorusRole, prodTemporalRole))
	if err == nil {
		tp.t.Logf("PostgreSQL connections now (%s: api + 2 workers; %s: temporal-server): %s", prodChorusRole,
			prodTemporalRole, strings.Join(strings.Fields(out), " "))
	}
}

// ---- set-up ----

func prodAdminDSN(t *testing.T) string {
	if dsn := os.Getenv("CHORUS_PROD_PG_ADMIN_DSN"); dsn != "" {
		return dsn
	}
	dsn := os.Getenv("CHORUS_TEST_PG_DSN")
	require.NotEmpty(t, dsn, "set CHORUS_PROD_PG_ADMIN_DSN (a PostgreSQL superuser URL) or CHORUS_TEST_PG_DSN")
	u, err := url.Parse(dsn)
	require.NoError(t, err, "CHORUS_TEST_PG_DSN")
	u.Path = "/postgres"
	return u.String()
}

// prodPortBase finds portCount consecutive free ports between 20000 and 32000.
func prodPortBase(t *testing.T) int {
	for range 100 {
		base := 20000 + mrand.IntN(1200)*10
		free := true
		for i := range portCount {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				free = false
				break
			}
			_ = l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("found no free port range below 32768")
	return 0
}

func prodSecret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (tp *prodTopology) port(off int) string { return strconv.Itoa(tp.base + off) }

func (tp *prodTopology) temporalAddress() string { return "127.0.0.1:" + tp.port(portFrontend) }

func (tp *prodTopology) chorusURL() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(prodChorusRole, tp.chorusPW),
		Host: net.JoinHostPort(tp.pgHost, tp.pgPort), Path: "/" + prodChorusDB, RawQuery: "sslmode=disable"}
	return u.String()
}

func (tp *prodTopology) mcpURL() string { return "http://127.0.0.1:" + tp.port(portAPI) + "/api/mcp" }

// temporalDBEnv is what temporal-setup-schema.sh and temporal-server read to reach their
// databases (the same variables as docker-compose.yml's x-temporal-db-env).
func (tp *prodTopology) temporalDBEnv(extra ...string) []string {
	return append([]string{"DB=postgres12", "POSTGRES_SEEDS=" + tp.pgHost, "DB_PORT=" + tp.pgPort,
		"POSTGRES_USER=" + prodTemporalRole, "POSTGRES_PWD=" + tp.temporPW,
		"DBNAME=" + prodTemporalDB, "VISIBILITY_DBNAME=" + prodVisibilityDB}, extra...)
}

func (tp *prodTopology) chorusEnv(extra ...string) []string {
	return append([]string{"CHORUS_DATABASE_URL=" + tp.chorusURL(), "TEMPORAL_ADDRESS=" + tp.temporalAddress(),
		"TEMPORAL_NAMESPACE=default", "CHORUS_LOG_LEVEL=warn"}, extra...)
}

// psql runs psql as the superuser.
func (tp *prodTopology) psql(args ...string) {
	tp.t.Helper()
	out, err := tp.output(nil, "psql", append([]string{tp.pgAdmin, "-X", "-q", "-v", "ON_ERROR_STOP=1"}, args...)...)
	require.NoError(tp.t, err, "psql %v:\n%s", args, out)
}

func (tp *prodTopology) dropDatabases() {
	for _, db := range []string{prodChorusDB, prodTemporalDB, prodVisibilityDB} {
		tp.psql("-c", fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", db))
	}
	for _, r := range []string{prodChorusRole, prodTemporalRole} {
		tp.psql("-c", "DROP ROLE IF EXISTS "+r)
	}
}

// createDatabases makes the two roles (docs/production.md "Production without Docker", step 2) and runs
// deploy/postgres-init.sql, which compose runs at the first start of its postgres service.
func (tp *prodTopology) createDatabases() {
	tp.psql("-c", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", prodChorusRole, tp.chorusPW),
		"-c", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", prodTemporalRole, tp.temporPW))
	tp.psql("-v", "chorus_db="+prodChorusDB, "-v", "chorus_owner="+prodChorusRole,
		"-v", "temporal_db="+prodTemporalDB, "-v", "visibility_db="+prodVisibilityDB, "-v", "temporal_owner="+prodTemporalRole,
		"-f", filepath.Join(tp.root, deployInitSQL))
}

func (tp *prodTopology) startTemporal() {
	tp.serverEnv = tp.temporalDBEnv(
		"FRONTEND_GRPC_PORT="+tp.port(portFrontend), "FRONTEND_HTTP_PORT="+tp.port(portFrontendHTTP),
		"HISTORY_GRPC_PORT="+tp.port(portHistory), "MATCHING_GRPC_PORT="+tp.port(portMatching),
		"WORKER_GRPC_PORT="+tp.port(portWorker),
		"FRONTEND_MEMBERSHIP_PORT="+tp.port(portFrontendMember), "HISTORY_MEMBERSHIP_PORT="+tp.port(portHistoryMember),
		"MATCHING_MEMBERSHIP_PORT="+tp.port(portMatchingMember), "WORKER_MEMBERSHIP_PORT="+tp.port(portWorkerMember),
		"DYNAMIC_CONFIG_FILE_PATH="+filepath.Join(tp.root, deployDynamicConfig),
		"LOG_LEVEL=warn")
	tp.start("temporal-server", tp.serverEnv, filepath.Join(tp.bin, "temporal-server"),
		"--config-file", filepath.Join(tp.root, deployServerConfig), "--allow-no-auth", "start")
}

func (tp *prodTopology) startChorus(name string, port int, extra ...string) {
	role := "worker"
	if name == "api" {
		role = "api"
	}
	tp.start(name, tp.chorusEnv(append(extra, "CHORUS_ADDR=127.0.0.1:"+tp.port(port))...),
		filepath.Join(tp.bin, "chorus"), "serve", "--role", role)
}

// ---- processes ----

func (tp *prodTopology) logFile(name string) string { return filepath.Join(tp.work, name+".log") }

// command is a process of the topology, with PATH reaching the built binaries first.
func (tp *prodTopology) command(env []string, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = tp.root
	cmd.Env = append(os.Environ(), "PATH="+tp.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = prodProcAttr()
	return cmd
}

// run runs a one-shot step to completion, its output going to its log.
func (tp *prodTopology) run(name string, env []string, bin string, args ...string) {
	tp.t.Helper()
	start := time.Now()
	out, err := tp.output(env, bin, args...)
	_ = os.WriteFile(tp.logFile(name), []byte(out), 0o644)
	require.NoError(tp.t, err, "%s failed:\n%s", name, out)
	tp.t.Logf("%s: done in %s", name, time.Since(start).Round(time.Millisecond))
}

func (tp *prodTopology) output(env []string, bin string, args ...string) (string, error) {
	cmd := tp.command(env, bin, args...)
	cmd.WaitDelay = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() {
		<-ctx.Done()
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	}()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start starts a long-running process; its output is appended to its log.
func (tp *prodTopology) start(name string, env []string, bin string, args ...string) *prodProc {
	tp.t.Helper()
	f, err := os.OpenFile(tp.logFile(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(tp.t, err)
	cmd := tp.command(env, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(tp.t, cmd.Start(), "start %s", name)
	p := &prodProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	tp.mu.Lock()
	tp.procs[name] = p
	tp.mu.Unlock()
	return p
}

// stop ends a process by its pid: SIGTERM, then SIGKILL after 20 s.
func (p *prodProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *prodProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (tp *prodTopology) proc(name string) *prodProc {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.procs[name]
}

// stopAll stops Chorus first, then Temporal.
func (tp *prodTopology) stopAll() {
	tp.mu.Lock()
	procs := tp.procs
	tp.procs = map[string]*prodProc{}
	tp.mu.Unlock()
	var wg sync.WaitGroup
	for name, p := range procs {
		if name != "temporal-server" {
			wg.Go(p.stop)
		}
	}
	wg.Wait()
	if p := procs["temporal-server"]; p != nil {
		p.stop()
	}
}

func (tp *prodTopology) dumpLogs() {
	entries, _ := os.ReadDir(tp.work)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(tp.work, e.Name()))
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		tp.t.Logf("---- %s (last %d lines) ----\n%s", e.Name(), len(lines), strings.Join(lines, "\n"))
	}
}

// waitReady waits for a chorus process's /readyz (database and Temporal both answer).
func (tp *prodTopology) waitReady(port int) {
	tp.t.Helper()
	u := "http://127.0.0.1:" + tp.port(port) + "/readyz"
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(u)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(tp.t, time.Now().Before(deadline), "%s did not become ready (last error %v)", u, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- helpers for the scenarios ----

func (tp *prodTopology) agent(t *testing.T, key string) *mcpclient.Agent {
	a, err := mcpclient.Connect(context.Background(), tp.mcpURL(), key, &mcpsdk.Implementation{Name: "chorus-test-prod"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// newAgentKey creates an agent with `chorus agent create`, as README's walkthrough does.
func (tp *prodTopology) newAgentKey(t *testing.T, name, preset string) string {
	out, err := tp.output(tp.chorusEnv(), filepath.Join(tp.bin, "chorus"), "agent", "create", "--name", name,
		"--preset", preset, "--key-only")
	require.NoError(t, err, out)
	key := strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(key, "cho_"), "chorus agent create printed %q", out)
	return key
}

// do calls a tool and returns its structured result; a tool error fails the test.
func do(t *testing.T, a *mcpclient.Agent, tool string, args map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, a.Call(context.Background(), tool, args, &out), "%s %v", tool, args)
	return out
}

func str(t *testing.T, v map[string]any, path string) string {
	t.Helper()
	f, err := mcpclient.Field(v, path)
	require.NoError(t, err)
	return fmt.Sprint(f)
}

// eventually retries a call that may answer "Still in progress" until it gives its outcome.
func eventually(t *testing.T, within time.Duration, a *mcpclient.Agent, tool string, args map[string]any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var out map[string]any
		err := a.Call(context.Background(), tool, args, &out)
		if err == nil {
			return out
		}
		var te *mcpclient.ToolError
		retryable := !errors.As(err, &te) || strings.HasPrefix(te.Text, "Still in progress") ||
			strings.Contains(te.Text, "try again")
		require.True(t, retryable, "%s: %v", tool, err)
		require.True(t, time.Now().Before(deadline), "%s did not complete within %s: %v", tool, within, err)
		time.Sleep(500 * time.Millisecond)
	}
}

// workflowsMatching polls a visibility query until it returns want (visibility lags writes).
func (tp *prodTopology) workflowsMatching(t *testing.T, query string, want ...string) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		got = got[:0]
		var token []byte
		for {
			resp, err := tp.temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
				Query: query, NextPageToken: token})
			require.NoError(t, err, "query %s", query)
			for _, e := range resp.GetExecutions() {
				got = append(got, e.GetExecution().GetWorkflowId())
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		if slices.Equal(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))) {
			return
		}
		if time.Now().After(deadline) {
			require.ElementsMatch(t, want, got, "visibility query %s", query)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (tp *prodTopology) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, tp.st.DB.NewRaw("SELECT count(*) FROM "+q, args...).Scan(context.Background(), &n))
	return n
}

// ---- scenarios ----

const prodDoc = "This document explains the feature, the users it serves, and what success looks like, in enough words to pass validation."

// ideaToDone is README "Drive one idea to done from a shell", through the api process, with
// docs/operations.md "The Temporal UI": search-attribute queries checked on the way.
func (tp *prodTopology) ideaToDone(t *testing.T) {
	admin := tp.agent(t, tp.adminKey)
	p := str(t, do(t, admin, "chorus_admin_create_project", map[string]any{"name": "Demo"}), "uuid")
	idea := str(t, do(t, admin, "chorus_pm_create_idea", map[string]any{"projectUuid": p, "title": "Dark mode",
		"content": "Let users pick a dark theme"}), "uuid")
	do(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea})
	do(t, admin, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "minimal",
		"questions": []map[string]any{{"id": "q1", "text": "Follow the OS setting?", "category": "functional",
			"options": []map[string]any{{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}}}}})
	do(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
		"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "yes", "customText": nil}}})
	require.Equal(t, "resolved", str(t, do(t, admin, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}), "status"))

	pr := str(t, do(t, admin, "chorus_pm_create_proposal", map[string]any{"projectUuid": p, "title": "Dark mode v1",
		"description": "Ship a dark theme", "inputType": "idea", "inputUuids": []string{idea}}), "uuid")
	do(t, admin, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": pr, "type": "prd", "title": "Dark mode PRD", "content": prodDoc})
	do(t, admin, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": pr, "type": "tech_design", "title": "Theme tokens", "content": prodDoc})
	d1 := str(t, do(t, admin, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": pr, "title": "Theme tokens", "priority": "high",
		"acceptanceCriteriaItems": []map[string]any{{"description": "tokens defined for both themes"}}}), "draftUuid")
	do(t, admin, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": pr, "title": "Settings toggle",
		"dependsOnDraftUuids": []string{d1}, "acceptanceCriteriaItems": []map[string]any{{"description": "toggle persists"}}})
	require.Equal(t, "true", str(t, do(t, admin, "chorus_pm_validate_proposal", map[string]any{"proposalUuid": pr}), "valid"))
	do(t, admin, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": pr})
	t1 := str(t, do(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": pr}), "materializedTasks.0.taskUuid")
	t2 := str(t, do(t, admin, "chorus_get_task", map[string]any{"taskUuid": t1}), "dependedBy.0.uuid")

	devKey := tp.newAgentKey(t, "Dev", "developer_agent")
	dev := tp.agent(t, devKey)
	devUUID := str(t, do(t, dev, "chorus_checkin", map[string]any{}), "agent.uuid")
	for i, task := range []string{t1, t2} {
		do(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task})
		do(t, dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"})
		c := str(t, do(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}), "acceptanceCriteriaItems.0.uuid")
		do(t, dev, "chorus_report_criteria_self_check", map[string]any{"taskUuid": task,
			"criteria": []map[string]any{{"uuid": c, "devStatus": "passed", "devEvidence": "tested"}}})
		require.Equal(t, "to_verify", str(t, do(t, dev, "chorus_submit_for_verify", map[string]any{"taskUuid": task}), "status"))
		if i == 0 {
			// docs/operations.md: waiting for review.
			tp.workflowsMatching(t, `ChorusEntity = "task" AND ChorusStatus = "to_verify"`, vocab.TaskID(t1))
		}
		require.Equal(t, "passed", str(t, do(t, admin, "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": task,
			"criteria": []map[string]any{{"uuid": c, "status": "passed"}}}), "status"))
		require.Equal(t, "done", str(t, do(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}), "status"))
	}
	do(t, admin, "chorus_create_report", map[string]any{"proposalUuid": pr, "title": "Dark mode shipped", "content": "Both tasks verified."})
	require.Equal(t, "done", str(t, do(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": idea}), "derivedStatus"))

	// docs/operations.md "The Temporal UI": the search-attribute queries find exactly these workflows.
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusProjectUuid = %q`, p), vocab.IdeaID(idea), vocab.ProposalID(pr), vocab.TaskID(t1), vocab.TaskID(t2))
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusAssignee = %q`, devUUID), vocab.TaskID(t1), vocab.TaskID(t2))
	// The admin created all four and holds the idea; a proposal has no assignee.
	adminUUID := str(t, do(t, admin, "chorus_checkin", map[string]any{}), "agent.uuid")
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusCreator = %q AND ChorusProjectUuid = %q`, adminUUID, p), vocab.IdeaID(idea), vocab.ProposalID(pr), vocab.TaskID(t1), vocab.TaskID(t2))
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusAssignee = %q AND ChorusProjectUuid = %q`, adminUUID, p), vocab.IdeaID(idea))
	tp.workflowsMatching(t, `ChorusEntity = "task" AND ChorusStatus = "to_verify"`)
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusEntity = "task" AND ChorusStatus = "done" AND ChorusProjectUuid = %q`, p), vocab.TaskID(t1), vocab.TaskID(t2))
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusEntity IN ("idea", "proposal") AND ChorusProjectUuid = %q`, p), vocab.IdeaID(idea), vocab.ProposalID(pr))
	tp.workflowsMatching(t, fmt.Sprintf(`ChorusEntity = "idea" AND ChorusProgress = "done" AND ChorusProjectUuid = %q`, p), vocab.IdeaID(idea))
	n, err := tp.temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
		Query: fmt.Sprintf(`ChorusProjectUuid = %q AND ExecutionStatus = "Running"`, p)})
	require.NoError(t, err)
	require.EqualValues(t, 4, n.GetCount(), "the idea, the proposal and both tasks keep running workflows")
}

// workerKilledDuringApproval: a 40-task approval's write is in the middle of its transaction
// (held on a lock this test takes on the tasks table) when the worker running it is killed
// (SIGKILL). The transaction dies with it; the other worker retries the write once its attempt
// times out; the approval completes with exactly one set of tasks, each with its workflow.
func (tp *prodTopology) workerKilledDuringApproval(t *testing.T) {
	ctx := context.Background()
	admin := tp.agent(t, tp.adminKey)
	p := str(t, do(t, admin, "chorus_admin_create_project", map[string]any{"name": "Apollo"}), "uuid")
	idea := str(t, do(t, admin, "chorus_pm_create_idea", map[string]any{"projectUuid": p, "title": "Big idea", "content": "Forty tasks"}), "uuid")
	do(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea})
	do(t, admin, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "minimal",
		"questions": []map[string]any{{"id": "q1", "text": "Now?", "category": "functional",
			"options": []map[string]any{{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}}}}})
	do(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
		"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "yes", "customText": nil}}})
	do(t, admin, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea})
	pr := str(t, do(t, admin, "chorus_pm_create_proposal", map[string]any{"projectUuid": p, "title": "Forty",
		"description": "Forty tasks at once", "inputType": "idea", "inputUuids": []string{idea}}), "uuid")
	do(t, admin, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": pr, "type": "prd", "title": "PRD", "content": prodDoc})
	for i := range 40 {
		do(t, admin, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": pr, "title": fmt.Sprintf("Task %02d", i),
			"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}})
	}
	do(t, admin, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": pr})

	// Hold every insert into tasks: the approval's transaction stops half-way.
	conn, err := tp.st.DB.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "LOCK TABLE tasks IN EXCLUSIVE MODE")
	require.NoError(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			require.NoError(t, tx.Rollback())
		}
	}
	defer release()

	approve := map[string]any{"proposalUuid": pr, "requestId": "approve-40"}
	go func() {
		var out map[string]any
		_ = admin.Call(ctx, "chorus_admin_approve_proposal", approve, &out) // answered below, by its retry
	}()

	// Find the worker running ApplyApproval (its identity starts with its pid) and kill it.
	var victim *prodProc
	deadline := time.Now().Add(30 * time.Second)
	for victim == nil {
		require.True(t, time.Now().Before(deadline), "ApplyApproval never started")
		time.Sleep(100 * time.Millisecond)
		desc, err := tp.temporal.DescribeWorkflowExecution(ctx, vocab.ProposalID(pr), "")
		if err != nil {
			continue
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityType().GetName() != "ApplyApproval" || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
				continue
			}
			pid, _, _ := strings.Cut(a.GetLastWorkerIdentity(), "@")
			for _, name := range []string{"worker-1", "worker-2"} {
				if w := tp.proc(name); w != nil && strconv.Itoa(w.cmd.Process.Pid) == pid {
					victim = w
				}
			}
			require.NotNil(t, victim, "ApplyApproval runs on %q, not one of the test's workers", a.GetLastWorkerIdentity())
		}
	}
	victim.kill()
	t.Logf("killed %s (pid %d) in the middle of the approval's transaction", victim.name, victim.cmd.Process.Pid)
	release()
	require.Zero(t, tp.count(t, "tasks WHERE proposal_uuid = ?", pr), "the killed worker's transaction committed nothing")

	// As a supervisor would: the killed worker comes back (the other one does the retry).
	port := portWorker1
	if victim.name == "worker-2" {
		port = portWorker2
	}
	tp.startChorus(victim.name, port)
	tp.waitReady(port)

	out := eventually(t, 2*time.Minute, admin, "chorus_admin_approve_proposal", approve)
	tasks, _ := mcpclient.Field(out, "materializedTasks")
	require.Len(t, tasks, 40)
	require.Equal(t, 40, tp.count(t, "tasks WHERE proposal_uuid = ?", pr), "exactly one set of tasks")
	require.Equal(t, 1, tp.count(t, "documents WHERE proposal_uuid = ?", pr))
	require.Equal(t, 40, tp.count(t, "acceptance_criteria WHERE task_uuid IN (SELECT uuid FROM tasks WHERE proposal_uuid = ?)", pr))
	require.Equal(t, 1, tp.count(t, "activities WHERE target_uuid = ? AND action = 'approved'", pr))
	for _, m := range tasks.([]any) {
		id := vocab.TaskID(fmt.Sprint(m.(map[string]any)["taskUuid"]))
		desc, err := tp.temporal.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err, id)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(), id)
	}
}

// temporalRestartDuringCalls: temporal-server is stopped and started again while claims are in
// flight; each claim completes (or its retry with the same requestId does), once.
func (tp *prodTopology) temporalRestartDuringCalls(t *testing.T) {
	admin := tp.agent(t, tp.adminKey)
	dev := tp.agent(t, tp.newAgentKey(t, "Dev2", "developer_agent"))
	p := str(t, do(t, admin, "chorus_admin_create_project", map[string]any{"name": "Restart"}), "uuid")
	var specs []map[string]any
	for i := range 6 {
		specs = append(specs, map[string]any{"title": fmt.Sprintf("T%d", i), "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}})
	}
	created := do(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": p, "tasks": specs})
	list, _ := mcpclient.Field(created, "tasks")
	var tasks []string
	for _, c := range list.([]any) {
		tasks = append(tasks, fmt.Sprint(c.(map[string]any)["uuid"]))
	}
	require.Len(t, tasks, 6)

	// A claim spans the outage when it started before the server was back and did not get its
	// outcome before then (it got it later, or none): without one, the scenario tests nothing.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var up time.Time
	spanned := 0
	for i, task := range tasks {
		wg.Go(func() {
			if i >= 3 {
				time.Sleep(300 * time.Millisecond) // some calls land while the server is down
			}
			var out map[string]any
			err := dev.Call(context.Background(), "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": fmt.Sprintf("claim-%d", i)}, &out)
			mu.Lock()
			if err != nil || (!up.IsZero() && time.Now().After(up)) {
				spanned++
			}
			mu.Unlock()
		})
	}
	time.Sleep(50 * time.Millisecond)
	server := tp.proc("temporal-server")
	server.stop()
	t.Logf("temporal-server stopped (exit: %v); starting it again", server.err)
	time.Sleep(time.Second) // down long enough for the later claims to arrive meanwhile
	mu.Lock()
	up = time.Now()
	mu.Unlock()
	tp.startTemporal()
	wg.Wait()
	t.Logf("%d of %d claims spanned the restart", spanned, len(tasks))
	require.Positive(t, spanned, "no call was in flight across the restart: the scenario tested nothing")
	for i, task := range tasks {
		out := eventually(t, 2*time.Minute, dev, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": fmt.Sprintf("claim-%d", i)})
		require.Equal(t, "assigned", str(t, out, "status"))
		require.Equal(t, 1, tp.count(t, "activities WHERE target_uuid = ? AND action = 'assigned'", task), "claimed once")
	}
	for _, port := range []int{portAPI, portWorker1, portWorker2} {
		tp.waitReady(port)
	}
}
