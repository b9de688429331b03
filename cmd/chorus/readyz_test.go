package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// readyTemporal is a Temporal dev server of the test's own and a client of it.
type readyTemporal struct {
	bin, addr string
	tc        client.Client
}

func startReadyTemporal(t *testing.T) readyTemporal {
	t.Helper()
	findCtx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := devserver.FindServer(findCtx, os.Stderr)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no temporal-server under CI: %v", err)
		}
		t.Skipf("no temporal-server (%v); set CHORUS_TEMPORAL_SERVER_BIN", err)
	}
	port, err := devserver.FreePort()
	require.NoError(t, err)
	dev, err := devserver.Start(devserver.Options{Bin: bin, Port: port, LogLevel: "error"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Stop(10 * time.Second) })
	require.NoError(t, dev.WaitReady(context.Background(), 90*time.Second))
	tc, err := client.Dial(client.Options{HostPort: dev.Address()})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return readyTemporal{bin: bin, addr: dev.Address(), tc: tc}
}

// setup runs the command /readyz names in "register" (chorus temporal setup) through this
// binary's own command tree, as an operator would run it, against r's server; it returns what it
// printed.
func (r readyTemporal) setup(t *testing.T, command string) string {
	t.Helper()
	args, ok := strings.CutPrefix(command, "chorus ")
	require.True(t, ok, "register names a chorus command: %q", command)
	cmd := newRootCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(strings.Fields(args), "--temporal-address", r.addr, "--retention", "24h", "--wait", "2m"))
	require.NoError(t, cmd.ExecuteContext(context.Background()), "%s: %s", command, out.String())
	return out.String()
}

// waitReady polls addr's /readyz until it answers 200 or 30 s pass, and returns the last answer.
func waitReady(t *testing.T, addr string) (int, readyBody) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := getReady(t, addr)
		if code == http.StatusOK || time.Now().After(deadline) {
			return code, b
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
}

// namespace registers a new namespace (with no Chorus search attributes) and returns its name.
func (r readyTemporal) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := prefix + "-" + store.NewUUID()[:8]
	_, err := r.tc.WorkflowService().RegisterNamespace(context.Background(), &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	return ns
}

// server runs runServer until the test ends; it returns the HTTP address once serving, and a
// channel that yields runServer's result.
func (r readyTemporal) server(t *testing.T, st *store.Store, role, namespace string) (string, <-chan error) {
	return r.serverOn(t, st, role, namespace, "")
}

// serverOn is server with the task queue set ("" keeps the default).
func (r readyTemporal) serverOn(t *testing.T, st *store.Store, role, namespace, queue string) (string, <-chan error) {
	t.Helper()
	return r.serve(t, st, serverConfig{role: role, temporal: temporalConfig{namespace: namespace}, taskQueue: queue})
}

// serve runs runServer with cfg (its address, Temporal address and wait filled in) until the
// test ends, like server.
func (r readyTemporal) serve(t *testing.T, st *store.Store, cfg serverConfig) (string, <-chan error) {
	t.Helper()
	port, err := devserver.FreePort()
	require.NoError(t, err)
	cfg.addr, cfg.temporal.address, cfg.temporalWait = fmt.Sprintf("127.0.0.1:%d", port), r.addr, 30*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		done <- runServer(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), st, cfg, func() { close(ready) })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("runServer did not stop within a minute")
		}
	})
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("runServer ended before serving: %v", <-done)
	case <-time.After(time.Minute):
		t.Fatal("runServer did not serve within a minute")
	}
	return cfg.addr, done
}

// readyBody is GET /readyz's answer.
type readyBody struct {
	Status           string   `json:"status"`
	Store            string   `json:"store"`
	Temporal         string   `json:"temporal"`
	Namespace        string   `json:"namespace"`
	SearchAttributes string   `json:"searchAttributes"`
	Worker           string   `json:"worker"`
	Register         []string `json:"register"`
	Problems         []string `json:"problems"`
}

func getReady(t *testing.T, addr string) (int, readyBody) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var b readyBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return resp.StatusCode, b
}

