package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
)

// GET /metrics of a running chorus (chorus dev: API and worker in one process), after known
// tool calls, refusals, a projection conflict and a failing workflow task, shows each of them
// counted exactly, the latency histograms, the database pool and the Temporal SDK's figures;
// on SQLite and PostgreSQL.
func TestMetricsEndpoint(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("starts a whole chorus dev stack; skipped under -short")
	}
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dataDir := t.TempDir()
			dsn := filepath.Join(dataDir, "chorus.db")
			if dialect == "pg" {
				dsn = storetest.NewDSN(t, "pg")
			}
			t.Setenv("CHORUS_DATABASE_URL", dsn)
			t.Setenv("TEMPORAL_ADDRESS", "")
			t.Setenv("CHORUS_BOOTSTRAP_ADMIN_KEY", "")
			t.Setenv("CHORUS_LOG_LEVEL", "error")
			stack := startMetricsStack(t, dataDir)
			ctx := context.Background()

			admin, err := connectAgent(ctx, stack.url, stack.adminKey)
			require.NoError(t, err)
			defer admin.Close()
			for range 3 {
				require.NoError(t, admin.Call(ctx, "chorus_checkin", nil, nil))
			}
			missing := store.NewUUID()
			for range 2 {
				var te *mcpclient.ToolError
				require.ErrorAs(t, admin.Call(ctx, "chorus_get_task", map[string]any{"taskUuid": missing}, nil), &te)
			}
			var project struct{ UUID string }
			require.NoError(t, admin.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "Metrics"}, &project))
			var created struct{ Tasks []struct{ UUID string } }
			require.NoError(t, admin.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
				"tasks": []map[string]any{{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created))
			require.Len(t, created.Tasks, 1)

			// A row edited behind Chorus's back: the next command is refused as a divergence.
			st, err := store.Open(ctx, dsn)
			require.NoError(t, err)
			defer st.Close()
			_, err = st.DB.NewUpdate().TableExpr("tasks").Set("version = version + 5").Where("uuid = ?", created.Tasks[0].UUID).Exec(ctx)
			require.NoError(t, err)
			var te *mcpclient.ToolError
			require.ErrorAs(t, admin.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": created.Tasks[0].UUID}, nil), &te)
			require.Contains(t, te.Text, "its stored record and its workflow disagree")

			// A request without a valid key.
			resp, err := http.Post(stack.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

			// A workflow task the worker cannot complete: a workflow type it does not know.
			tc, err := client.Dial(client.Options{HostPort: stack.temporalAddr, Namespace: workflows.Namespace})
			require.NoError(t, err)
			defer tc.Close()
			run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "metrics-probe/" + store.NewUUID(),
				TaskQueue: workflows.TaskQueue}, "NoSuchWorkflow")
			require.NoError(t, err)
			defer func() { _ = tc.TerminateWorkflow(ctx, run.GetID(), "", "test done") }()

			var fams map[string]*dto.MetricFamily
			deadline := time.Now().Add(30 * time.Second)
			for {
				fams = scrape(t, stack.metricsURL)
				if sum(fams, "temporal_workflow_task_execution_failed_total", nil) >= 1 || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			require.GreaterOrEqual(t, sum(fams, "temporal_workflow_task_execution_failed_total",
				map[string]string{"workflow_type": "NoSuchWorkflow"}), 1.0, "the failing workflow task is counted")

			ok := map[string]string{"outcome": "ok", "error_kind": ""}
			require.Equal(t, 3.0, sum(fams, "chorus_tool_calls_total", with(ok, "tool", "chorus_checkin")))
			require.Equal(t, 1.0, sum(fams, "chorus_tool_calls_total", with(ok, "tool", "chorus_create_tasks")))
			require.Equal(t, 2.0, sum(fams, "chorus_tool_calls_total",
				map[string]string{"tool": "chorus_get_task", "outcome": "refused", "error_kind": "not_found"}))
			require.Equal(t, 1.0, sum(fams, "chorus_tool_calls_total",
				map[string]string{"tool": "chorus_claim_task", "outcome": "refused", "error_kind": "diverged"}))
			require.Zero(t, sum(fams, "chorus_tool_calls_total", map[string]string{"outcome": "error"}))

			require.Equal(t, 2.0, sum(fams, "chorus_refusals_total", map[string]string{"kind": "not_found"}))
			require.Equal(t, 1.0, sum(fams, "chorus_refusals_total", map[string]string{"kind": "diverged"}))
			require.Equal(t, 1.0, sum(fams, "chorus_refusals_total", map[string]string{"kind": "unauthenticated"}))
			require.Equal(t, 4.0, sum(fams, "chorus_refusals_total", nil))
			require.Contains(t, series(fams, "chorus_refusals_total"), `kind="forbidden"`, "every kind is exported from the start")

			require.Equal(t, 1.0, sum(fams, "chorus_projection_conflicts_total", map[string]string{"entity": "task"}))
			require.Zero(t, sum(fams, "chorus_projection_conflicts_total", map[string]string{"entity": "idea"}))
			require.Contains(t, series(fams, "chorus_projection_conflicts_total"), `entity="proposal"`)

			h := histogram(t, fams, "chorus_tool_call_duration_seconds", map[string]string{"tool": "chorus_checkin", "outcome": "ok"})
			require.Equal(t, uint64(3), h.GetSampleCount())
			require.Greater(t, h.GetSampleSum(), 0.0)
			require.Less(t, h.GetSampleSum(), 30.0)

			// The database pool and the SDK's worker and client figures.
			require.Equal(t, st.Dialect(), labelOf(t, fams, "go_sql_open_connections", "db_name"))
			require.GreaterOrEqual(t, sum(fams, "go_sql_open_connections", nil), 1.0)
			require.Greater(t, sum(fams, "temporal_request_total", nil), 0.0)
			require.Greater(t, sum(fams, "temporal_worker_task_slots_available", map[string]string{"worker_type": "WorkflowWorker"}), 0.0)
			require.Greater(t, histogram(t, fams, "temporal_workflow_task_schedule_to_start_latency_seconds", nil).GetSampleCount(), uint64(0))
			require.Greater(t, histogram(t, fams, "temporal_activity_execution_latency_seconds", nil).GetSampleCount(), uint64(0))

			// Everything the dashboard and the alert rules in deploy/ name is among these.
			requireReferencedExported(t, fams)
		})
	}
}

