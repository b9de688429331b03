package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/bench"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// TestBenchRunsEndToEnd runs a tiny bench, wired as `chorus bench` wires it (benchWiring),
// against a stack of its own (Temporal dev server, SQLite, worker, MCP endpoint) and checks the
// JSON it writes. Like the other whole-stack tests it skips without temporal-server or under
// -short, except under CI=true, where it runs or fails.
func TestBenchRunsEndToEnd(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	if testing.Short() && !ci {
		t.Skip("starts a whole stack; skipped under -short")
	}
	findCtx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	_, err := devserver.FindServer(findCtx, os.Stderr)
	cancel()
	if err != nil {
		if ci {
			t.Fatalf("no temporal-server: %v", err)
		}
		t.Skipf("no temporal-server (%v); run `make test`, or set CHORUS_TEMPORAL_SERVER_BIN", err)
	}
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	o := bench.Options{Phases: "floors,single,agents,race,reads,bulk,events,webhooks", Agents: 3, TasksPer: 1, Rounds: 1, Racers: 3,
		RaceRounds: 1, ReadTasks: 120, ReadCalls: 2, BulkBatches: 1, BulkSize: 3, FloorOps: 2, FloorPer: 1,
		Streams: 3, EventRounds: 1, WebhookRate: 3, WebhookSeconds: 1, WebhookWrites: "comment",
		JSONPath: jsonPath, Namespace: "default"}
	ctx, cancelRun := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancelRun()
	var out bytes.Buffer
	require.NoError(t, bench.Run(ctx, o, benchWiring(), &out), out.String())

	// The JSON file, read as its readers read it.
	type row struct {
		Name    string `json:"name"`
		N       int    `json:"n"`
		Errors  int    `json:"errors"`
		Error   string `json:"firstError"`
		VsFloor []any  `json:"vsFloor"`
	}
	var rep struct {
		Machine struct {
			CPUs      int    `json:"cpus"`
			GoVersion string `json:"goVersion"`
		} `json:"machine"`
		Floors map[string]struct {
			P50Ms float64 `json:"p50Ms"`
		} `json:"floors"`
		Phases []struct {
			Name                 string `json:"name"`
			Skipped              string `json:"skipped"`
			Rows                 []row  `json:"rows"`
			WorkflowTaskFailures *struct {
				WorkerFailed int `json:"workerFailed"`
			} `json:"workflowTaskFailures"`
			Events *struct {
				Events, Missing int
			} `json:"events"`
			Memory *struct {
				Streams int `json:"streams"`
			} `json:"streamMemory"`
			Webhooks *struct {
				Events, Delivered, BadSignature int
			} `json:"webhooks"`
		} `json:"phases"`
	}
	raw, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.Positive(t, rep.Machine.CPUs)
	require.NotEmpty(t, rep.Machine.GoVersion)
	require.Len(t, rep.Phases, 8)
	require.Len(t, rep.Floors, 6, "update and update-with-start floors, one client and concurrent")
	for _, name := range []string{"update+local activity", "update+activity", "update-with-start", "update+local activity, concurrent",
		"update+activity, concurrent", "update-with-start, concurrent"} {
		require.Positive(t, rep.Floors[name].P50Ms, "floor %s measured", name)
	}
	rows := map[string]row{}
	for _, p := range rep.Phases {
		require.Empty(t, p.Skipped, "phase %s", p.Name)
		for _, r := range p.Rows {
			require.Zero(t, r.Errors, "%s: %s", r.Name, r.Error)
			rows[r.Name] = r
		}
	}
	require.Equal(t, 1, rows["claim won"].N, "one racer wins")
	require.Equal(t, 2, rows["claim refused"].N, "the others are refused")
	require.Equal(t, 1, rows["chorus_admin_verify_task"].N)
	require.NotEmpty(t, rows["chorus_claim_task"].VsFloor, "lifecycle rows carry their floor ratios")
	require.Equal(t, 9, rows["all calls"].N, "3 agents x 1 task x claim, in_progress, submit")
	require.Contains(t, out.String(), "### Bulk creation")
	// The event streams: each of the 3 agents' streams read its assignment; memory was measured.
	ev, hooks := rep.Phases[6], rep.Phases[7]
	require.NotNil(t, ev.Events)
	require.Equal(t, 3, ev.Events.Events, "one task_assigned frame per stream")
	require.Zero(t, ev.Events.Missing)
	require.NotNil(t, ev.Memory)
	require.Equal(t, 3, ev.Memory.Streams)
	// The webhooks: the started server admitted the receiver on 127.0.0.1 (the bench's allow-list
	// wiring) and every event of the writes was delivered, signed right.
	require.NotNil(t, hooks.Webhooks)
	require.Equal(t, 3, hooks.Webhooks.Events, "3 comments a second for 1 s")
	require.Equal(t, hooks.Webhooks.Events, hooks.Webhooks.Delivered)
	require.Zero(t, hooks.Webhooks.BadSignature)
	require.Contains(t, out.String(), "server memory per open stream")
	for _, p := range rep.Phases {
		require.NotNil(t, p.WorkflowTaskFailures, "phase %s counts its workflow-task failures", p.Name)
		require.GreaterOrEqual(t, p.WorkflowTaskFailures.WorkerFailed, 0, "phase %s read the worker's count", p.Name)
	}
	require.Contains(t, out.String(), "| failed, as the worker counted |")
}
