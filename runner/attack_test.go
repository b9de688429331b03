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
// variables the runner read the other agents' keys from are not passed on, so one agent's turn
// (a coding agent following a prompt) cannot act with another's key.
func TestTurnsDoNotInheritOtherAgentsKeys(t *testing.T) {
	const devKey, pmKey = "cho_devkey0123456789abcdefghijklmnopqrDEV1", "cho_pmkey0123456789abcdefghijklmnopqrsPM01"
	t.Setenv("DEV_KEY", devKey)
	t.Setenv("PM_KEY", pmKey+"\n")
	t.Setenv("RUNNER_TEST_OTHER", "kept")
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
}
