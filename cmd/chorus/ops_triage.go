package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
)

// openTemporal connects to Temporal for ops failed and ops replay, which read no rows: it opens
// the database only when there is one (CHORUS_DATABASE_URL, or the data dir's SQLite file), to
// refuse a Temporal that is not the database's (ops.VerifyCluster).
func (o *opsOptions) openTemporal(ctx context.Context, g *globals) (*ops.Ops, func(), error) {
	conv, err := o.temporal.converters()
	if err != nil {
		return nil, nil, err
	}
	var st *store.Store
	if dsn := g.databaseURL(); store.IsPostgresURL(dsn) || fileExists(dsn) {
		if st, err = g.openStore(ctx); err != nil {
			return nil, nil, err
		}
	}
	x, closeTemporal, err := o.dial(ctx, g, st)
	if err != nil {
		if st != nil {
			_ = st.Close()
		}
		return nil, nil, err
	}
	x.Store, x.Flows.Rows = nil, nil // these commands read no rows
	x.Converters = &conv
	return x, func() {
		closeTemporal()
		if st != nil {
			_ = st.Close()
		}
	}, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

func newOpsFailedCmd(g *globals) *cobra.Command {
	o := opsOptions{}
	cmd := &cobra.Command{
		Use:   "failed",
		Short: "List failed, timed-out, terminated and stuck runs with their reason; exit 1 when there is one",
		Long: `List the runs of this deployment's task queue that need an operator, with the entity, the reason
and the age:

  stuck       running, but its workflow task fails attempt after attempt, so the run takes in
              nothing (every command on its entity answers "Still in progress"). The usual cause
              is non-determinism: the workers' code no longer replays the run's history. See why
              with: chorus ops replay WORKFLOW_ID
  failed      the run ended with a failure
  timed-out   the run exceeded its timeout
  terminated  someone (or a reset) terminated the run

A closed run is listed only while it is its workflow's latest run: once "chorus ops repair" starts
a new run from the rows, it is gone from this list. Terminated and failed runs stay visible only as
long as the namespace's retention keeps them.

Exit status: 0 when there is none, 1 when there is one, 2 when the list could not be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			x, closeAll, err := o.openTemporal(cmd.Context(), g)
			if err != nil {
				return exitWith(2, err)
			}
			defer closeAll()
			runs, err := x.Failed(cmd.Context())
			if err != nil {
				return exitWith(2, err)
			}
			return reportFailed(runs, o.asJSON, time.Now(), cmd.OutOrStdout())
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the runs as JSON (a list)")
	return cmd
}

// reportFailed prints the runs ops failed found and returns the exit status.
func reportFailed(runs []ops.FailedRun, asJSON bool, now time.Time, out io.Writer) error {
	if asJSON {
		if runs == nil {
			runs = []ops.FailedRun{}
		}
		if err := writeJSON(out, runs); err != nil {
			return err
		}
	} else if len(runs) == 0 {
		fmt.Fprintln(out, "none: no failed, timed-out, terminated or stuck runs")
	} else {
		for _, r := range runs {
			entity := r.Entity
			if entity == "" {
				entity = r.Type
			}
			status := r.Status
			if r.Attempt > 0 {
				status = fmt.Sprintf("%s (workflow task attempt %d)", status, r.Attempt)
			}
			fmt.Fprintf(out, "%s  %s  %s  %s ago\n    %s\n", r.WorkflowID, status, entity, age(now.Sub(r.Since)), r.Reason)
		}
		fmt.Fprintf(out, "%d run(s). See why a stuck run is stuck: chorus ops replay WORKFLOW_ID. A closed run whose "+
			"entity remains is restarted by: chorus ops repair WORKFLOW_ID\n", len(runs))
	}
	if len(runs) > 0 {
		return exitError{code: 1}
	}
	return nil
}

// age renders a duration the way an operator reads it: 45s, 12m, 3h10m, 2d4h.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

func newOpsReplayCmd(g *globals) *cobra.Command {
	o := opsOptions{}
	var runID string
	cmd := &cobra.Command{
		Use:   "replay WORKFLOW_ID | FILE",
		Short: "Replay a run's history against this binary's workflow code and print the first divergence",
		Long: `Replay the history of WORKFLOW_ID's latest run (or --run-id), fetched from Temporal, or of FILE (a
JSON history as "temporal workflow show --output json" writes it), against the workflow code built
into this chorus binary, the same code its workers run. No Go toolchain or source tree is needed.

When the code would issue other commands than the history recorded, it prints the first
divergence (the event and what was expected) and what to do about it. Run it with the binary of
the version you mean to deploy to learn, before deploying, whether it replays the running runs.

Exit status: 0 when the history replays, 1 when it diverges, 2 when it could not be read.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv, err := o.temporal.converters()
			if err != nil {
				return exitWith(2, err)
			}
			x := &ops.Ops{Converters: &conv} // a history file needs no Temporal, but its payloads may be sealed
			if st, err := os.Stat(args[0]); err != nil || st.IsDir() {
				var closeAll func()
				x, closeAll, err = o.openTemporal(cmd.Context(), g)
				if err != nil {
					return exitWith(2, err)
				}
				defer closeAll()
			}
			r, err := x.ReplayHistory(cmd.Context(), args[0], runID)
			if err != nil {
				return exitWith(2, err)
			}
			return reportReplay(r, cmd.OutOrStdout())
		},
	}
	o.flags(cmd)
	cmd.Flags().StringVar(&runID, "run-id", "", "replay this run instead of the latest")
	return cmd
}

func reportReplay(r ops.Replay, out io.Writer) error {
	what := r.WorkflowID
	if r.RunID != "" {
		what += " (run " + r.RunID + ")"
	}
	if r.Divergence == nil {
		fmt.Fprintf(out, "replays: %s, %d events, matches this binary's workflow code\n", what, r.Events)
		return nil
	}
	fmt.Fprintf(out, "diverges: %s, %d events\n%s\n", what, r.Events, r.Explain())
	return exitError{code: 1}
}
