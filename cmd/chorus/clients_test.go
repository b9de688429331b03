package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// clientKey is one entry of CHORUS_CLIENT_KEYS, the agents the TypeScript suite connects as.
type clientKey struct {
	Name        string   `json:"name"`        // admin, pm, developer or custom
	Key         string   `json:"key"`         // cho_...
	Presets     []string `json:"presets"`     // role presets the agent was created with
	Permissions []string `json:"permissions"` // extra permission bits
}

// TestTypeScriptClients runs the conformance suite in clients/ (the official TypeScript MCP SDK
// client, the MCP Inspector CLI, and the mainstream client libraries: the v2 TypeScript client,
// the OpenAI Agents SDK, the AI SDK, LangChain's adapters and Mastra, under Node's test runner)
// against a real `chorus dev` stack started in-process: Temporal dev server, SQLite in a
// temporary directory, worker and endpoint.
//
// It needs Node 20+ with clients/node_modules installed (`npm --prefix clients ci`, which
// `make test` does) and temporal-server; without them it skips, except under CI=true, where it
// fails.
func TestTypeScriptClients(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	unavailable := func(format string, args ...any) {
		t.Helper()
		if ci {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if testing.Short() && !ci {
		t.Skip("starts a whole chorus dev stack and Node; skipped under -short")
	}

	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	clients := filepath.Join(root, "clients")
	require.FileExists(t, filepath.Join(clients, "package.json"), "the repository root should be two levels above cmd/chorus")
	if msg := nodeProblem(clients); msg != "" {
		unavailable("TypeScript client suite: %s; run `npm --prefix clients ci` (or `make test`, which does it)", msg)
	}
	findCtx, cancelFind := context.WithTimeout(context.Background(), 10*time.Minute) // a cold CLI build takes minutes
	bin, err := devserver.FindServer(findCtx, os.Stderr)
	cancelFind()
	if err != nil {
		unavailable("TypeScript client suite: no temporal-server (%v); run `make test`, or set CHORUS_TEMPORAL_SERVER_BIN", err)
	}

	// A stack of its own: local Temporal, SQLite in the temp dir, a fresh admin key.
	t.Setenv("CHORUS_TEMPORAL_SERVER_BIN", bin)
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("CHORUS_DATABASE_URL", "")
	t.Setenv("CHORUS_BOOTSTRAP_ADMIN_KEY", "")
	t.Setenv("CHORUS_LOG_LEVEL", "warn")
	dataDir := t.TempDir()
	url, temporalAddr := startDev(t, dataDir)

	adminKey, err := os.ReadFile(filepath.Join(dataDir, "admin.key"))
	require.NoError(t, err)
	keys := []clientKey{
		{Name: "admin", Key: strings.TrimSpace(string(adminKey)), Presets: []string{"admin_agent"}, Permissions: []string{}},
		createAgent(t, dataDir, "pm", []string{"pm_agent"}, nil),
		createAgent(t, dataDir, "developer", []string{"developer_agent"}, nil),
		// No preset: task:admin without task:write shows that no bit implies another.
		createAgent(t, dataDir, "custom", nil, []string{"task:admin", "proposal:admin", "idea:read"}),
	}
	keysJSON, err := json.Marshal(keys)
	require.NoError(t, err)

	files, err := filepath.Glob(filepath.Join(clients, "test", "*.test.mjs"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no clients/test/*.test.mjs")
	for i, f := range files {
		files[i] = filepath.Join("test", filepath.Base(f))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)...)
	cmd.Dir = clients
	cmd.Env = append(os.Environ(), "CHORUS_URL="+url, "CHORUS_CLIENT_KEYS="+string(keysJSON), "NO_COLOR=1")
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s (%s):\n%s", strings.Join(files, " "), time.Since(start).Round(time.Millisecond), out)
	if ctx.Err() != nil {
		t.Fatalf("the TypeScript client suite did not finish within the deadline: %v", ctx.Err())
	}
	require.NoError(t, err, "the TypeScript client suite failed; its report is above")

	// Everything the clients did left every workflow in agreement with its rows.
	var stdout, stderr bytes.Buffer
	check := newRootCmd()
	check.SetArgs([]string{"--data-dir", dataDir, "ops", "check", "--temporal-address", temporalAddr})
	check.SetOut(&stdout)
	check.SetErr(&stderr)
	require.NoError(t, check.ExecuteContext(context.Background()), "chorus ops check: %s%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "clean: every workflow agrees with its rows")
}

// nodeProblem says why clients/ cannot run here ("" when it can): node missing or older than
// 20, or the npm packages not installed.
func nodeProblem(clients string) string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH (install Node 20 or later)"
	}
	v, err := exec.Command("node", "--version").Output()
	if err != nil {
		return fmt.Sprintf("`node --version` failed: %v", err)
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(v)), "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 20 {
		return fmt.Sprintf("node %s is too old (Node 20 or later is needed)", strings.TrimSpace(string(v)))
	}
	for _, p := range []string{"node_modules/@modelcontextprotocol/sdk/package.json", "node_modules/.bin/mcp-inspector",
		"node_modules/@modelcontextprotocol/client/package.json", "node_modules/@openai/agents/package.json",
		"node_modules/@ai-sdk/mcp/package.json", "node_modules/ai/package.json",
		"node_modules/@langchain/mcp-adapters/package.json", "node_modules/@mastra/mcp/package.json"} {
		if _, err := os.Stat(filepath.Join(clients, p)); err != nil {
			return "clients/" + p + " is missing"
		}
	}
	return ""
}

// startDev runs `chorus dev` (runDev) on free ports with dataDir until the test ends, and
// returns the MCP endpoint URL and the Temporal address once GET /readyz answers 200. It fails the test when the stack
// exits early or is not ready within three minutes, printing what it wrote.
func startDev(t *testing.T, dataDir string) (string, string) {
	t.Helper()
	// A port found free can be taken by another test's server before chorus dev binds it; such
	// an attempt ends at once with "address already in use", and the next one takes new ports.
	for attempt := 1; ; attempt++ {
		url, temporal, err := tryStartDev(t, dataDir)
		if err == nil {
			return url, temporal
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("chorus dev attempt %d: %v; trying other ports", attempt, err)
	}
}

func tryStartDev(t *testing.T, dataDir string) (string, string, error) {
	t.Helper()
	ports := make([]int, 3)
	for i := range ports {
		p, err := devserver.FreePort()
		require.NoError(t, err)
		ports[i] = p
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// The limits chorus dev applies by default: real clients must never meet them.
		done <- runDev(ctx, &globals{dataDir: dataDir}, devOptions{addr: addr, temporalPort: ports[1], uiPort: ports[2],
			edge: edgeConfig{limits: mcp.DefaultLimits()}}, out)
	}()

	ready := "http://" + addr + "/readyz"
	probe := &http.Client{Timeout: 2 * time.Second}
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			cancel()
			return "", "", fmt.Errorf("chorus dev exited before it was ready: %v; it wrote:\n%s", err, out)
		case <-deadline:
			t.Cleanup(func() { cancel(); <-done })
			return "", "", fmt.Errorf("chorus dev: %s did not answer 200 within three minutes; it wrote:\n%s", ready, out)
		case <-tick.C:
			if resp, err := probe.Get(ready); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Cleanup(func() {
						cancel()
						select {
						case err := <-done:
							if err != nil {
								t.Errorf("chorus dev ended with %v; it wrote:\n%s", err, out)
							}
						case <-time.After(time.Minute):
							t.Errorf("chorus dev did not stop within a minute of its context being cancelled; it wrote:\n%s", out)
						}
					})
					return "http://" + addr + mcp.Path, fmt.Sprintf("127.0.0.1:%d", ports[1]), nil
				}
			}
		}
	}
}

// createAgent creates an agent through the real CLI code path (`chorus agent create ...
// --key-only`) against the running stack's data dir and returns its key entry.
func createAgent(t *testing.T, dataDir, name string, presets, permissions []string) clientKey {
	t.Helper()
	args := []string{"--data-dir", dataDir, "agent", "create", "--name", "TS client " + name, "--key-only"}
	for _, p := range presets {
		args = append(args, "--preset", p)
	}
	for _, p := range permissions {
		args = append(args, "--permission", p)
	}
	var stdout, stderr bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	require.NoError(t, root.ExecuteContext(context.Background()), "chorus %s: %s", strings.Join(args, " "), stderr.String())
	key := strings.TrimSpace(stdout.String())
	require.True(t, strings.HasPrefix(key, "cho_"), "chorus %s printed %q, not a key", strings.Join(args, " "), key)
	if presets == nil {
		presets = []string{}
	}
	if permissions == nil {
		permissions = []string{}
	}
	return clientKey{Name: name, Key: key, Presets: presets, Permissions: permissions}
}

// syncBuffer is a bytes.Buffer that runDev's goroutine may write while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
