package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/uptrace/bun/extra/bunotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/chorus-dev/chorus/store"
)

// tracingHelp is docs/operations.md "Tracing" in one line, for --help texts.
const tracingHelp = "OpenTelemetry tracing is off unless OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint " +
	"(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set"

// tracing is what a traced process adds: spans for each MCP tool call (mcp.Deps.Tracer), for
// Temporal's client calls, workflows, updates and activities (the SDK's OpenTelemetry tracing
// interceptor, which carries the trace through Temporal's headers from the API process to the
// worker), and for each SQL statement (bunotel, the statement without its values), all in one
// trace per tool call.
type tracing struct {
	provider    trace.TracerProvider
	interceptor interceptor.Interceptor
	shutdown    func(context.Context) error
}

// tracer is the tracer of Chorus's own spans (nil when tracing is off).
func (t *tracing) tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.provider.Tracer("github.com/chorus-dev/chorus")
}

// interceptors are the Temporal client interceptors (none when tracing is off); workers created
// from the client use them too.
func (t *tracing) interceptors() []interceptor.ClientInterceptor {
	if t == nil {
		return nil
	}
	return []interceptor.ClientInterceptor{t.interceptor}
}

// traceSQL adds a span per statement of st to the caller's trace.
func (t *tracing) traceSQL(st *store.Store) {
	if t != nil {
		st.DB.AddQueryHook(bunotel.NewQueryHook(bunotel.WithTracerProvider(t.provider)))
	}
}

// newTracing traces to provider (spans of Chorus, Temporal and SQL), or returns nil for a nil
// provider.
func newTracing(provider trace.TracerProvider, shutdown func(context.Context) error) (*tracing, error) {
	if provider == nil {
		return nil, nil
	}
	in, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: provider.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
			propagation.Baggage{}),
	})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if shutdown == nil {
		shutdown = func(context.Context) error { return nil }
	}
	return &tracing{provider: provider, interceptor: in, shutdown: shutdown}, nil
}

// tracingFromEnv sets tracing up from the standard OpenTelemetry environment variables, or
// returns nil when they do not ask for it: tracing is off by default. It is on when
// OTEL_TRACES_EXPORTER is "otlp", or when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
// keep it off. The exporter reads the other OTEL_EXPORTER_OTLP_* variables (endpoint, headers,
// TLS, timeout) itself; OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL picks http/protobuf (default) or
// grpc; OTEL_SERVICE_NAME (default chorus) and OTEL_RESOURCE_ATTRIBUTES name the process,
// OTEL_TRACES_SAMPLER(_ARG) sample.
func tracingFromEnv(ctx context.Context, role string) (*tracing, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "otlp":
	case "none":
		return nil, nil
	case "":
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s is not supported: set it to otlp (or none), and point "+
			"OTEL_EXPORTER_OTLP_ENDPOINT at an OpenTelemetry collector", exp)
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exporter sdktrace.SpanExporter
		err      error
	)
	switch protocol {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported: use http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("chorus"),
		semconv.ServiceVersion(version), attribute.String("chorus.role", role)), resource.WithFromEnv(),
		resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return newTracing(provider, provider.Shutdown)
}
