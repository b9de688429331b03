package main

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/workflows"
)

// What a worker process sets up in its Temporal namespace when it starts.

// prepareWorkerNamespace readies the namespace for a process that runs a worker: Chorus's search
// attributes registered (an error if they cannot be), and the pruning schedule made in the
// background. A process without a worker does nothing.
func prepareWorkerNamespace(ctx context.Context, log *slog.Logger, tc client.Client, cfg serverConfig) error {
	if cfg.role == roleAPI {
		return nil
	}
	regCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := workflows.EnsureSearchAttributes(regCtx, tc, cfg.temporal.namespace)
	cancel()
	if err != nil {
		return err
	}
	// Pruning is housekeeping: a worker whose schedule cannot be made yet serves anyway and
	// keeps trying in the background, saying why in its log.
	go ensurePruneSchedule(ctx, log, tc, queueOrDefault(cfg.taskQueue), cmp.Or(cfg.pruneInterval, workflows.PruneInterval))
	return nil
}

// ensurePruneSchedule makes sure the pruning schedule of taskQueue exists (workflows.
// EnsurePruneSchedule), trying again with a growing pause (up to 5 minutes) until it does or ctx
// ends; each failure is logged as a warning naming what to check.
func ensurePruneSchedule(ctx context.Context, log *slog.Logger, tc client.Client, taskQueue string, every time.Duration) {
	pause := 5 * time.Second
	for {
		tryCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := workflows.EnsurePruneSchedule(tryCtx, tc, taskQueue, every)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("pruning is not scheduled yet; the requestId ledger and change journal grow until it is (check that the namespace allows schedules); trying again",
			"schedule", workflows.PruneScheduleID(taskQueue), "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Minute)
	}
}
