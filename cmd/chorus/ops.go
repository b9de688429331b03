package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

func newOpsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ops",
		Short: "Check and repair workflows against their rows; list failed and stuck runs; replay histories",
		Long: `Check and repair the projection of workflows onto database rows (docs/write-path.md).

Both need the database (--data-dir, or CHORUS_DATABASE_URL) and a Temporal server with Chorus's
workers running (--temporal-address or TEMPORAL_ADDRESS; by default the address the chorus dev
stack of --data-dir recorded in <data-dir>/temporal.address, else 127.0.0.1:7233; and
TEMPORAL_NAMESPACE): they read each workflow's state through its "state" query. Both are safe on
a live system.

Every ops command refuses a Temporal other than the database's own: the first chorus serve or
chorus dev start records its cluster and namespace in the database, and ops names both when they
differ. "chorus ops bind --replace" records a deliberate move to another Temporal.

"chorus ops failed" lists runs that failed, timed out, were terminated or are stuck on a failing
workflow task; "chorus ops replay" replays a run's history against the workflow code built into
this binary and says where it diverges. docs/operations.md "Failed and stuck runs" walks through all four.`,
	}
	cmd.AddCommand(newOpsCheckCmd(g), newOpsRepairCmd(g), newOpsFailedCmd(g), newOpsReplayCmd(g), newOpsBindCmd(g))
	return cmd
}

type opsOptions struct {
	temporal    temporalConfig
	taskQueue   string
	asJSON      bool
	all         bool
	dryRun      bool
	incremental bool
	concurrency int
}

func (o *opsOptions) flags(cmd *cobra.Command) {
	// No default address here: address() falls back to the dev stack's recorded one, then 7233.
	o.temporal.flags(cmd, true, "")
	cmd.Flags().Lookup("temporal-address").Usage = "Temporal frontend (env TEMPORAL_ADDRESS; default: the address the chorus dev " +
		"stack of --data-dir recorded in " + devAddressFile + ", else 127.0.0.1:7233)"
	cmd.Flags().StringVar(&o.taskQueue, "task-queue", envOr("CHORUS_TASK_QUEUE", workflows.TaskQueue),
		"task queue of the Chorus deployment, where repair starts new runs (env CHORUS_TASK_QUEUE)")
	cmd.Flags().IntVar(&o.concurrency, "concurrency", 8, "entities compared at once")
}

// address is the Temporal frontend the ops command talks to: --temporal-address, else
// TEMPORAL_ADDRESS, else the address the dev stack of the data dir recorded, else the default
// of chorus dev.
func (o *opsOptions) address(g *globals) string {
	if o.temporal.address != "" { // --temporal-address, else TEMPORAL_ADDRESS
		return o.temporal.address
	}
	if addr, ok := readDevAddress(g.dataDir); ok {
		return addr
	}
	return "127.0.0.1:7233"
}

// open connects to the store and Temporal for an ops command, refusing a Temporal that is not
// the database's (ops.VerifyCluster); close releases both.
func (o *opsOptions) open(ctx context.Context, g *globals) (*ops.Ops, func(), error) {
	st, err := g.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	x, closeTemporal, err := o.dial(ctx, g, st)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return x, func() { closeTemporal(); _ = st.Close() }, nil
}

