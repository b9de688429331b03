package main

import (
	"database/sql"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// processMetrics is one process's Prometheus registry, served at GET /metrics (docs/operations.md
// "Metrics"): the Go runtime and the process, the database pool (sql.DBStats), the Temporal
// SDK's client and worker metrics (through the SDK's OpenTelemetry handler and OpenTelemetry's
// Prometheus exporter), and Chorus's own (mcp.Metrics, and the workflows' projection conflicts
// through the SDK handler).
type processMetrics struct {
	reg *prometheus.Registry
	// temporal is the Temporal client's metrics handler; workers created from the client use it.
	temporal client.MetricsHandler
	// tools records the MCP endpoint's calls and refusals.
	tools *mcp.Metrics
}

// timerBuckets are the boundaries, in seconds, of the SDK's latency histograms (OpenTelemetry's
// default boundaries are made for milliseconds).
var timerBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

func newProcessMetrics(log *slog.Logger, db *sql.DB, dbName string) (*processMetrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db, dbName))
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: timerBuckets}})))
	handler := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("go.temporal.io/sdk"),
		// Counters only grow: exported as Prometheus counters (..._total), so rate() applies.
		UseMonotonicCounters: true,
		OnError:              func(err error) { log.Warn("temporal sdk metrics", "err", err) },
	})
	// Each entity's conflict counter exists from the start, at 0, for the alert rules.
	for _, e := range []vocab.Entity{vocab.EntityIdea, vocab.EntityProposal, vocab.EntityTask} {
		handler.WithTags(map[string]string{"entity": string(e)}).Counter(workflows.ProjectionConflictsMetric).Inc(0)
	}
	return &processMetrics{reg: reg, temporal: handler, tools: mcp.NewMetrics(reg)}, nil
}

// handler serves the registry in the Prometheus text format.
func (m *processMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
