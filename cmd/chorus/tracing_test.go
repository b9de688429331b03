package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
)

// A traced tool call is one trace: the tool's span, under it the Temporal client's update
// call, the workflow's handling of the update, the activity that writes, and the SQL statements
// that activity runs; each span's parent is in the same trace (docs/operations.md "Tracing").
func TestTracedToolCallYieldsLinkedSpans(t *testing.T) {
	tmp := startReadyTemporal(t)
	ctx := context.Background()
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st := storetest.Open(t, dialect)
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
				OwnerEmail: "owner@example.com", AgentName: "Admin"})
			require.NoError(t, err)
			spans := tracetest.NewInMemoryExporter()
			provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
			queue := "chorus-traced-" + dialect + "-" + store.NewUUID()[:8]
			addr, _ := tmp.serve(t, st, serverConfig{role: roleAll, temporal: temporalConfig{namespace: workflows.Namespace}, taskQueue: queue,
				tracerProvider: provider})
			a, err := connectAgent(ctx, "http://"+addr+"/api/mcp", boot.Key)
			require.NoError(t, err)
			defer a.Close()
			var project struct{ UUID string }
			require.NoError(t, a.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "traced"}, &project))
			var created struct{ Tasks []struct{ UUID string } }
			require.NoError(t, a.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
				"tasks": []map[string]any{{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created))
			require.Len(t, created.Tasks, 1)
			spans.Reset()
			require.NoError(t, a.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": created.Tasks[0].UUID}, nil))

			got := spans.GetSpans()
			var tool *tracetest.SpanStub
			for i := range got {
				if got[i].Name == "tool chorus_claim_task" {
					tool = &got[i]
				}
			}
			require.NotNil(t, tool, "no span for the tool call among %v", names(got))
			byID := map[string]tracetest.SpanStub{}
			for _, s := range got {
				if s.SpanContext.TraceID() == tool.SpanContext.TraceID() {
					byID[s.SpanContext.SpanID().String()] = s
				}
			}
			// chain names the span and its ancestors up to the tool's span.
			chain := func(s tracetest.SpanStub) []string {
				var out []string
				for {
					out = append(out, s.Name)
					p, ok := byID[s.Parent.SpanID().String()]
					if !ok {
						return out
					}
					s = p
				}
			}
			var update, handle, activity, sql []string
			for _, s := range byID {
				c := chain(s)
				require.Equal(t, tool.Name, c[len(c)-1], "span %q does not lead up to the tool's span: %v", s.Name, c)
				switch {
				case strings.HasPrefix(s.Name, "UpdateWorkflow:"):
					update = c
				case strings.HasPrefix(s.Name, "HandleUpdate:"):
					handle = c
				case strings.HasPrefix(s.Name, "RunActivity:ApplyTaskChange"):
					activity = c
				case s.SpanKind.String() == "client" && strings.Contains(strings.Join(c, " "), "RunActivity:ApplyTaskChange") &&
					!strings.HasPrefix(s.Name, "RunActivity"):
					sql = c
				}
			}
			require.NotNil(t, update, "no update span in the tool's trace: %v", names(got))
			require.NotNil(t, handle, "no span for the workflow handling the update: %v", names(got))
			require.NotNil(t, activity, "no span for the write activity: %v", names(got))
			require.NotNil(t, sql, "no SQL span under the write activity: %v", names(got))
			require.Contains(t, handle, update[0], "the workflow's handling follows the client's update call")
			require.Contains(t, sql, activity[0], "the SQL statement runs under the activity")
		})
	}
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
