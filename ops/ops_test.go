package ops

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// A task's row and workflow state at a version, as observe renders them.
func taskSide(version int64, changeID, status string, criteria map[string]string) side {
	s := side{exists: true, version: version, changeID: changeID, status: status, Checked: workflows.Checked{
		Columns: []string{"status", "version", "change_id"},
		Values:  map[string]string{"status": status, "version": strconv.FormatInt(version, 10), "change_id": changeID},
		Parts:   map[string]string{}}}
	for _, id := range slices.Sorted(maps.Keys(criteria)) {
		s.Part("criterion "+id, criteria[id])
	}
	return s
}

const task = "task/t1"

func running(pending ...Activity) run {
	return run{found: true, status: "running", runID: "run2", pending: pending}
}

// judge, table-tested: what one consistent observation shows (no Temporal, no database).
func TestJudge(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-time.Second), now.Add(-2*time.Minute)
	write := Activity{Type: "ApplyTaskChange", Attempt: 1}
	crit := map[string]string{"c1": "pending/pending", "c2": "pending/passed"}
	for _, tc := range []struct {
		name     string
		ob       observation
		kinds    []string
		busy     bool
		activity string
	}{
		{name: "agree",
			ob: observation{row: taskSide(3, "task/t1#3@run2", "in_progress", crit), run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)}},
		{name: "row one ahead with the run's next change in flight: mid-change, not a finding",
			ob:   observation{row: taskSide(4, "task/t1#4@run2", "in_progress", crit), run: running(write), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			busy: true},
		{name: "row one ahead, nothing in flight",
			ob:    observation{row: taskSide(4, "task/t1#4@run2", "in_progress", crit), run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{Diverged}},
		{name: "row two ahead while a write is pending (changes a reset abandoned): not the change in flight",
			ob:    observation{row: taskSide(5, "task/t1#5@run1", "in_progress", crit), run: running(write), wf: taskSide(3, "task/t1#3@run2", "assigned", crit)},
			kinds: []string{Diverged}},
		{name: "row one ahead by another workflow's change while a write is pending",
			ob:    observation{row: taskSide(4, "task/t9#4@run1", "in_progress", crit), run: running(write), wf: taskSide(3, "task/t1#3@run2", "assigned", crit)},
			kinds: []string{Diverged}},
		{name: "row deleted while a write is pending: a delete in flight",
			ob:   observation{row: side{}, run: running(write), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			busy: true},
		{name: "row missing, nothing in flight",
			ob:    observation{row: side{}, run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{MissingRow}},
		{name: "the proposal's revoke closed the row and is being delivered: the task's workflow adopts it",
			ob: observation{entity: vocab.EntityTask, proposalID: "proposal/p1", row: taskSide(4, "proposal/p1#7@runp", "closed", crit),
				run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit), revokeInFlight: true},
			busy: true},
		{name: "the proposal's revoke closed the row and nothing delivers it: a finding",
			ob: observation{entity: vocab.EntityTask, proposalID: "proposal/p1", row: taskSide(4, "proposal/p1#7@runp", "closed", crit),
				run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{Diverged}},
		{name: "criteria rows gone with a re-inserted task row: lost, not diverged",
			ob:    observation{row: taskSide(3, "task/t1#3@run2", "in_progress", nil), run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{LostRows}},
		{name: "a verdict differs",
			ob: observation{row: taskSide(3, "task/t1#3@run2", "in_progress", map[string]string{"c1": "passed/pending", "c2": "pending/passed"}),
				run: running(), wf: taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{Diverged}},
		{name: "a write that failed five times is stuck",
			ob: observation{row: taskSide(3, "task/t1#3@run2", "in_progress", crit),
				run: running(Activity{Type: "ApplyTaskChange", Attempt: 5, LastFailure: "FOREIGN KEY constraint failed", LastFailedAt: &recent}),
				wf:  taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{StuckActivity}, activity: "ApplyTaskChange"},
		{name: "a write whose last failure is over a minute old is stuck",
			ob: observation{row: taskSide(3, "task/t1#3@run2", "in_progress", crit),
				run: running(Activity{Type: "ApplyTaskChange", Attempt: 2, LastFailure: "timeout", LastFailedAt: &old}),
				wf:  taskSide(3, "task/t1#3@run2", "in_progress", crit)},
			kinds: []string{StuckActivity}, activity: "ApplyTaskChange"},
		{name: "a write retried twice, just now, is not stuck yet",
			ob: observation{row: taskSide(3, "task/t1#3@run2", "in_progress", crit),
				run: running(Activity{Type: "ApplyTaskChange", Attempt: 3, LastFailure: "connection refused", LastFailedAt: &recent}),
				wf:  taskSide(3, "task/t1#3@run2", "in_progress", crit)}},
		{name: "row moved between its reads",
			ob:   observation{row: taskSide(3, "task/t1#3@run2", "in_progress", crit), run: running(), moving: "its row changed"},
			busy: true},
		{name: "no workflow", ob: observation{row: taskSide(1, "x", "open", crit)}, kinds: []string{MissingWorkflow}},
		{name: "terminated workflow", ob: observation{row: taskSide(1, "x", "open", crit), run: run{found: true, status: "terminated"}},
			kinds: []string{ClosedWorkflow}},
		{name: "no row and no running workflow: a deleted entity", ob: observation{run: run{found: true, status: "completed"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ob.id = task
			j := (&Ops{}).judge(tc.ob, now)
			var kinds []string
			for _, f := range append(j.findings, j.stuck...) {
				kinds = append(kinds, f.Kind)
				require.Equal(t, task, f.WorkflowID)
				if f.Kind == StuckActivity {
					require.Equal(t, tc.activity, f.Activity.Type)
					require.Contains(t, f.Detail, f.Activity.LastFailure)
				}
				if f.Kind == LostRows {
					require.Contains(t, f.Detail, "restore them from a backup")
					require.Len(t, f.Differences, 2)
				}
			}
			require.Equal(t, tc.kinds, kinds)
			require.Equal(t, tc.busy, j.busy != "", "busy: %q", j.busy)
		})
	}
}

func TestRepairable(t *testing.T) {
	for _, k := range Kinds {
		require.Equal(t, k != StuckActivity && k != LostRows, Repairable(k), k)
	}
}

// A divergence lists its columns in the table's order, then version and change_id, as the
// example in docs/operations.md shows.
func TestDivergedListsColumnsInOrder(t *testing.T) {
	ob := observation{id: task, row: taskSide(3, "task/t1#3@run1", "in_progress", nil), run: running(),
		wf: taskSide(2, "task/t1#2@run2", "assigned", nil)}
	j := (&Ops{}).judge(ob, time.Now())
	require.Len(t, j.findings, 1)
	require.Equal(t, "differs in status, version, change_id", j.findings[0].Detail)
	require.Equal(t, Difference{Column: "status", Row: "in_progress", Workflow: "assigned"}, j.findings[0].Differences[0])
}
