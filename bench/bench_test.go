package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	valid := func() Options {
		return Options{Phases: "single,race", Agents: 1, TasksPer: 1, Rounds: 1, Racers: 2, RaceRounds: 1,
			ReadTasks: 1, ReadCalls: 1, BulkBatches: 1, BulkSize: 50, FloorOps: 1, FloorPer: 1}
	}
	o := valid()
	phases, err := o.validate()
	require.NoError(t, err)
	require.Equal(t, []string{phaseSingle, phaseRace}, phases)

	cases := []struct {
		name  string
		edit  func(*Options)
		names string
	}{
		{"unknown phase", func(o *Options) { o.Phases = "single,warp" }, "--phases"},
		{"no phase", func(o *Options) { o.Phases = " , " }, "--phases"},
		{"zero agents", func(o *Options) { o.Agents = 0 }, "--agents"},
		{"one racer", func(o *Options) { o.Racers = 1 }, "--racers"},
		{"batch too big", func(o *Options) { o.BulkSize = 101 }, "--bulk-size"},
		{"bad dynamic config", func(o *Options) { o.DynamicConfig = []string{"novalue"} }, "--dynamic-config"},
		{"key without endpoint", func(o *Options) { o.Key = "cho_x" }, "--key"},
		{"endpoint without key", func(o *Options) { o.Endpoint = "http://127.0.0.1:1/api/mcp" }, "--key"},
		{"endpoint not a URL", func(o *Options) { o.Endpoint = "127.0.0.1:1"; o.Key = "cho_x" }, "--endpoint"},
		{"reads would seed a live database", func(o *Options) {
			o.Phases, o.Endpoint, o.Key, o.DatabaseURL = "reads", "http://127.0.0.1:1/api/mcp", "cho_x", "postgres://x"
		}, "--seed-live-database"},
		{"seed-live without endpoint", func(o *Options) { o.SeedLive = true }, "--seed-live-database"},
		{"soak without agents", func(o *Options) {
			o.Phases, o.SoakDuration, o.SoakWindow, o.SoakSample, o.PruneInterval = "soak", time.Minute, time.Minute, time.Second, time.Second
		}, "--soak-agents"},
		{"soak without a window", func(o *Options) { o.Phases, o.SoakAgents, o.SoakDuration = "soak", 1, time.Minute }, "--soak-window"},
		{"opscheck without entities", func(o *Options) { o.Phases, o.OpsConcurrency = "opscheck", 8 }, "--ops-entities"},
		{"events without streams", func(o *Options) { o.Phases, o.EventRounds = "events", 1 }, "--streams"},
		{"events without rounds", func(o *Options) { o.Phases, o.Streams = "events", 10 }, "--event-rounds"},
		{"more rounds than streams", func(o *Options) { o.Phases, o.Streams, o.EventRounds = "events", 2, 3 }, "--event-rounds"},
		{"webhooks without a rate", func(o *Options) { o.Phases, o.WebhookSeconds, o.WebhookWrites = "webhooks", 20, "comment" }, "--webhook-rate"},
		{"webhooks without seconds", func(o *Options) { o.Phases, o.WebhookRate, o.WebhookWrites = "webhooks", 50, "comment" }, "--webhook-seconds"},
		{"webhooks with unknown writes", func(o *Options) {
			o.Phases, o.WebhookRate, o.WebhookSeconds, o.WebhookWrites = "webhooks", 50, 20, "delete"
		}, "--webhook-writes"},
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
