package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/workflows/devserver"
)

func msList(vals ...int) []time.Duration {
	out := make([]time.Duration, len(vals))
	for i, v := range vals {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func seq(from, to int) []time.Duration {
	var vals []int
	for v := from; v <= to; v++ {
		vals = append(vals, v)
	}
	return msList(vals...)
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", msList(7), 99, 7 * time.Millisecond},
		{"p50 of 1..100", seq(1, 100), 50, 50 * time.Millisecond},
		{"p99 of 1..100", seq(1, 100), 99, 99 * time.Millisecond},
		{"p100 of 1..100", seq(1, 100), 100, 100 * time.Millisecond},
		{"p50 of 1..10", seq(1, 10), 50, 5 * time.Millisecond},
		{"p99 of 1..10 is the largest", seq(1, 10), 99, 10 * time.Millisecond},
		{"p50 of an odd count", seq(1, 5), 50, 3 * time.Millisecond},
		{"p0 is the smallest", seq(1, 5), 0, 1 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, percentile(c.sorted, c.p))
		})
	}
}

func TestSummarizeSortsAndAverages(t *testing.T) {
	t.Parallel()
	s := summarize(msList(30, 10, 20, 40), 2) // unsorted on purpose
	require.Equal(t, 4, s.N)
	require.Equal(t, 2, s.Errors)
	require.InDelta(t, 20.0, s.P50Ms, 1e-9)
	require.InDelta(t, 40.0, s.P99Ms, 1e-9)
	require.InDelta(t, 25.0, s.MeanMs, 1e-9)
	require.InDelta(t, 40.0, s.MaxMs, 1e-9)
	require.Zero(t, summarize(nil, 0).P50Ms)
}

func TestRecorderRateCountsSuccessesOverWallTime(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	for range 4 {
		r.observe(time.Now(), nil)
	}
	r.observe(time.Now(), os.ErrDeadlineExceeded)
	s := r.summary(2 * time.Second)
	require.Equal(t, 4, s.N)
	require.Equal(t, 1, s.Errors)
	require.InDelta(t, 2.0, s.Rate, 1e-9, "4 successes in 2 s")
	require.Equal(t, os.ErrDeadlineExceeded.Error(), s.Error)
}

func TestRatiosAgainstFloors(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 3.0, ratio(30, 10), 1e-9)
	require.Zero(t, ratio(0, 10), "no figure, no ratio")
	require.Zero(t, ratio(5, 0), "no floor, no ratio")

	b := &bencher{floors: map[string]summary{
		floorLocal:    {P50Ms: 10, Rate: 100},
		floorRegularN: {P50Ms: 40, Rate: 400},
	}}
	got := b.floorP50(summary{P50Ms: 25}, floorLocal, floorRegular) // floorRegular was not measured
	require.Equal(t, []comparison{{Floor: floorLocal + " p50", Ratio: 2.5}}, got)
	got = b.floorRate(100, floorRegularN)
	require.Equal(t, []comparison{{Floor: floorRegularN + " /s", Ratio: 0.25}}, got)
	require.InDelta(t, 50.0, ratePerCall(summary{MeanMs: 20}), 1e-9)
}

