package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// apiProcess is one chorus serve process (runServer) the test can stop, as an API restart does.
type apiProcess struct {
	addr string
	stop func()
}

func startProcess(t *testing.T, r readyTemporal, st *store.Store, role, namespace string) *apiProcess {
	t.Helper()
	port, err := devserver.FreePort()
	require.NoError(t, err)
	cfg := serverConfig{role: role, addr: fmt.Sprintf("127.0.0.1:%d", port),
		temporal: temporalConfig{address: r.addr, namespace: namespace}, temporalWait: 30 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	ready, exited := make(chan struct{}), make(chan error, 1)
	go func() {
		exited <- runServer(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), st, cfg, func() { close(ready) })
	}()
	var stopped bool
	p := &apiProcess{addr: cfg.addr, stop: func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("runServer did not stop within a minute")
		}
	}}
	t.Cleanup(p.stop)
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("runServer ended before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("runServer did not serve within a minute")
	}
	return p
}

// sseEvent is one event frame read from GET /api/events, with when it was read.
type sseEvent struct {
	ID, Kind string
	Data     map[string]string
	At       time.Time
}

// subscribe opens GET /api/events on addr with key, resuming after lastID ("" for now).
func subscribe(t *testing.T, addr, key, lastID string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /api/events: %d %s", resp.StatusCode, b)
	}
	out := make(chan sseEvent, 64)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && ev.Kind != "":
				ev.At = time.Now()
				out <- ev
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
			}
		}
	}()
	t.Cleanup(cancel)
	return out, cancel
}

func nextEvent(t *testing.T, c <-chan sseEvent, within time.Duration) sseEvent {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
	}
	return sseEvent{}
}

// Issue 23: an assignment made through MCP reaches the assignee's event stream within a second
// of the call returning; a client that disconnects and resumes with Last-Event-ID misses nothing
// and gets nothing twice, from another API process and after that process restarts.
func TestEventStreamThroughTheAPI(t *testing.T) {
	r := startReadyTemporal(t)
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.NewDSN(t, dialect)
			st := storetest.OpenDSN(t, dsn)
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Olga",
				OwnerEmail: "olga@example.com", AgentName: "Admin"})
			require.NoError(t, err)
			dev, devKey, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: boot.Company.UUID, Name: "Dev",
				Roles: []string{"developer_agent"}, OwnerUUID: &boot.Owner.UUID})
			require.NoError(t, err)
			ns := r.namespace(t, "events")
			a := startProcess(t, r, st, roleAll, ns)
			// A second API process on its own connection pool, as a load balancer's other backend.
			b := startProcess(t, r, storetest.OpenDSN(t, dsn), roleAPI, ns)

			admin, err := connectAgent(ctx, "http://"+a.addr+"/api/mcp", boot.Key)
			require.NoError(t, err)
			defer admin.Close()
			var project struct{ UUID string }
			require.NoError(t, admin.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "Web"}, &project))
			var created struct{ Tasks []struct{ UUID string } }
			tasks := []any{}
			for i := range 3 {
				tasks = append(tasks, map[string]any{"title": fmt.Sprintf("T%d", i),
					"acceptanceCriteriaItems": []any{map[string]any{"description": "works"}}})
			}
			require.NoError(t, admin.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
				"tasks": tasks}, &created))
			require.Len(t, created.Tasks, 3)
			assign := func(c *mcpclient.Agent, i int) time.Time {
				require.NoError(t, c.Call(ctx, "chorus_pm_assign_task", map[string]any{"taskUuid": created.Tasks[i].UUID,
					"agentUuid": dev.UUID}, nil))
				return time.Now()
			}

			events, hangUp := subscribe(t, a.addr, devKey, "")
			done := assign(admin, 0)
			ev := nextEvent(t, events, 10*time.Second)
			require.Equal(t, "task_assigned", ev.Kind)
			require.Equal(t, created.Tasks[0].UUID, ev.Data["entityUuid"])
			require.Equal(t, project.UUID, ev.Data["projectUuid"])
			require.LessOrEqual(t, ev.At.Sub(done), time.Second, "the assignment reached the stream within a second")
			code, metrics := get(t, "http://"+a.addr+"/metrics", nil)
			require.Equal(t, http.StatusOK, code)
			require.Contains(t, metrics, "chorus_event_subscribers 2", "the stream and the webhook dispatcher")

			// The client drops; a task is assigned meanwhile through the other process.
			hangUp()
			adminB, err := connectAgent(ctx, "http://"+b.addr+"/api/mcp", boot.Key)
			require.NoError(t, err)
			defer adminB.Close()
			assign(adminB, 1)
			resumed, hangUp := subscribe(t, b.addr, devKey, ev.ID)
			got := nextEvent(t, resumed, 10*time.Second)
			require.Equal(t, created.Tasks[1].UUID, got.Data["entityUuid"], "the missed event, replayed")

			// Process B restarts; the client comes back to a new one with its last id.
			hangUp()
			b.stop()
			assign(admin, 2)
			b2 := startProcess(t, r, storetest.OpenDSN(t, dsn), roleAPI, ns)
			again, _ := subscribe(t, b2.addr, devKey, got.ID)
			last := nextEvent(t, again, 10*time.Second)
			require.Equal(t, created.Tasks[2].UUID, last.Data["entityUuid"])
			select {
			case ev := <-again:
				t.Fatalf("an event came twice or out of nowhere: %+v", ev)
			case <-time.After(time.Second):
			}
		})
	}
}
