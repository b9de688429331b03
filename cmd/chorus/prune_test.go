package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// Pruning runs on its own (docs/write-path.md, "Bounded growth"): a worker makes sure its
// deployment's schedule exists, the schedule starts the pruning workflow on the deployment's task
// queue every interval, and ledger rows past their window go without anyone asking; on SQLite
// and PostgreSQL.
func TestPruningRunsOnItsOwn(t *testing.T) {
	tmp := startReadyTemporal(t)
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, dialect)
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
				OwnerEmail: "owner@example.com", AgentName: "Admin"})
			require.NoError(t, err)
			old := store.ToolRequest{AgentUUID: boot.Agent.UUID, RequestID: "old", Tool: "t", ArgsHash: "h", State: "done",
				CreatedAt: store.Now().Add(-2 * time.Hour)}
			fresh := old
			fresh.RequestID, fresh.CreatedAt = "fresh", store.Now()
			_, err = st.DB.NewInsert().Model(&[]store.ToolRequest{old, fresh}).Exec(ctx)
			require.NoError(t, err)

			queue := "prune-" + dialect + "-" + store.NewUUID()[:8]
			port, err := devserver.FreePort()
			require.NoError(t, err)
			cfg := serverConfig{role: roleWorker, addr: fmt.Sprintf("127.0.0.1:%d", port), temporal: temporalConfig{address: tmp.addr, namespace: workflows.Namespace}, temporalWait: 30 * time.Second, taskQueue: queue,
				retention: store.Retention{Requests: time.Hour}, pruneInterval: 2 * time.Second}
			srvCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- runServer(srvCtx, slog.New(slog.NewTextHandler(io.Discard, nil)), st, cfg, nil) }()
			defer func() { cancel(); <-done }()

			deadline := time.Now().Add(time.Minute)
			for {
				n, err := st.DB.NewSelect().Model((*store.ToolRequest)(nil)).Where("request_id = 'old'").Count(ctx)
				require.NoError(t, err)
				if n == 0 {
					break
				}
				require.True(t, time.Now().Before(deadline), "the ledger row past its window was never pruned")
				time.Sleep(200 * time.Millisecond) // poll interval
			}
			n, err := st.DB.NewSelect().Model((*store.ToolRequest)(nil)).Where("request_id = 'fresh'").Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "a row within its window stays")
			d, err := tmp.tc.ScheduleClient().GetHandle(ctx, workflows.PruneScheduleID(queue)).Describe(ctx)
			require.NoError(t, err)
			require.GreaterOrEqual(t, d.Info.NumActions, 1, "the schedule ran the pruning workflow")
		})
	}
}

// Every worker start calls EnsurePruneSchedule: a schedule that already exists with the same
// interval is left alone, and one with another interval takes the new one (the SDK's
// ErrSkipScheduleUpdate; a nil update panicked inside the SDK and took the worker down).
func TestPruneScheduleSurvivesRestarts(t *testing.T) {
	tmp := startReadyTemporal(t)
	ctx := context.Background()
	queue := "prune-restart-" + store.NewUUID()[:8]
	for _, every := range []time.Duration{time.Hour, time.Hour, 2 * time.Hour} {
		require.NoError(t, workflows.EnsurePruneSchedule(ctx, tmp.tc, queue, every))
		d, err := tmp.tc.ScheduleClient().GetHandle(ctx, workflows.PruneScheduleID(queue)).Describe(ctx)
		require.NoError(t, err)
		require.Len(t, d.Schedule.Spec.Intervals, 1)
		require.Equal(t, every, d.Schedule.Spec.Intervals[0].Every)
	}
}