// dial connects to Temporal; with st, it refuses a Temporal that is not the database's, and says
// on stderr when the database has not recorded its Temporal yet.
func (o *opsOptions) dial(ctx context.Context, g *globals, st *store.Store) (*ops.Ops, func(), error) {
	addr := o.address(g)
	c := o.temporal
	c.address = addr
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tc, err := dialTemporal(ctx, quiet, c, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	conv, err := o.temporal.converters()
	if err != nil {
		tc.Close()
		return nil, nil, err
	}
	x := &ops.Ops{Store: st, Flows: workflows.NewClient(tc, o.taskQueue, nil), Concurrency: o.concurrency, Converters: &conv}
	x.Flows.SealText = o.temporal.sealsPayloads()
	if st != nil {
		x.Flows.Rows = st
		b, err := ops.VerifyCluster(ctx, st, tc, o.temporal.namespace, addr)
		if err != nil {
			tc.Close()
			return nil, nil, err
		}
		if b == nil {
			fmt.Fprintf(os.Stderr, "chorus: this database has not recorded its Temporal yet (a chorus serve or chorus dev start "+
				"of this version records it); make sure %s is its own\n", addr)
		}
	}
	return x, tc.Close, nil
}

func newOpsCheckCmd(g *globals) *cobra.Command {
	o := opsOptions{}
	cmd := &cobra.Command{
		Use:   "check [WORKFLOW_ID]",
		Short: "List every workflow that disagrees with its rows; exit 1 when there is one",
		Long: `Compare every idea, proposal and task workflow (or just WORKFLOW_ID, e.g. task/<uuid>) with its
rows and list each disagreement:

  diverged          the workflow runs and a column it owns differs from the row (shown per column)
  missing-workflow  the row exists and its workflow was never started
  closed-workflow   the row exists and its workflow's last run ended (terminated, failed, ...)
  missing-row       the workflow runs and holds the entity, but its row is missing
  stuck-activity    the workflow runs and an activity of it (a write) keeps failing, attempt after
                    attempt, so every command on the entity answers "Still in progress": look at
                    the failure shown; fix its cause, or terminate the workflow and run repair
  lost-rows         acceptance criteria or elaboration rounds the workflow holds are gone from the
                    database (e.g. with a task row deleted by hand); their text lived only there,
                    so repair cannot recreate them: restore them from a backup
  unresolved-count  a task's kept count of unresolved dependencies (what chorus_get_unblocked_tasks
                    reads) differs from what its dependencies say, e.g. after rows were written
                    by hand; repair recounts it

It is safe on a live system: each entity is compared on a consistent reading (its row before and
after its workflow's state, unchanged), and a workflow that is applying a command (an activity
pending) may legitimately have its row one version ahead. An entity that keeps changing through
every attempt is listed as busy: that is not a disagreement, and does not change the exit status.

A pass compares --concurrency entities at once and records, per entity it finds in agreement,
its row's version and its workflow's run. --incremental then compares only what moved since:
rows changed since (or never found in agreement), workflows that started a new run (a reset, a
restart), rows whose workflow is not running, and running workflows without a row; the rest is
skipped without a call to Temporal. Run an incremental pass often and a full one (the default)
daily: a write stuck on an entity that did not move is found by a full pass.

Exit status: 0 when everything agrees, 1 when something does not, 2 when the check could not run.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			only := ""
			if len(args) == 1 {
				only = args[0]
			}
			if only != "" && o.incremental {
				return errors.New("--incremental applies to a whole pass, not to one workflow id")
			}
			return runCheck(cmd.Context(), g, o, only, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the findings as JSON (a list; busy workflows are noted on stderr)")
	cmd.Flags().BoolVar(&o.incremental, "incremental", false, "compare only the entities that moved since the last pass")
	return cmd
}

func runCheck(ctx context.Context, g *globals, o opsOptions, only string, out, errOut io.Writer) error {
	x, closeAll, err := o.open(ctx, g)
	if err != nil {
		return exitWith(2, err)
	}
	defer closeAll()
	var r ops.Report
	var p ops.Pass
	switch {
	case only != "":
		r, err = x.CheckReport(ctx, only)
	case o.incremental:
		r, p, err = x.CheckIncremental(ctx)
	default:
		r, p, err = x.CheckPass(ctx)
	}
	if err != nil {
		return exitWith(2, err)
	}
	if p.Entities > 0 {
		w := out
		if o.asJSON {
			w = errOut
		}
		defer fmt.Fprintln(w, passLine(p))
	}
	return reportCheck(r, o.asJSON, out, errOut)
}

// passLine says what a pass compared, how many workflows it had to query, and how long it took.
func passLine(p ops.Pass) string {
	what := fmt.Sprintf("compared all %d entities", p.Compared)
	if p.Incremental {
		what = fmt.Sprintf("compared %d of %d entities, those that moved since the last pass,", p.Compared, p.Entities)
	}
	return fmt.Sprintf("%s in %s (%d by querying their workflow's state, the rest by the digest in its memo)",
		what, p.Duration.Round(time.Millisecond), p.Queried)
}

// reportCheck prints a check's report (as text, or as a JSON list of findings with busy
// workflows noted on errOut) and returns the exit status: nil when there is no finding, exit 1
// when there is one.
func reportCheck(r ops.Report, asJSON bool, out, errOut io.Writer) error {
	if asJSON {
		found := r.Findings
		if found == nil {
			found = []ops.Finding{}
		}
		if err := writeJSON(out, found); err != nil {
			return err
		}
		printBusy(errOut, r.Busy)
	} else {
		printFindings(out, r.Findings)
		printBusy(out, r.Busy)
	}
	if len(r.Findings) > 0 {
		return exitError{code: 1}
	}
	return nil
}

func printFindings(out io.Writer, found []ops.Finding) {
	if len(found) == 0 {
		fmt.Fprintln(out, "clean: every workflow agrees with its rows")
		return
	}
	kinds := map[string]int{}
	for _, f := range found {
		kinds[f.Kind]++
		fmt.Fprintf(out, "%s  %s  %s\n", f.WorkflowID, f.Kind, f.Detail)
		for _, d := range f.Differences {
			fmt.Fprintf(out, "    %s: row %s, workflow %s\n", d.Column, d.Row, d.Workflow)
		}
		if a := f.Activity; a != nil {
			fmt.Fprintf(out, "    activity %s, attempt %d, last failure: %s\n", a.Type, a.Attempt, a.LastFailure)
		}
	}
	var parts []string
	repairable := 0
	for _, k := range ops.Kinds {
		if kinds[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
			if ops.Repairable(k) {
				repairable += kinds[k]
			}
		}
	}
	fmt.Fprintf(out, "%d finding(s): %s.", len(found), strings.Join(parts, ", "))
	if repairable > 0 {
		fmt.Fprint(out, " Repair them with: chorus ops repair --all")
	}
	if kinds[ops.StuckActivity] > 0 {
		fmt.Fprint(out, " A stuck activity needs its cause fixed, or its workflow terminated and then repaired.")
	}
	if kinds[ops.LostRows] > 0 {
		fmt.Fprint(out, " Lost rows cannot be recreated by repair: restore them from a backup.")
	}
	fmt.Fprintln(out)
}

// printBusy notes the workflows a check could not compare because they kept changing.
func printBusy(out io.Writer, busy []ops.Busy) {
	if len(busy) == 0 {
		return
	}
	fmt.Fprintf(out, "%d busy (changing during the check, not compared; check them again later):\n", len(busy))
	for _, b := range busy {
		fmt.Fprintf(out, "  %s  %s\n", b.WorkflowID, b.Reason)
	}
}

func newOpsRepairCmd(g *globals) *cobra.Command {
	o := opsOptions{}
	cmd := &cobra.Command{
		Use:   "repair WORKFLOW_ID | --all",
		Short: "Make workflows and rows agree again (the running workflow is the truth)",
		Long: `Repair what "chorus ops check" finds, for one workflow (e.g. idea/<uuid>) or --all:

  diverged, missing-row               the row is rewritten from the running workflow's state (the
                                      columns it owns, version and change_id): use this after a
                                      "temporal workflow reset", which rolls a workflow back
  missing-workflow, closed-workflow   a new run of the workflow is started from the rows, so the
                                      entity takes commands again
  stuck-activity, lost-rows           not repaired; it says what to do (fix the failure's cause or
                                      terminate the workflow and repair it; restore from a backup)
  unresolved-count                    the task's unresolved dependencies are recounted from its
                                      dependencies, with its project locked

It is safe on a live system: before rewriting a row it checks the entity again, skips it (saying
why) while its workflow is applying a change or when its row or state moved, and writes only if
the row is still exactly what it checked. It checks first, repairs each finding, checks again,
and exits 1 if anything still disagrees.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == o.all {
				return errors.New("name one workflow id (e.g. task/<uuid>) or pass --all")
			}
			only := ""
			if len(args) == 1 {
				only = args[0]
				if _, _, err := vocab.ParseWorkflowID(only); err != nil {
					return err
				}
			}
			return runRepair(cmd.Context(), g, o, only, cmd.OutOrStdout())
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&o.all, "all", false, "repair every finding")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "only say what would be repaired")
	return cmd
}