// metricsStack is a running chorus dev for the metrics and readiness tests.
type metricsStack struct {
	url, metricsURL, temporalAddr, adminKey string
}

func startMetricsStack(t *testing.T, dataDir string) metricsStack {
	t.Helper()
	url, temporalAddr := startDev(t, dataDir)
	key, err := os.ReadFile(filepath.Join(dataDir, "admin.key"))
	require.NoError(t, err)
	return metricsStack{url: url, metricsURL: strings.TrimSuffix(url, "/api/mcp") + "/metrics", temporalAddr: temporalAddr,
		adminKey: strings.TrimSpace(string(key))}
}

// scrape reads a /metrics page in the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// matches reports whether m carries every label of want (a label wanted as "" must be absent or empty).
func matches(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// sum adds up the counter, gauge or untyped values of the series of name that match want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range fams[name].GetMetric() {
		if !matches(m, want) {
			continue
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return total
}

// histogram merges the count and sum of the histograms of name that match want; it fails the
// test when there is none.
func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	var count uint64
	var total float64
	found := false
	for _, m := range fams[name].GetMetric() {
		if h := m.GetHistogram(); h != nil && matches(m, want) {
			found = true
			count += h.GetSampleCount()
			total += h.GetSampleSum()
		}
	}
	require.True(t, found, "no histogram %s%v", name, want)
	return &dto.Histogram{SampleCount: &count, SampleSum: &total}
}

// series lists the label sets of name, one per line, for Contains checks.
func series(fams map[string]*dto.MetricFamily, name string) string {
	var b strings.Builder
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			b.WriteString(l.GetName() + `="` + l.GetValue() + `" `)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func labelOf(t *testing.T, fams map[string]*dto.MetricFamily, name, label string) string {
	t.Helper()
	ms := fams[name].GetMetric()
	require.NotEmpty(t, ms, "no series %s", name)
	for _, l := range ms[0].GetLabel() {
		if l.GetName() == label {
			return l.GetValue()
		}
	}
	return ""
}

func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range m {
		out[kk] = vv
	}
	return out
}
