package mcp

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/vocab"
)

// Metrics are the endpoint's Prometheus figures (docs/operations.md "Metrics"): every tool call by tool,
// outcome and error kind with its latency, and every refusal by kind. A nil *Metrics records
// nothing, so an endpoint built without one (most tests) works the same.
type Metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refusals *prometheus.CounterVec
	limited  *prometheus.CounterVec
}

// Outcomes of a tool call, the "outcome" label (vocab.Outcome).
const (
	outcomeOK = string(vocab.OutcomeOK)
	// outcomeRefused: a known answer that changed nothing (bad input, not found, forbidden, an
	// illegal transition, a workflow and its row that disagree). Agents meet these every day.
	outcomeRefused = string(vocab.OutcomeRefused)
	// outcomeError: Chorus could not give an answer (the database is unreachable, the deadline
	// passed with the outcome unknown, an internal error). These are the operators' concern.
	outcomeError = string(vocab.OutcomeError)
)

// Refusal kinds of the HTTP edge, outside any tool.
const (
	// KindUnauthenticated is the refusal kind of a request without a valid API key.
	KindUnauthenticated = "unauthenticated"
	// KindForbiddenHost: the request's Host is not one the server answers to (edge.go).
	KindForbiddenHost = "forbidden_host"
	// KindForbiddenOrigin: a browser request from an origin that may not call the endpoint.
	KindForbiddenOrigin = "forbidden_origin"
	// KindRateLimited: a request refused by a limit (limits.go); chorus_limit_refusals_total
	// says which.
	KindRateLimited = "rate_limited"
)

// RefusalKinds are the kinds chorus_refusals_total counts (each exported from the start, at 0,
// so an alert can compare against it before the first refusal).
var RefusalKinds = []string{string(vocab.RefusedInvalid), string(vocab.RefusedNotFound), string(vocab.RefusedForbidden),
	string(vocab.RefusedPrecondition), string(vocab.RefusedConflict), string(vocab.RefusedDiverged),
	string(vocab.RefusedAlreadyApplied), KindUnauthenticated, KindUnknownTool, KindMissingPermission, KindOutsideToolsets, KindReadOnly,
	KindForbiddenHost, KindForbiddenOrigin, KindRateLimited}

// durationBuckets span a fast read (a few milliseconds) to a call that runs into its deadline.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewMetrics registers the endpoint's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_tool_calls_total",
			Help: "MCP tool calls, by tool, outcome (ok, refused, error) and error kind (empty when ok)."},
			[]string{"tool", "outcome", "error_kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chorus_tool_call_duration_seconds",
			Help:    "Time from the start of an MCP request (authentication included) to its tool's answer.",
			Buckets: durationBuckets}, []string{"tool", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_refusals_total",
			Help: "Requests Chorus refused, by kind: a tool's refusal; a call to an unknown tool, to one the key lacks the " +
				"permission for, outside the connection's toolsets or blocked by read-only mode; a missing or invalid API key " +
				"(unauthenticated); a Host or Origin not allowed; a request over a limit (rate_limited)."},
			[]string{"kind"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chorus_limit_refusals_total",
			Help: "Requests refused with HTTP 429 by a limit: key_rate, key_in_flight, company_rate or company_in_flight."},
			[]string{"limit"}),
	}
	reg.MustRegister(m.calls, m.duration, m.refusals, m.limited)
	for _, k := range RefusalKinds {
		m.refusals.WithLabelValues(k)
	}
	for _, l := range LimitNames {
		m.limited.WithLabelValues(l)
	}
	return m
}

// limitRefusal records a request refused by limit (also a rate_limited refusal).
func (m *Metrics) limitRefusal(limit string) {
	if m != nil {
		m.limited.WithLabelValues(limit).Inc()
		m.refusals.WithLabelValues(KindRateLimited).Inc()
	}
}

// toolCall records one tool call that ended with err (nil for success) after d.
func (m *Metrics) toolCall(tool string, err error, d time.Duration) {
	if m == nil {
		return
	}
	outcome, kind := classify(err)
	m.calls.WithLabelValues(tool, outcome, kind).Inc()
	m.duration.WithLabelValues(tool, outcome).Observe(d.Seconds())
	if outcome == outcomeRefused {
		m.refusals.WithLabelValues(kind).Inc()
	}
}

// refusal records a refusal outside any tool (authentication, the Host and Origin checks).
func (m *Metrics) refusal(kind string) {
	if m != nil {
		m.refusals.WithLabelValues(kind).Inc()
	}
}

// classify names the outcome of a tool call and, for a failure, its kind: app.Classify's, which
// also decides what the agent reads (agentMessage).
func classify(err error) (outcome, kind string) {
	v := app.Classify(err)
	return string(v.Outcome), v.Kind
}

type requestStartKey struct{}

// withRequestStart marks when the request began (before authentication), so a tool call's
// latency and its log line's ms cover the whole request.
func withRequestStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, requestStartKey{}, t)
}

// requestStart is when the request began, or now when nothing marked it.
func requestStart(ctx context.Context) time.Time {
	if t, ok := ctx.Value(requestStartKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}