func runRepair(ctx context.Context, g *globals, o opsOptions, only string, out io.Writer) error {
	x, closeAll, err := o.open(ctx, g)
	if err != nil {
		return exitWith(2, err)
	}
	defer closeAll()
	found, err := x.Check(ctx, only)
	if err != nil {
		return exitWith(2, err)
	}
	if len(found) == 0 {
		fmt.Fprintln(out, "clean: nothing to repair")
		return nil
	}
	// failed holds, by finding, why repair could not resolve it: such a finding is not waited
	// for below, nor is repair suggested for it again.
	failed := map[string]error{}
	for _, f := range found {
		if o.dryRun {
			if ops.Repairable(f.Kind) {
				fmt.Fprintf(out, "%s  %s: would repair (%s)\n", f.WorkflowID, f.Kind, f.Detail)
			} else {
				fmt.Fprintf(out, "%s  %s: cannot repair (%s)\n", f.WorkflowID, f.Kind, f.Detail)
			}
			continue
		}
		did, err := x.Repair(ctx, f)
		if err != nil && !errors.Is(err, ops.ErrSkipped) {
			failed[findingKey(f)] = err
		}
		fmt.Fprintf(out, "%s  %s: %s\n", f.WorkflowID, f.Kind, repairOutcome(did, err))
	}
	if o.dryRun {
		return exitError{code: 1}
	}
	// A restarted workflow answers its state query once a worker has picked it up; findings
	// repair cannot fix do not go away by waiting.
	var left []ops.Finding
	for deadline := time.Now().Add(30 * time.Second); ; {
		left, err = x.Check(ctx, only)
		if err == nil && !slices.ContainsFunc(left, func(f ops.Finding) bool {
			return ops.Repairable(f.Kind) && failed[findingKey(f)] == nil
		}) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return exitWith(2, err)
	}
	return reportRepaired(left, failed, out)
}

