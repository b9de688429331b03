package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/ops"
)

// chorus ops check's output and exit status: 0 clean (busy workflows are noted, not counted),
// 1 with findings; --json prints the findings as a list whose fields only ever grow.
func TestReportCheck(t *testing.T) {
	stuck := ops.Finding{WorkflowID: "task/t1", Kind: ops.StuckActivity, Detail: "ApplyTaskChange has failed 6 times",
		Activity: &ops.Activity{Type: "ApplyTaskChange", Attempt: 7, LastFailure: "FOREIGN KEY constraint failed"}}
	lost := ops.Finding{WorkflowID: "task/t2", Kind: ops.LostRows, Detail: "2 acceptance criteria rows are missing",
		Differences: []ops.Difference{{Column: "criterion c1", Row: "missing", Workflow: "pending/pending"}}}
	diverged := ops.Finding{WorkflowID: "idea/i1", Kind: ops.Diverged, Detail: "differs in status",
		Differences: []ops.Difference{{Column: "status", Row: "open", Workflow: "elaborating"}}}
	busy := []ops.Busy{{WorkflowID: "task/t3", Reason: "a change is being applied (ApplyTaskChange pending)"}}

	for _, tc := range []struct {
		name   string
		report ops.Report
		code   int // 0: nil error
		out    []string
	}{
		{name: "clean", report: ops.Report{}, out: []string{"clean: every workflow agrees with its rows"}},
		{name: "busy only is clean", report: ops.Report{Busy: busy},
			out: []string{"clean: every workflow agrees with its rows", "1 busy", "task/t3  a change is being applied"}},
		{name: "stuck", report: ops.Report{Findings: []ops.Finding{stuck}}, code: 1,
			out: []string{"task/t1  stuck-activity  ApplyTaskChange has failed 6 times",
				"activity ApplyTaskChange, attempt 7, last failure: FOREIGN KEY constraint failed", "1 stuck-activity.",
				"terminated and then repaired"}},
		{name: "lost and diverged", report: ops.Report{Findings: []ops.Finding{diverged, lost}}, code: 1,
			out: []string{"criterion c1: row missing, workflow pending/pending", "2 finding(s): 1 diverged, 1 lost-rows.",
				"chorus ops repair --all", "restore them from a backup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := reportCheck(tc.report, false, &out, &errOut)
			if tc.code == 0 {
				require.NoError(t, err)
			} else {
				require.Equal(t, exitError{code: tc.code}, err)
			}
			for _, s := range tc.out {
				require.Contains(t, out.String(), s)
			}
			require.Empty(t, errOut.String())
		})
	}

	// --json: the findings as a list (empty, not null, when clean); busy workflows go to stderr.
	var out, errOut bytes.Buffer
	require.NoError(t, reportCheck(ops.Report{Busy: busy}, true, &out, &errOut))
	require.JSONEq(t, `[]`, out.String())
	require.Contains(t, errOut.String(), "task/t3")
	out.Reset()
	errOut.Reset()
	require.Equal(t, exitError{code: 1}, reportCheck(ops.Report{Findings: []ops.Finding{diverged, stuck}}, true, &out, &errOut))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Len(t, got, 2)
	require.Equal(t, map[string]any{"workflowId": "idea/i1", "kind": "diverged", "detail": "differs in status",
		"differences": []any{map[string]any{"column": "status", "row": "open", "workflow": "elaborating"}}}, got[0],
		"the fields a diverged finding always had, and no others")
	require.Equal(t, map[string]any{"type": "ApplyTaskChange", "attempt": float64(7), "lastFailure": "FOREIGN KEY constraint failed"},
		got[1]["activity"])
}

func TestRepairOutcome(t *testing.T) {
	require.Equal(t, "rewrote the task row", repairOutcome("rewrote the task row", nil))
	require.Equal(t, "skipped: task/t1 has ApplyTaskChange pending",
		repairOutcome("", fmt.Errorf("%w: task/t1 has ApplyTaskChange pending", ops.ErrSkipped)))
	require.Equal(t, "cannot repair: restore them from a backup",
		repairOutcome("", fmt.Errorf("%w: restore them from a backup", ops.ErrCannotRepair)))
	require.Equal(t, "repair failed: boom", repairOutcome("", errors.New("boom")))
}

// chorus ops failed's output and exit status: 0 with no run, 1 with one, stuck runs showing
// their workflow task attempt and age.
func TestReportFailed(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	require.NoError(t, reportFailed(nil, false, now, &out))
	require.Contains(t, out.String(), "none:")
	out.Reset()
	runs := []ops.FailedRun{{WorkflowID: "idea/i1", Status: ops.RunStuck, Entity: "idea i1", Attempt: 7,
		Reason: "nondeterministic_error: [TMPRL1100] ...", Since: now.Add(-12 * time.Minute)}}
	require.Equal(t, exitError{code: 1}, reportFailed(runs, false, now, &out))
	require.Contains(t, out.String(), "idea/i1  stuck (workflow task attempt 7)  idea i1  12m ago\n    nondeterministic_error")
	require.Contains(t, out.String(), "chorus ops replay WORKFLOW_ID")
	out.Reset()
	require.NoError(t, reportFailed(nil, true, now, &out))
	require.JSONEq(t, `[]`, out.String())
}
