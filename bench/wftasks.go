package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// wfTaskFailures counts the workflow tasks that did not complete during a bench: each
// WorkflowTaskFailed event (the worker answered that it could not process the task, e.g.
// "premature end of stream" while it read the history, or a nondeterminism) and each
// WorkflowTaskTimedOut event (the worker never answered, so the workflow waited out the task's
// timeout, 10 s by default, before it was retried). Either one stalls the entity's calls.
type wfTaskFailures struct {
	Runs     int `json:"runsRead"` // workflow runs whose histories were read
	Failed   int `json:"failed"`
	TimedOut int `json:"timedOut"`
	// WorkerFailed is what the worker itself counted (temporal_workflow_task_execution_failed
	// of the Chorus process's /metrics) while the phase ran: it also sees the repeated failures
	// of a task retried after failing (a transient workflow task), which the server records in
	// the history only once. -1 when the metrics could not be read (a Chorus measured with
	// --endpoint whose /metrics is elsewhere or closed).
	WorkerFailed int `json:"workerFailed"`
	// First describes the first failure seen, to say what went wrong.
	First string `json:"first,omitempty"`
}

func (f wfTaskFailures) note() string {
	worker := "not read"
	if f.WorkerFailed >= 0 {
		worker = fmt.Sprint(f.WorkerFailed)
	}
	s := fmt.Sprintf("Workflow-task failures during the phase: %d failed and %d timed out in the histories of the %d "+
		"workflow runs started since the bench began; %s failed as the worker counted them.", f.Failed, f.TimedOut, f.Runs, worker)
	if f.First != "" {
		s += " First: " + f.First
	}
	return s
}

// phaseWindow is when a phase ran, and the worker's count of failed workflow tasks at its start
// and end (-1: not read).
type phaseWindow struct {
	from, to             time.Time
	res                  *phaseResult
	failedFrom, failedTo float64
}

// workerTaskFailures reads the Chorus process's count of failed workflow tasks
// (temporal_workflow_task_execution_failed_total, all series summed) from its /metrics; -1 when
// it cannot.
func workerTaskFailures(ctx context.Context, metricsURL string) float64 {
	if metricsURL == "" {
		return -1
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return -1
	}
	total := 0.0
	if f, ok := families["temporal_workflow_task_execution_failed_total"]; ok {
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// countWorkflowTaskFailures reads the history of every workflow run of namespace started at
// or after since and counts the failed and timed-out workflow tasks whose event time falls in
// each window (the result has one entry per window, in order).
func countWorkflowTaskFailures(ctx context.Context, tc client.Client, namespace string, since time.Time,
	windows []phaseWindow) ([]wfTaskFailures, error) {
	out := make([]wfTaskFailures, len(windows))
	for i, w := range windows {
		out[i].WorkerFailed = -1
		if w.failedFrom >= 0 && w.failedTo >= 0 {
			out[i].WorkerFailed = int(w.failedTo - w.failedFrom)
		}
	}
	query := fmt.Sprintf("StartTime >= %q", since.UTC().Format(time.RFC3339Nano))
	var token []byte
	for {
		page, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query,
			PageSize: 1000, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the bench's workflow runs: %w", err)
		}
		for _, ex := range page.GetExecutions() {
			id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			for i := range out {
				out[i].Runs++
			}
			it := tc.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return nil, fmt.Errorf("read the history of %s: %w", id, err)
				}
				t := ev.GetEventTime().AsTime()
				for i, w := range windows {
					if t.Before(w.from) || !t.Before(w.to) {
						continue
					}
					switch ev.GetEventType() {
					case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
						out[i].Failed++
						if out[i].First == "" {
							a := ev.GetWorkflowTaskFailedEventAttributes()
							out[i].First = fmt.Sprintf("%s: workflow task failed (%s): %.200s", id, a.GetCause(), a.GetFailure().GetMessage())
						}
					case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
						out[i].TimedOut++
						if out[i].First == "" {
							out[i].First = fmt.Sprintf("%s: workflow task timed out (%s)", id,
								ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType())
						}
					}
				}
			}
		}
		token = page.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// reportWorkflowTaskFailures counts the workflow tasks that failed or timed out in each
// phase's time (from its start to the next phase's start) and adds the count to the phase.
func (b *bencher) reportWorkflowTaskFailures(ctx context.Context, started time.Time, windows []phaseWindow, out io.Writer) {
	tc, err := b.temporal(ctx)
	if err == nil {
		var counts []wfTaskFailures
		if counts, err = countWorkflowTaskFailures(ctx, tc, b.t.namespace, started, windows); err == nil {
			fmt.Fprintf(out, "\n### Workflow-task failures\n\n| phase | failed | timed out | failed, as the worker counted |\n|---|---:|---:|---:|\n")
			var firsts []string
			for i, w := range windows {
				c := counts[i]
				w.res.WorkflowTaskFailures = &c
				w.res.Notes = append(w.res.Notes, c.note())
				worker := "not read"
				if c.WorkerFailed >= 0 {
					worker = fmt.Sprint(c.WorkerFailed)
				}
				fmt.Fprintf(out, "| %s | %d | %d | %s |\n", w.res.Name, c.Failed, c.TimedOut, worker)
				if c.First != "" {
					firsts = append(firsts, fmt.Sprintf("First in %q: %s", w.res.Name, c.First))
				}
			}
			fmt.Fprintf(out, "\nFrom the histories of the %d workflow runs started since the bench began: a failed task is one "+
				"the worker answered it could not process; a timed-out one waited longer than its timeout (ScheduleToStart: "+
				"no worker took it from the sticky queue within 5 s; StartToClose: the worker took it but did not answer "+
				"within 10 s). The last column is the Chorus worker's own count (temporal_workflow_task_execution_failed): "+
				"it also sees the failures of a task retried after failing (a transient workflow task), which the history records only once.\n", runsRead(counts))
			for _, f := range firsts {
				fmt.Fprintf(out, "\n%s\n", f)
			}
			return
		}
	}
	fmt.Fprintf(out, "\nbench: workflow-task failures not counted: %v\n", err)
}

func runsRead(counts []wfTaskFailures) int {
	if len(counts) == 0 {
		return 0
	}
	return counts[0].Runs
}