func findingKey(f ops.Finding) string { return f.WorkflowID + " " + f.Kind }

// reportRepaired prints what still disagrees after a repair and returns the exit status. A
// finding whose repair failed or cannot be made is listed with why and what to do instead of
// being offered to repair again, which would change nothing.
func reportRepaired(left []ops.Finding, failed map[string]error, out io.Writer) error {
	if len(left) == 0 {
		fmt.Fprintln(out, "clean: every workflow agrees with its rows")
		return nil
	}
	var again []ops.Finding
	fmt.Fprintln(out, "still disagreeing after the repair:")
	for _, f := range left {
		if err := failed[findingKey(f)]; err != nil {
			fmt.Fprintf(out, "%s  %s  %s\n    not repaired: %s\n", f.WorkflowID, f.Kind, f.Detail, repairOutcome("", err))
			continue
		}
		again = append(again, f)
	}
	if len(again) > 0 {
		printFindings(out, again)
	} else {
		fmt.Fprintln(out, "Repair cannot resolve these: do what each says, then run chorus ops check.")
	}
	return exitError{code: 1}
}

// repairOutcome is the line repair prints for one finding: what it did, or why it did not.
func repairOutcome(did string, err error) string {
	switch {
	case err == nil:
		return did
	case errors.Is(err, ops.ErrSkipped), errors.Is(err, ops.ErrCannotRepair):
		return err.Error()
	}
	return "repair failed: " + err.Error()
}

// exitWith prints err and ends the process with code.
func exitWith(code int, err error) error {
	fmt.Fprintln(terminalSafe(os.Stderr), "chorus:", err)
	return exitError{code: code}
}
