package activities

import (
	"context"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"

	"github.com/chorus-dev/chorus/store"
)

// Metrics of pruning (docs/write-path.md, "Bounded growth"), through the worker's SDK metrics
// handler: Prometheus shows chorus_pruned_rows_total{table} and chorus_retained_rows{table}.
const (
	PrunedRowsMetric   = "chorus_pruned_rows"
	RetainedRowsMetric = "chorus_retained_rows"
)

// PruneTables are the tables Prune keeps bounded, as the metrics name them.
var PruneTables = []string{"tool_requests", "change_journal", "claim_next_attempts", "claim_reservations"}

// Prune deletes the rows past their windows (store.Prune with a.Retention, the change journal's
// window raised to the ledger's and to the namespace's retention) and records what it deleted
// and what the tables hold in the worker's metrics.
func (a *Activities) Prune(ctx context.Context) (store.Pruned, error) {
	r := a.retention()
	if a.Temporal != nil && !a.NoNamespaceFloor {
		ns, err := a.Temporal.WorkflowService().DescribeNamespace(ctx,
			&workflowservice.DescribeNamespaceRequest{Namespace: activity.GetInfo(ctx).WorkflowNamespace})
		if err != nil {
			return store.Pruned{}, err
		}
		r.Journal = max(r.Journal, ns.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
	}
	out, err := a.Store.Prune(ctx, r, store.Now())
	m := activity.GetMetricsHandler(ctx)
	for table, n := range map[string]int{"tool_requests": out.Requests, "change_journal": out.Journal,
		"claim_next_attempts": out.ClaimAttempts, "claim_reservations": out.ClaimReservations, "events": out.Events,
		"webhook_deliveries": out.Deliveries} {
		m.WithTags(map[string]string{"table": table}).Counter(PrunedRowsMetric).Inc(int64(n))
	}
	if err != nil {
		return out, err
	}
	sizes, err := a.Store.RetainedRows(ctx)
	if err != nil {
		return out, err
	}
	for table, n := range sizes {
		m.WithTags(map[string]string{"table": table}).Gauge(RetainedRowsMetric).Update(float64(n))
	}
	return out, nil
}

// retention is a.Retention with each window that is not set at its default, and the journal's at
// least the ledger's.
func (a *Activities) retention() store.Retention {
	r, d := a.Retention, store.DefaultRetention
	if r.Requests <= 0 {
		r.Requests = d.Requests
	}
	if r.Journal <= 0 {
		r.Journal = d.Journal
	}
	if r.ClaimAttempts <= 0 {
		r.ClaimAttempts = d.ClaimAttempts
	}
	r.Journal = max(r.Journal, r.Requests)
	return r
}