func TestBenchFlagsAreChecked(t *testing.T) {
	t.Parallel()
	valid := func() benchOptions {
		return benchOptions{phases: "single,race", agents: 1, tasksPer: 1, rounds: 1, racers: 2, raceRounds: 1,
			readTasks: 1, readCalls: 1, bulkBatches: 1, bulkSize: 50, floorOps: 1, floorPer: 1}
	}
	o := valid()
	phases, err := o.validate()
	require.NoError(t, err)
	require.Equal(t, []string{phaseSingle, phaseRace}, phases)

	cases := []struct {
		name  string
		edit  func(*benchOptions)
		names string
	}{
		{"unknown phase", func(o *benchOptions) { o.phases = "single,warp" }, "--phases"},
		{"no phase", func(o *benchOptions) { o.phases = " , " }, "--phases"},
		{"zero agents", func(o *benchOptions) { o.agents = 0 }, "--agents"},
		{"one racer", func(o *benchOptions) { o.racers = 1 }, "--racers"},
		{"batch too big", func(o *benchOptions) { o.bulkSize = 101 }, "--bulk-size"},
		{"bad dynamic config", func(o *benchOptions) { o.dynConfig = []string{"novalue"} }, "--dynamic-config"},
		{"key without endpoint", func(o *benchOptions) { o.key = "cho_x" }, "--key"},
		{"endpoint without key", func(o *benchOptions) { o.endpoint = "http://127.0.0.1:1/api/mcp" }, "--key"},
		{"endpoint not a URL", func(o *benchOptions) { o.endpoint = "127.0.0.1:1"; o.key = "cho_x" }, "--endpoint"},
		{"reads would seed a live database", func(o *benchOptions) {
			o.phases, o.endpoint, o.key, o.databaseURL = "reads", "http://127.0.0.1:1/api/mcp", "cho_x", "postgres://x"
		}, "--seed-live-database"},
		{"seed-live without endpoint", func(o *benchOptions) { o.seedLive = true }, "--seed-live-database"},
		{"soak without agents", func(o *benchOptions) {
			o.phases, o.soakDuration, o.soakWindow, o.soakSample, o.pruneInterval = "soak", time.Minute, time.Minute, time.Second, time.Second
		}, "--soak-agents"},
		{"soak without a window", func(o *benchOptions) { o.phases, o.soakAgents, o.soakDuration = "soak", 1, time.Minute }, "--soak-window"},
		{"opscheck without entities", func(o *benchOptions) { o.phases, o.opsConcurrency = "opscheck", 8 }, "--ops-entities"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := valid()
			c.edit(&o)
			_, err := o.validate()
			require.ErrorContains(t, err, c.names)
		})
	}
}

// TestBenchRunsEndToEnd runs a tiny bench against a stack of its own (Temporal dev server,
// SQLite, worker, MCP endpoint) and checks the JSON it writes. Like the other whole-stack tests
// it skips without temporal-server or under -short, except under CI=true, where it runs or fails.
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
	o := benchOptions{phases: "floors,single,agents,race,reads,bulk", agents: 3, tasksPer: 1, rounds: 1, racers: 3,
		raceRounds: 1, readTasks: 120, readCalls: 2, bulkBatches: 1, bulkSize: 3, floorOps: 2, floorPer: 1,
		jsonPath: jsonPath, namespace: "default"}
	phases, err := o.validate()
	require.NoError(t, err)
	ctx, cancelRun := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelRun()
	var out bytes.Buffer
	require.NoError(t, runBench(ctx, o, phases, &out), out.String())

	raw, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep benchReport
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.Positive(t, rep.Machine.CPUs)
	require.NotEmpty(t, rep.Machine.GoVersion)
	require.Len(t, rep.Phases, 6)
	for _, name := range []string{floorLocal, floorRegular, floorStart, floorLocalN, floorRegularN, floorStartN} {
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
	for _, p := range rep.Phases {
		require.NotNil(t, p.WorkflowTaskFailures, "phase %s counts its workflow-task failures", p.Name)
		require.GreaterOrEqual(t, p.WorkflowTaskFailures.WorkerFailed, 0, "phase %s read the worker's count", p.Name)
	}
	require.Contains(t, out.String(), "| failed, as the worker counted |")
}

func TestWorkerTaskFailuresSumsTheWorkersCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "# TYPE temporal_workflow_task_execution_failed_total counter\n"+
			"temporal_workflow_task_execution_failed_total{workflow_type=\"TaskWorkflow\"} 3\n"+
			"temporal_workflow_task_execution_failed_total{workflow_type=\"IdeaWorkflow\"} 2\n"+
			"# TYPE temporal_workflow_completed_total counter\ntemporal_workflow_completed_total 7\n")
	}))
	defer srv.Close()
	ctx := context.Background()
	require.Equal(t, 5.0, workerTaskFailures(ctx, srv.URL))
	require.Equal(t, -1.0, workerTaskFailures(ctx, ""), "no metrics URL: not read")
	require.Equal(t, -1.0, workerTaskFailures(ctx, srv.URL+"/missing\x7f"), "bad URL: not read")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	require.Equal(t, -1.0, workerTaskFailures(ctx, closed.URL), "unreachable: not read")
}
