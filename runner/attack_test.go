//go:build unix

package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oneEventServer answers every GET /api/events, whatever its key, with one task_assigned event
// of an idea of its own per key, then holds the stream open.
func oneEventServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "retry: 10\n\n")
		fmt.Fprintf(w, "id: 1\nevent: task_assigned\ndata: {\"id\":\"1\",\"kind\":\"task_assigned\",\"entityType\":\"task\","+
			"\"entityUuid\":\"t-1\",\"ideaUuid\":\"idea-%s\"}\n\n", key[len(key)-4:])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A runner serving several agents gives each turn its own agent's key only: the environment
// variables the runner read the other agents' keys from, and any other holding a key, are not
// passed on, so one agent's turn (a coding agent following a prompt) cannot act with another's.
func TestTurnsDoNotInheritOtherAgentsKeys(t *testing.T) {
	const devKey, pmKey = "cho_devkey0123456789abcdefghijklmnopqrDEV1", "cho_pmkey0123456789abcdefghijklmnopqrsPM01"
	t.Setenv("DEV_KEY", devKey)
	t.Setenv("PM_KEY", pmKey+"\n")
	t.Setenv("RUNNER_TEST_OTHER", "kept")
	t.Setenv("ADMIN_KEY", "cho_adminkey0123456789abcdefghijklmnopqADM1") // exported in the runner's shell
	url := oneEventServer(t)
	dir := t.TempDir()
	var agents []Agent
	for _, n := range []struct{ name, env string }{{"dev", "DEV_KEY"}, {"pm", "PM_KEY"}} {
		a, err := AgentSpec{Name: n.name, URL: url, KeyEnv: n.env, Workdir: dir,
			Command: `env > "` + dir + `/env-$CHORUS_AGENT_NAME"`}.Resolve(os.Getenv)
		require.NoError(t, err)
		agents = append(agents, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, agents, Options{Log: slog.New(slog.DiscardHandler), Grace: time.Minute,
			Playbooks: func(Agent) Playbooks { return fakePlaybooks{} }})
	}()
	read := func(name string) string {
		var b []byte
		require.Eventually(t, func() bool {
			var err error
			b, err = os.ReadFile(filepath.Join(dir, "env-"+name))
			return err == nil && strings.Contains(string(b), "CHORUS_TURN_ID=")
		}, time.Minute, 10*time.Millisecond)
		return string(b)
	}
	devEnv, pmEnv := read("dev"), read("pm")
	cancel()
	require.NoError(t, <-done)

	require.Contains(t, devEnv, "CHORUS_API_KEY="+devKey+"\n")
	require.NotContains(t, devEnv, pmKey, "the dev agent's turn holds the pm agent's key")
	require.Contains(t, pmEnv, "CHORUS_API_KEY="+pmKey+"\n")
	require.NotContains(t, pmEnv, devKey, "the pm agent's turn holds the dev agent's key")
	require.Contains(t, devEnv, "RUNNER_TEST_OTHER=kept\n", "the rest of the environment is passed on")
	require.NotContains(t, devEnv, "cho_adminkey", "nor any other key the runner's environment holds")
	require.NotContains(t, pmEnv, "cho_adminkey")
}

// A stream server that sends one endless frame (data lines, never the blank line that ends a
// frame) does not make the runner hold it all: past MaxFrameBytes the connection is dropped and
// opened again. An id that is no event position (a hostile or broken server) is not sent back as
// Last-Event-ID.
func TestEndlessFrameIsDropped(t *testing.T) {
	const limit = 64 << 20
	type conn struct {
		sent   int64
		lastID string
	}
	conns := make(chan conn, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "retry: 10\n\nid: 7\rx\n\n")
		line := "data: " + strings.Repeat("x", 4090) + "\n"
		var sent int64
		for sent < limit {
			if _, err := io.WriteString(w, line); err != nil {
				break
			}
			sent += int64(len(line))
		}
		conns <- conn{sent, r.Header.Get("Last-Event-ID")}
		if sent >= limit {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	a, err := AgentSpec{Name: "dev", URL: srv.URL, KeyEnv: "K", Workdir: t.TempDir(), Command: "true"}.Resolve(func(string) string { return testKey })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []Agent{a}, Options{Log: slog.New(slog.DiscardHandler), Playbooks: func(Agent) Playbooks { return fakePlaybooks{} }})
	}()
	var first, second conn
	select {
	case first = <-conns:
	case <-time.After(time.Minute):
		t.Fatal("the runner neither read nor dropped the endless frame")
	}
	require.Less(t, first.sent, int64(limit), "the runner read the whole endless frame without dropping it")
	select {
	case second = <-conns:
	case <-time.After(time.Minute):
		t.Fatal("the runner did not reconnect")
	}
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, "", second.lastID, "an id that is no event position is not sent back")
}

// The default state directory is inside the workdir, usually a git checkout the agent commits
// from: a careless `git add -A` in a turn must not pick up the runner's journal, prompts and turn
// logs (a log holds whatever the turn printed, its key included if it printed its environment).
// The state directory ignores itself; a .gitignore already there is kept.
func TestStateDirIsIgnoredByGit(t *testing.T) {
	f, url := newFakeEvents(t)
	h := newHarness(t, url)
	work := h.agent.Workdir
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", work}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	git("init", "-q")
	h.agent.Command = `echo "my key is $CHORUS_API_KEY"; echo work > done.txt`
	h.start()
	waitConnected(t, f, 1)
	f.publish("task_assigned", "task", "t-1", "idea-a")
	require.Eventually(t, func() bool {
		return len(h.journal()) == 2
	}, time.Minute, 10*time.Millisecond, "the turn finishes; log:\n%s", h.logs)
	require.NoError(t, h.stop())
	log, err := os.ReadFile(filepath.Join(h.agent.StateDir, TurnsDir, "000001.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "my key is "+testKey)
	git("add", "-A")
	require.Equal(t, "done.txt\n", git("diff", "--cached", "--name-only"), "only the turn's work is staged")

	// A .gitignore of the user's in a state directory of their own is left as it is.
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("turns/\n"), 0o600))
	h.agent.StateDir = dir
	h.start()
	waitConnected(t, f, 2)
	require.NoError(t, h.stop())
	b, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	require.NoError(t, err)
	require.Equal(t, "turns/\n", string(b))
}
