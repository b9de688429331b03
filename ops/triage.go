package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Statuses of a FailedRun.
const (
	RunFailed     = "failed"
	RunTimedOut   = "timed-out"
	RunTerminated = "terminated"
	// RunStuck: the run is running, but its workflow task has failed and keeps being retried
	// (typically non-determinism: the worker's code no longer replays the run's history), so it
	// takes in nothing: no command, signal or timer reaches it.
	RunStuck = "stuck"
)

// FailedRun is a run `chorus ops failed` lists: the latest run of a workflow of this deployment
// that ended failed, timed out or terminated, or that is running with a failing workflow task.
type FailedRun struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	// Entity is "idea <uuid>", "proposal <uuid>" or "task <uuid>" ("" for a task batch).
	Entity string `json:"entity,omitempty"`
	// Reason is the run's failure, termination reason or workflow task failure, in Temporal's words.
	Reason string `json:"reason"`
	// Since is when the run ended, or when its failing workflow task was first scheduled.
	Since time.Time `json:"since"`
	// Attempt is a stuck run's workflow task attempt (0 otherwise).
	Attempt int32 `json:"attempt,omitempty"`
}

// Failed lists the failed, timed-out, terminated and stuck runs of this deployment's task queue,
// newest problem first. A closed run counts only while it is its workflow's latest run: once
// `chorus ops repair` started a new run, the old one is history.
func (o *Ops) Failed(ctx context.Context) ([]FailedRun, error) {
	var out []FailedRun
	seen := map[string]bool{}
	closedQuery := fmt.Sprintf(`TaskQueue = %q AND (ExecutionStatus = "Failed" OR ExecutionStatus = "TimedOut" OR ExecutionStatus = "Terminated")`,
		o.Flows.TaskQueue)
	err := o.list(ctx, closedQuery, func(e executionInfo) error {
		if seen[e.id] {
			return nil
		}
		seen[e.id] = true
		d, err := o.Flows.Temporal.DescribeWorkflowExecution(ctx, e.id, "")
		if err != nil {
			return fmt.Errorf("describe %s: %w", e.id, err)
		}
		if d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != e.runID {
			return nil // a later run took over
		}
		r := FailedRun{WorkflowID: e.id, RunID: e.runID, Type: e.typ, Entity: entityOf(e.id), Since: e.closed}
		switch e.status {
		case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
			r.Status = RunFailed
		case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
			r.Status = RunTimedOut
		default:
			r.Status = RunTerminated
		}
		r.Reason = o.closeReason(ctx, e.id, e.runID)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	runningQuery := fmt.Sprintf(`TaskQueue = %q AND ExecutionStatus = "Running"`, o.Flows.TaskQueue)
	err = o.list(ctx, runningQuery, func(e executionInfo) error {
		d, err := o.Flows.Temporal.DescribeWorkflowExecution(ctx, e.id, e.runID)
		if err != nil {
			return fmt.Errorf("describe %s: %w", e.id, err)
		}
		wt := d.GetPendingWorkflowTask()
		if wt == nil || wt.GetAttempt() < 2 {
			return nil // no workflow task, or one that has not failed
		}
		r := FailedRun{WorkflowID: e.id, RunID: e.runID, Type: e.typ, Status: RunStuck, Entity: entityOf(e.id),
			Attempt: wt.GetAttempt(), Since: wt.GetOriginalScheduledTime().AsTime()}
		r.Reason = o.lastTaskFailure(ctx, e.id, e.runID)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Stuck runs first (they block agents now), then the rest, newest first.
	sortRuns(out)
	return out, nil
}

func sortRuns(rs []FailedRun) {
	rank := func(r FailedRun) int {
		if r.Status == RunStuck {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(rs, func(a, b FailedRun) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return b.Since.Compare(a.Since)
	})
}

type executionInfo struct {
	id, runID, typ string
	status         enumspb.WorkflowExecutionStatus
	closed         time.Time
}

// list calls f with every execution the visibility query matches.
func (o *Ops) list(ctx context.Context, query string, f func(executionInfo) error) error {
	var token []byte
	for {
		resp, err := o.Flows.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list workflows (%s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			info := executionInfo{id: e.GetExecution().GetWorkflowId(), runID: e.GetExecution().GetRunId(),
				typ: e.GetType().GetName(), status: e.GetStatus()}
			if t := e.GetCloseTime(); t != nil {
				info.closed = t.AsTime()
			}
			if err := f(info); err != nil {
				return err
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return nil
		}
	}
}

func entityOf(id string) string {
	if e, uuid, err := vocab.ParseWorkflowID(id); err == nil {
		return string(e) + " " + uuid
	}
	return ""
}

// closeReason is the failure, timeout or termination reason of a closed run, from its close event.
func (o *Ops) closeReason(ctx context.Context, id, runID string) string {
	it := o.Flows.Temporal.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return "(could not read the history: " + err.Error() + ")"
		}
		switch {
		case ev.GetWorkflowExecutionFailedEventAttributes() != nil:
			return failureText(ev.GetWorkflowExecutionFailedEventAttributes().GetFailure())
		case ev.GetWorkflowExecutionTerminatedEventAttributes() != nil:
			a := ev.GetWorkflowExecutionTerminatedEventAttributes()
			reason := a.GetReason()
			if reason == "" {
				reason = "no reason given"
			}
			if who := a.GetIdentity(); who != "" {
				reason += " (by " + who + ")"
			}
			return reason
		case ev.GetWorkflowExecutionTimedOutEventAttributes() != nil:
			return "the run exceeded its execution or run timeout"
		}
	}
	return ""
}

// lastTaskFailure is the failure of a run's last failed workflow task (Temporal records the
// first failure of a series of attempts in the history).
func (o *Ops) lastTaskFailure(ctx context.Context, id, runID string) string {
	it := o.Flows.Temporal.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	last := "the workflow task keeps failing (no failure recorded yet)"
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return "(could not read the history: " + err.Error() + ")"
		}
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			last = failureText(a.GetFailure())
			if c := a.GetCause(); c != enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED {
				last = strings.ToLower(strings.TrimPrefix(c.String(), "WORKFLOW_TASK_FAILED_CAUSE_")) + ": " + last
			}
		}
	}
	return last
}

// quiet keeps the replayer's own log (a panic's stack for every divergence) out of the report.
var quiet = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// Replay is the outcome of replaying one history against this binary's workflow code.
type Replay struct {
	WorkflowID string
	RunID      string
	Events     int
	// Divergence is nil when the code replays the history; else the replayer's error.
	Divergence error
}

// Explain says in words what a divergence means and what to do ("" when there is none).
func (r Replay) Explain() string {
	if r.Divergence == nil {
		return ""
	}
	msg := r.Divergence.Error()
	var b strings.Builder
	if m := positionRe.FindStringSubmatch(msg); m != nil {
		fmt.Fprintf(&b, "The code diverges from the history at event %s: %s\n", m[1], firstSentences(msg))
	} else {
		fmt.Fprintf(&b, "The code diverges from the history: %s\n", firstSentences(msg))
	}
	if strings.Contains(msg, "TMPRL1100") || strings.Contains(strings.ToLower(msg), "nondetermin") {
		b.WriteString("This binary's workflow code issues other commands than the ones this run recorded: a change to " +
			"workflow code was made without workflow.GetVersion (docs/operations.md, \"Resets and versioning\"). Either deploy workers whose code " +
			"replays this history (revert the change, or guard it with workflow.GetVersion), or terminate the run and " +
			"let `chorus ops repair` start a new one from the rows.")
	}
	return b.String()
}

var positionRe = regexp.MustCompile(`(?i)(?:event (?:position|id)|scheduleEventID:?) (\d+)`)

// firstSentences trims the SDK's message to its core (it can append stack traces).
func firstSentences(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	return strings.TrimSpace(msg)
}

// ReplayHistory replays the history of workflowID's latest run (runID "" for the latest), or of a
// JSON history file when source is a file (as `temporal workflow show --output json` writes),
// against the workflow code built into this binary.
func (o *Ops) ReplayHistory(ctx context.Context, source, runID string) (Replay, error) {
	conv := workflows.NewConverters(nil)
	if o != nil && o.Converters != nil {
		conv = *o.Converters
	}
	r, err := workflows.NewReplayerWith(conv)
	if err != nil {
		return Replay{}, err
	}
	if st, statErr := os.Stat(source); statErr == nil && !st.IsDir() {
		f, err := os.Open(source)
		if err != nil {
			return Replay{}, err
		}
		defer f.Close()
		h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		if err != nil {
			return Replay{}, fmt.Errorf("read history %s: %w", source, err)
		}
		return Replay{WorkflowID: source, Events: len(h.GetEvents()), Divergence: r.ReplayWorkflowHistory(quiet, h)}, nil
	}
	if o == nil || o.Flows == nil {
		return Replay{}, fmt.Errorf("%s is not a file, and there is no Temporal connection to fetch it from", source)
	}
	if runID == "" {
		d, err := o.Flows.Temporal.DescribeWorkflowExecution(ctx, source, "")
		if err != nil {
			return Replay{}, fmt.Errorf("describe %s: %w", source, err)
		}
		runID = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	h := &historypb.History{}
	it := o.Flows.Temporal.GetWorkflowHistory(ctx, source, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return Replay{}, fmt.Errorf("read the history of %s: %w", source, err)
		}
		h.Events = append(h.Events, ev)
	}
	if len(h.Events) == 0 {
		return Replay{}, errors.New("the history of " + source + " is empty")
	}
	return Replay{WorkflowID: source, RunID: runID, Events: len(h.Events), Divergence: r.ReplayWorkflowHistory(quiet, h)}, nil
}
