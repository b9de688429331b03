package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/bench"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// benchWiring is what package bench takes from this command: the version, runServer for the
// stack it starts (one process, API and worker), and dialTemporal.
func benchWiring() bench.Wiring {
	return bench.Wiring{
		Version: version,
		Serve: func(ctx context.Context, log *slog.Logger, st *store.Store, s bench.Server, ready func()) error {
			return runServer(ctx, log, st, serverConfig{role: roleAll, addr: s.Addr,
				temporal: temporalConfig{address: s.TemporalAddress, namespace: s.Namespace}, temporalWait: s.TemporalWait,
				pprofAddr: s.PprofAddr, retention: s.Retention, pruneInterval: s.PruneInterval, soak: s.Soak,
				webhooks: webhooksConfig{allow: s.WebhookAllow}}, ready)
		},
		DialTemporal: func(ctx context.Context, log *slog.Logger, address, namespace string, wait time.Duration) (client.Client, error) {
			return dialTemporal(ctx, log, temporalConfig{address: address, namespace: namespace}, wait)
		},
	}
}

// eventBenchFlags binds the flags of the events and webhooks phases.
func eventBenchFlags(cmd *cobra.Command, o *bench.Options) {
	f := cmd.Flags()
	f.IntVar(&o.Streams, "streams", 200, "events phase: event streams (GET /api/events) open at once, one agent each")
	f.IntVar(&o.EventRounds, "event-rounds", 2, "events phase: task_assigned events each stream receives")
	f.IntVar(&o.WebhookRate, "webhook-rate", 50, "webhooks phase: events written a second")
	f.IntVar(&o.WebhookSeconds, "webhook-seconds", 20, "webhooks phase: how long the events are written")
	f.StringVar(&o.WebhookWrites, "webhook-writes", "comment", "webhooks phase: the writes that make the events: comment "+
		"(chorus_add_comment, a store transaction each) or assign (chorus_pm_assign_task, a task workflow's update each, "+
		"so deliveries compete with lifecycle work)")
}