// /readyz is 503 for an API whose namespace does not exist or lacks Chorus's search attributes
// (naming what is missing and the command that sets it up), and turns 200 once that command
// (chorus temporal setup) has run; running it again changes nothing. On SQLite and PostgreSQL.
func TestReadyzChecksNamespaceAndSearchAttributes(t *testing.T) {
	tmp := startReadyTemporal(t)
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st := storetest.Open(t, dialect)

			absent := "absent-" + store.NewUUID()[:8]
			addr, _ := tmp.server(t, st, roleAPI, absent)
			code, b := getReady(t, addr)
			require.Equal(t, http.StatusServiceUnavailable, code)
			require.Equal(t, "not ready", b.Status)
			require.Equal(t, "ok", b.Store)
			require.Equal(t, "ok", b.Temporal)
			require.Equal(t, "missing", b.Namespace)
			require.Contains(t, strings.Join(b.Problems, "\n"), fmt.Sprintf("the Temporal namespace %q does not exist", absent))
			require.Equal(t, []string{"chorus temporal setup --namespace " + absent}, b.Register)

			// The command it names creates the namespace and its search attributes.
			out := tmp.setup(t, b.Register[0])
			require.Contains(t, out, "created namespace "+absent)
			require.Contains(t, out, "registered search attributes ChorusProjectUuid, ChorusEntity")
			code, b = waitReady(t, addr)
			require.Equal(t, http.StatusOK, code, "%+v", b)

			ns := tmp.namespace(t, "bare")
			addr, _ = tmp.server(t, st, roleAPI, ns)
			code, b = getReady(t, addr)
			require.Equal(t, http.StatusServiceUnavailable, code)
			require.Equal(t, "ok", b.Namespace)
			require.Equal(t, "missing: ChorusProjectUuid, ChorusEntity, ChorusStatus, ChorusAssignee, ChorusCreator, ChorusProgress, "+
				"ChorusTitle, ChorusAssigneeName", b.SearchAttributes)
			require.Equal(t, []string{workflows.SetupCommand(ns)}, b.Register)
			require.Contains(t, strings.Join(b.Problems, "\n"), "lacks the search attributes ChorusProjectUuid, ChorusEntity")
			require.Empty(t, b.Worker, "an API process runs no worker")

			// The command it names, run as an operator would, makes it ready; a second run finds
			// everything in place and changes nothing.
			out = tmp.setup(t, b.Register[0])
			require.Contains(t, out, "namespace "+ns+" already exists")
			require.Contains(t, out, "registered search attributes ChorusProjectUuid, ChorusEntity, ChorusStatus, ChorusAssignee, "+
				"ChorusCreator, ChorusProgress, ChorusTitle, ChorusAssigneeName in "+ns)
			code, b = waitReady(t, addr)
			require.Equal(t, http.StatusOK, code, "%+v", b)
			require.Equal(t, "ready", b.Status)
			require.Equal(t, "ok", b.SearchAttributes)
			require.Empty(t, b.Problems)
			require.Empty(t, b.Register)
			out = tmp.setup(t, workflows.SetupCommand(ns))
			require.Contains(t, out, "namespace "+ns+" already exists")
			require.Contains(t, out, "namespace "+ns+" has every Chorus search attribute")
			require.NotContains(t, out, "created")
			require.NotContains(t, out, "registered")
		})
	}
}

// The production guide (docs/production.md, "Readiness and search attributes") gives the exact
// command that sets up the namespace and every search attribute Chorus uses, the one /readyz
// names.
func TestProductionGuideRegistersSearchAttributes(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "production.md"))
	require.NoError(t, err)
	require.Contains(t, string(guide), workflows.SetupCommand(workflows.Namespace))
}

// A worker that stops on a fatal error (here: its namespace was deleted under it) turns the
// process unready and ends runServer with an error, so `chorus serve` exits non-zero. The SDK
// keeps polling for two minutes before it gives up, so this test takes that long.
func TestWorkerFatalErrorExits(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("waits out the SDK's two-minute grace period; skipped under -short")
	}
	t.Parallel()
	tmp := startReadyTemporal(t)
	st := storetest.Open(t, "sqlite")
	ns := tmp.namespace(t, "doomed")
	addr, done := tmp.server(t, st, roleWorker, ns)
	deadline := time.Now().Add(30 * time.Second)
	var code int
	var b readyBody
	for {
		code, b = getReady(t, addr)
		if code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, code, "%+v", b)
	require.Equal(t, "ok", b.Worker)

	_, err := tmp.tc.OperatorService().DeleteNamespace(context.Background(), &operatorservice.DeleteNamespaceRequest{Namespace: ns})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.Error(t, err)
		require.Contains(t, err.Error(), "the Temporal worker stopped")
	case <-time.After(5 * time.Minute):
		t.Fatal("runServer still runs five minutes after its namespace was deleted")
	}
}

// Two deployments on one namespace, each with its own task queue (--task-queue,
// CHORUS_TASK_QUEUE), keep to their own work: each one's workflows run on its queue and write to
// its own database, so calls through either succeed. On one queue they would take each other's
// tasks and write to the wrong database.
func TestTaskQueueSeparatesDeployments(t *testing.T) {
	tmp := startReadyTemporal(t)
	ctx := context.Background()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			for _, queue := range []string{"chorus-a-" + dialect, "chorus-b-" + dialect} {
				st := storetest.Open(t, dialect)
				boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
					OwnerEmail: "owner@example.com", AgentName: "Admin"})
				require.NoError(t, err)
				addr, _ := tmp.serverOn(t, st, roleAll, workflows.Namespace, queue)
				a, err := connectAgent(ctx, "http://"+addr+"/api/mcp", boot.Key)
				require.NoError(t, err)
				defer a.Close()
				var project struct{ UUID string }
				require.NoError(t, a.Call(ctx, "chorus_admin_create_project", map[string]any{"name": queue}, &project))
				var created struct{ Tasks []struct{ UUID string } }
				require.NoError(t, a.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
					"tasks": []map[string]any{{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created))
				require.Len(t, created.Tasks, 1)
				var task struct{ Status string }
				require.NoError(t, a.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": created.Tasks[0].UUID}, &task))
				require.Equal(t, "assigned", task.Status)
				d, err := tmp.tc.DescribeWorkflowExecution(ctx, vocab.TaskID(created.Tasks[0].UUID), "")
				require.NoError(t, err)
				require.Equal(t, queue, d.GetExecutionConfig().GetTaskQueue().GetName())
			}
		})
	}
}
