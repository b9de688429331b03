package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// A non-deterministic change reaches a running workflow: an idea workflow runs under code that
// records a side effect first (an "older release"), then the workers of this binary take over
// and cannot replay its history. Its workflow task fails attempt after attempt: chorus ops
// failed lists the run as stuck with the non-determinism, chorus ops replay names the
// divergence against this binary's code, and the SDK's workflow task failure counter counts it
// (docs/operations.md "Failed and stuck runs"). Temporal behaves the same whatever the database, so SQLite only.
func TestNonDeterministicChangeIsTriaged(t *testing.T) {
	e := startEnv(t, "sqlite", envOptions{flows: true, noWorker: true, callTimeout: 3 * time.Second})
	ctx := context.Background()

	old := worker.New(e.tc, e.queue, worker.Options{})
	old.RegisterWorkflowWithOptions(func(ctx workflow.Context, in workflows.IdeaRun) error {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any { return 1 }) // what this binary's code does not do
		return workflows.IdeaWorkflow(ctx, in)
	}, workflow.RegisterOptions{Name: workflows.IdeaWorkflowName})
	old.RegisterActivity(activities.New(e.st, e.tc))
	require.NoError(t, old.Start())

	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	idea := createIdea(t, admin, project, "Idea", nil)
	old.Stop()

	// This binary's workers, with the SDK metrics as chorus serve exports them.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	handler := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)).Meter("go.temporal.io/sdk"), UseMonotonicCounters: true})
	mc, err := client.NewClientFromExisting(e.tc, client.Options{MetricsHandler: handler})
	require.NoError(t, err)
	w := workflows.NewWorker(mc, e.queue, activities.New(e.st, e.tc), worker.Options{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	// A command on the idea needs a workflow task, which the new code cannot complete.
	require.Contains(t, fails(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}), "Still in progress")

	x := &ops.Ops{Flows: workflows.NewClient(e.tc, e.queue, nil)}
	var stuck *ops.FailedRun
	requireEventually(t, func() bool {
		runs, err := x.Failed(ctx)
		require.NoError(t, err)
		for _, r := range runs {
			if r.WorkflowID == vocab.IdeaID(idea) {
				stuck = &r
			}
		}
		return stuck != nil
	}, "ops failed lists the stuck run")
	require.Equal(t, ops.RunStuck, stuck.Status)
	require.Equal(t, "idea "+idea, stuck.Entity)
	require.GreaterOrEqual(t, stuck.Attempt, int32(2))
	require.Contains(t, strings.ToLower(stuck.Reason), "nondeterministic", stuck.Reason)
	require.False(t, stuck.Since.IsZero())

	r, err := x.ReplayHistory(ctx, vocab.IdeaID(idea), "")
	require.NoError(t, err)
	require.Error(t, r.Divergence, "this binary's code does not replay the run")
	explained := r.Explain()
	require.Contains(t, explained, "The code diverges from the history at event")
	require.Contains(t, explained, "TMPRL1100", "the SDK's non-determinism error, as the replayer words it")
	require.Contains(t, explained, "workflow.GetVersion")

	var failures float64
	requireEventually(t, func() bool {
		fams, err := reg.Gather()
		require.NoError(t, err)
		failures = 0
		for _, f := range fams {
			if f.GetName() == "temporal_workflow_task_execution_failed_total" {
				for _, m := range f.GetMetric() {
					failures += m.GetCounter().GetValue()
				}
			}
		}
		return failures >= 1
	}, "the workflow task failure counter counts the non-determinism")

	// Fixed by terminating the run; repair (with the database) then starts a new one from the rows.
	require.NoError(t, e.tc.TerminateWorkflow(ctx, vocab.IdeaID(idea), "", "non-deterministic"))
	var runs []ops.FailedRun
	requireEventually(t, func() bool { // the listing reads visibility, which follows within moments
		var err error
		runs, err = x.Failed(ctx)
		require.NoError(t, err)
		return len(runs) == 1 && runs[0].Status == ops.RunTerminated
	}, "ops failed lists the terminated run")
	require.Contains(t, runs[0].Reason, "non-deterministic")
	found, err := e.ops().Check(ctx, "")
	require.NoError(t, err)
	require.Len(t, found, 1)
	_, err = e.ops().Repair(ctx, found[0])
	require.NoError(t, err)
	e.requireAgreement()
	requireEventually(t, func() bool {
		runs, err := x.Failed(ctx)
		require.NoError(t, err)
		return len(runs) == 0
	}, "after the repair the terminated run is history")
}