func newBenchCmd() *cobra.Command {
	o := bench.Options{}
	var surface bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test Chorus over MCP and compare it with bare Temporal floors (what `make bench` runs)",
		Long: `Measure Chorus the way agents use it: MCP clients (one session and one API key per simulated
agent) calling the lifecycle tools over Streamable HTTP, and, against the same Temporal server in
the same run, "floors": a bare workflow of the bench's own on its own task queue, updated with a
no-op local activity, a no-op activity, and created by update-with-start.

By default it starts the whole stack itself, as chorus dev does, on free ports in a temporary
directory: the Temporal dev server, SQLite (or --database-url for PostgreSQL), the worker and the
MCP endpoint. With --endpoint and --key it measures a running Chorus instead; --temporal-address
then enables the floors, and --database-url (the app database of that Chorus) lets it create the
developer agents and seed the read-only project.

Phases (--phases, comma-separated; default all):
  floors  bare Temporal: update+local activity, update+activity, update-with-start; then the same
          with --agents concurrent clients
  single  one agent, one call at a time: create a task, claim, in_progress, report work, submit,
          mark criteria, verify; create and claim an idea
  agents  --agents agents each working --tasks-per-agent tasks at once (claim, in_progress, submit)
  race    --racers agents claim the same task at once: one must win, the rest be refused
  reads   get_task, list_tasks (first and deep page), get_unblocked_tasks on a project of
          --read-tasks seeded tasks (and --read-tasks-large, when set). The seeded rows are written
          straight to the database with no workflow behind them, in a project that no command
          touches: reads come from the database only, so they measure the same thing.
  bulk    chorus_create_tasks in batches of --bulk-size, tasks per second
  events  --streams event streams (GET /api/events), one agent each: server memory per open stream
          (target at most 64 KiB), then --event-rounds task assignments per agent through MCP, each
          timed from the assign call's return to its frame being read (target p99 at most 1 s)
  webhooks  one webhook on a project of its own, to a receiver on 127.0.0.1 (the started server's
          allow-list admits it); --webhook-rate events a second for --webhook-seconds through MCP
          (--webhook-writes comment or assign): delivery lag p50/p95/p99, every event delivered,
          the backlog drained within 5 s

Run only when named:
  soak      --soak-agents agents claim and release for --soak-duration, each call with its own
            requestId, while the stack prunes with a --soak-window retention every
            --prune-interval; it samples the sizes of the requestId ledger and the change journal
            and says whether they stay flat (default: the hour the issue asks; a short one:
            --soak-duration 4m --soak-window 30s --prune-interval 10s --soak-sample 10s)
  opscheck  --ops-entities open tasks seeded into the database, each task's workflow started
            from its rows as ops repair starts one (default 100000), then a full chorus ops check pass, an incremental pass,
            20 claims and another incremental pass (--ops-concurrency entities at once), with
            the 1,000,000 estimate

It first prints the surface (what reaches the model from tools/list and the instructions, per
preset and per toolset; docs/rules.md §3.3), which needs no stack: --surface prints only that.
Then it prints a Markdown table per phase and writes every figure to --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if surface {
				_, err := bench.PrintSurface(cmd.OutOrStdout())
				return err
			}
			return bench.Run(cmd.Context(), o, benchWiring(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Phases, "phases", strings.Join(bench.AllPhases, ","), "phases to run, comma-separated: "+strings.Join(bench.AllPhases, ", "))
	f.IntVar(&o.Agents, "agents", 50, "simulated agents working at once (agents phase) and the concurrency of the concurrent floors")
	f.IntVar(&o.TasksPer, "tasks-per-agent", 2, "tasks each agent works in the agents phase")
	f.IntVar(&o.Rounds, "rounds", 10, "rounds of the single-agent lifecycle")
	f.IntVar(&o.Racers, "racers", 20, "agents racing for one task in the race phase")
	f.IntVar(&o.RaceRounds, "race-rounds", 3, "tasks raced for")
	f.IntVar(&o.ReadTasks, "read-tasks", 10000, "tasks seeded for the reads phase")
	f.IntVar(&o.ReadLarge, "read-tasks-large", 0, "a second, larger read project (e.g. 100000); 0 skips it")
	f.IntVar(&o.ReadCalls, "read-calls", 30, "calls per read tool and size")
	f.IntVar(&o.BulkBatches, "bulk-batches", 6, "chorus_create_tasks calls in the bulk phase")
	f.IntVar(&o.BulkSize, "bulk-size", 50, "tasks per chorus_create_tasks call in the bulk phase (1 to 100)")
	f.IntVar(&o.FloorOps, "floor-ops", 100, "sequential operations per floor")
	f.IntVar(&o.FloorPer, "floor-per-client", 10, "operations per client of the concurrent floors")
	eventBenchFlags(cmd, &o)
	f.StringVar(&o.JSONPath, "json", "bench-results.json", "write every figure, with the machine, to this JSON file (empty: none)")
	f.StringVar(&o.DatabaseURL, "database-url", "", "PostgreSQL URL for the app database (default: SQLite in the temporary directory); "+
		"with --endpoint, the database of the Chorus being measured")
	f.StringVar(&o.Endpoint, "endpoint", "", "measure this running MCP endpoint (http://host:port/api/mcp) instead of starting one")
	f.StringVar(&o.Key, "key", "", "with --endpoint: an admin agent's API key (cho_...)")
	f.StringVar(&o.TemporalAddress, "temporal-address", "", "with --endpoint: host:port of that Chorus's Temporal frontend, for the floors")
	f.StringVar(&o.Namespace, "namespace", workflows.Namespace, "Temporal namespace")
	f.StringArrayVar(&o.DynamicConfig, "dynamic-config", nil, "KEY=VALUE passed to the started dev server as --dynamic-config-value (repeatable), "+
		"e.g. history.transferProcessorMaxPollRPS=1000")
	f.StringVar(&o.PprofAddr, "pprof-addr", "", "serve the started Chorus's profiles (net/http/pprof) on this address while the bench runs")
	f.BoolVar(&surface, "surface", false, "print only the model-facing surface per preset and toolset (no stack, a second) and exit")
	f.BoolVar(&o.Keep, "keep", false, "keep the temporary directory (databases, Temporal log) after the run")
	f.IntVar(&o.SoakAgents, "soak-agents", 8, "soak phase: agents claiming and releasing at once")
	f.DurationVar(&o.SoakDuration, "soak-duration", time.Hour, "soak phase: how long the agents work")
	f.DurationVar(&o.SoakWindow, "soak-window", 5*time.Minute, "soak phase: the ledger's and journal's retention the started stack prunes with")
	f.DurationVar(&o.SoakSample, "soak-sample", 30*time.Second, "soak phase: how often the table sizes are sampled")
	f.DurationVar(&o.PruneInterval, "prune-interval", 30*time.Second, "soak phase: how often the started stack prunes")
	f.IntVar(&o.OpsEntities, "ops-entities", 100000, "opscheck phase: open tasks seeded into the database, each with its workflow started from its rows")
	f.IntVar(&o.OpsConcurrency, "ops-concurrency", 8, "opscheck phase: entities chorus ops check compares at once")
	f.BoolVar(&o.SeedLive, "seed-live-database", false, "with --endpoint: let the reads phase write its seeded project (tasks without "+
		"workflows, which chorus ops check then lists) into the measured Chorus's database")
	return cmd
}
