// Package ops compares every lifecycle entity's workflow with its rows and makes them agree
// again (docs/write-path.md, "Check and repair"): what `chorus ops check` and `chorus ops repair`
// run. It reads workflow state through the `state` query (so workers must be running) and rows
// through the store, and it writes only through the store's repair methods and by starting
// workflows. It knows workflows and store; nothing imports it but cmd/chorus.
package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Kinds of finding.
const (
	// Diverged: the workflow runs, and some of the columns it owns differ from its row.
	Diverged = "diverged"
	// MissingWorkflow: the row exists and its workflow was never started.
	MissingWorkflow = "missing-workflow"
	// ClosedWorkflow: the row exists and its workflow's last run ended (terminated, failed,
	// timed out, or completed while the entity still exists).
	ClosedWorkflow = "closed-workflow"
	// MissingRow: the workflow runs and holds an entity whose row does not exist.
	MissingRow = "missing-row"
)

// Difference is one column whose row value and workflow value differ.
type Difference struct {
	Column   string `json:"column"`
	Row      string `json:"row"`
	Workflow string `json:"workflow"`
}

// Finding is one disagreement between an entity's workflow and its rows.
type Finding struct {
	WorkflowID  string       `json:"workflowId"`
	Kind        string       `json:"kind"`
	Detail      string       `json:"detail"`
	Differences []Difference `json:"differences,omitempty"`
}

// Ops checks and repairs over one store and one Temporal namespace.
type Ops struct {
	Store *store.Store
	Flows *workflows.Client
}

// Check lists every disagreement between workflows and rows: each differing column, each row
// whose workflow is missing or closed, and each running workflow whose row is missing. only,
// when not "", limits it to one workflow id. It reads and writes nothing else.
func (o *Ops) Check(ctx context.Context, only string) ([]Finding, error) {
	rows, err := o.Store.AllLifecycleRows(ctx)
	if err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	var out []Finding
	seen := map[string]bool{}
	check := func(id string, f func() ([]Finding, error)) error {
		seen[id] = true
		if only != "" && only != id {
			return nil
		}
		found, err := f()
		out = append(out, found...)
		return err
	}
	for _, i := range rows.Ideas {
		if err := check(workflows.IdeaID(i.UUID), func() ([]Finding, error) { return o.checkIdea(ctx, i) }); err != nil {
			return out, err
		}
	}
	for _, p := range rows.Proposals {
		if err := check(workflows.ProposalID(p.UUID), func() ([]Finding, error) { return o.checkProposal(ctx, p) }); err != nil {
			return out, err
		}
	}
	for _, t := range rows.Tasks {
		if err := check(workflows.TaskID(t.UUID), func() ([]Finding, error) { return o.checkTask(ctx, t) }); err != nil {
			return out, err
		}
	}
	orphans, err := o.rowless(ctx, seen, only)
	return append(out, orphans...), err
}

// running describes id's latest run: nil when it runs, else the finding about it.
func (o *Ops) running(ctx context.Context, id string) (*Finding, error) {
	d, err := o.Flows.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return &Finding{WorkflowID: id, Kind: MissingWorkflow, Detail: "the row exists but no workflow was ever started"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	st := d.GetWorkflowExecutionInfo().GetStatus()
	if st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	return &Finding{WorkflowID: id, Kind: ClosedWorkflow,
		Detail: fmt.Sprintf("the row exists but the workflow's last run is %s", strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_")))}, nil
}

func query[S any](ctx context.Context, o *Ops, id string) (S, error) {
	var s S
	v, err := o.Flows.Temporal.QueryWorkflow(ctx, id, "", workflows.QueryState)
	if err != nil {
		return s, fmt.Errorf("query %s (are the workers running?): %w", id, err)
	}
	return s, v.Get(&s)
}

// compare lists the columns (with version and change_id) where row and projection differ.
func compare(row, projection any, cols []string) ([]Difference, error) {
	cols = append(slices.Clone(cols), "version", "change_id")
	a, err := store.ColumnValues(row, cols)
	if err != nil {
		return nil, err
	}
	b, err := store.ColumnValues(projection, cols)
	if err != nil {
		return nil, err
	}
	var out []Difference
	for _, c := range cols {
		if a[c] != b[c] {
			out = append(out, Difference{Column: c, Row: a[c], Workflow: b[c]})
		}
	}
	return out, nil
}

func diverged(id string, diffs []Difference) []Finding {
	if len(diffs) == 0 {
		return nil
	}
	cols := make([]string, len(diffs))
	for i, d := range diffs {
		cols[i] = d.Column
	}
	return []Finding{{WorkflowID: id, Kind: Diverged, Detail: "differs in " + strings.Join(cols, ", "), Differences: diffs}}
}

func (o *Ops) checkIdea(ctx context.Context, i store.Idea) ([]Finding, error) {
	id := workflows.IdeaID(i.UUID)
	if f, err := o.running(ctx, id); f != nil || err != nil {
		return findings(f), err
	}
	s, err := query[workflows.IdeaState](ctx, o, id)
	if err != nil {
		return nil, err
	}
	p := s.Projection()
	diffs, err := compare(&i, &p, workflows.IdeaColumns)
	if err != nil {
		return nil, err
	}
	rounds, err := o.Store.Elaboration(ctx, i.UUID)
	if err != nil {
		return nil, err
	}
	for _, r := range s.Rounds {
		j := slices.IndexFunc(rounds, func(x store.ElaborationRound) bool { return x.UUID == r.UUID })
		switch {
		case j < 0:
			diffs = append(diffs, Difference{Column: "round " + r.UUID, Row: "missing", Workflow: r.Status})
		case rounds[j].Status != r.Status:
			diffs = append(diffs, Difference{Column: "round " + r.UUID, Row: rounds[j].Status, Workflow: r.Status})
		}
	}
	return diverged(id, diffs), nil
}

func (o *Ops) checkProposal(ctx context.Context, p store.Proposal) ([]Finding, error) {
	id := workflows.ProposalID(p.UUID)
	if f, err := o.running(ctx, id); f != nil || err != nil {
		return findings(f), err
	}
	s, err := query[workflows.ProposalState](ctx, o, id)
	if err != nil {
		return nil, err
	}
	proj := s.Projection()
	diffs, err := compare(&p, &proj, workflows.ProposalColumns)
	if err != nil {
		return nil, err
	}
	var docs, tasks []string
	for _, d := range p.DocumentDrafts {
		docs = append(docs, d.UUID)
	}
	for _, t := range p.TaskDrafts {
		tasks = append(tasks, t.UUID)
	}
	if !slices.Equal(docs, s.Documents) {
		diffs = append(diffs, Difference{Column: "document drafts", Row: strings.Join(docs, ","), Workflow: strings.Join(s.Documents, ",")})
	}
	if !slices.Equal(tasks, s.Tasks) {
		diffs = append(diffs, Difference{Column: "task drafts", Row: strings.Join(tasks, ","), Workflow: strings.Join(s.Tasks, ",")})
	}
	return diverged(id, diffs), nil
}

func (o *Ops) checkTask(ctx context.Context, t store.Task) ([]Finding, error) {
	id := workflows.TaskID(t.UUID)
	if f, err := o.running(ctx, id); f != nil || err != nil {
		return findings(f), err
	}
	s, err := query[workflows.TaskState](ctx, o, id)
	if err != nil {
		return nil, err
	}
	p := s.Projection()
	diffs, err := compare(&t, &p, workflows.TaskColumns)
	if err != nil {
		return nil, err
	}
	criteria, err := o.Store.Criteria(ctx, t.UUID)
	if err != nil {
		return nil, err
	}
	for _, c := range s.Criteria {
		j := slices.IndexFunc(criteria, func(x store.AcceptanceCriterion) bool { return x.UUID == c.UUID })
		want := c.Status + "/" + c.DevStatus
		switch {
		case j < 0:
			diffs = append(diffs, Difference{Column: "criterion " + c.UUID, Row: "missing", Workflow: want})
		case criteria[j].Status+"/"+criteria[j].DevStatus != want:
			diffs = append(diffs, Difference{Column: "criterion " + c.UUID, Row: criteria[j].Status + "/" + criteria[j].DevStatus, Workflow: want})
		}
	}
	return diverged(id, diffs), nil
}

func findings(f *Finding) []Finding {
	if f == nil {
		return nil
	}
	return []Finding{*f}
}

// rowless finds running entity workflows (of this deployment's task queue) that hold a created,
// undeleted entity whose row is missing. seen lists the workflows that have rows.
func (o *Ops) rowless(ctx context.Context, seen map[string]bool, only string) ([]Finding, error) {
	var out []Finding
	var token []byte
	for {
		resp, err := o.Flows.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf(`ExecutionStatus = "Running" AND TaskQueue = %q AND ChorusEntity IN ("idea", "proposal", "task")`,
				o.Flows.TaskQueue),
			NextPageToken: token,
		})
		if err != nil {
			return out, fmt.Errorf("list running workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			if seen[id] || (only != "" && only != id) {
				continue
			}
			held, err := o.holds(ctx, id)
			if err != nil {
				return out, err
			}
			if held {
				out = append(out, Finding{WorkflowID: id, Kind: MissingRow, Detail: "the workflow holds the entity but its row is missing"})
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// holds reports whether a running workflow holds a created entity that is not deleted.
func (o *Ops) holds(ctx context.Context, id string) (bool, error) {
	entity, _, err := workflows.ParseWorkflowID(id)
	if err != nil {
		return false, nil
	}
	switch entity {
	case workflows.EntityIdea:
		s, err := query[workflows.IdeaState](ctx, o, id)
		return s.Created && !s.Deleted, err
	case workflows.EntityProposal:
		s, err := query[workflows.ProposalState](ctx, o, id)
		return s.Created, err
	default:
		s, err := query[workflows.TaskState](ctx, o, id)
		return s.Created && !s.Deleted, err
	}
}

// Repair resolves one finding and says what it did: a diverged or missing row is rewritten
// from its running workflow (the workflow is the truth, as after a `temporal workflow reset`);
// a missing or closed workflow gets a new run started from its rows.
func (o *Ops) Repair(ctx context.Context, f Finding) (string, error) {
	entity, uuid, err := workflows.ParseWorkflowID(f.WorkflowID)
	if err != nil {
		return "", err
	}
	switch f.Kind {
	case Diverged, MissingRow:
		return o.rewriteRow(ctx, entity, f.WorkflowID)
	case MissingWorkflow, ClosedWorkflow:
		return o.restart(ctx, entity, uuid)
	}
	return "", fmt.Errorf("no repair for a %q finding", f.Kind)
}

func (o *Ops) rewriteRow(ctx context.Context, entity workflows.Entity, id string) (string, error) {
	switch entity {
	case workflows.EntityIdea:
		s, err := query[workflows.IdeaState](ctx, o, id)
		if err != nil {
			return "", err
		}
		p := s.Projection()
		if err := o.Store.RepairRow(ctx, "ideas", s.UUID, &p, workflows.IdeaColumns); err != nil {
			return "", err
		}
		statuses := map[string]string{}
		for _, r := range s.Rounds {
			statuses[r.UUID] = r.Status
		}
		return fmt.Sprintf("rewrote the idea row from its workflow (version %d)", s.Row.Version),
			o.Store.RepairRoundStatuses(ctx, s.UUID, statuses)
	case workflows.EntityProposal:
		s, err := query[workflows.ProposalState](ctx, o, id)
		if err != nil {
			return "", err
		}
		p := s.Projection()
		return fmt.Sprintf("rewrote the proposal row from its workflow (version %d)", s.Row.Version),
			o.Store.RepairRow(ctx, "proposals", s.UUID, &p, workflows.ProposalColumns)
	default:
		s, err := query[workflows.TaskState](ctx, o, id)
		if err != nil {
			return "", err
		}
		p := s.Projection()
		if err := o.Store.RepairRow(ctx, "tasks", s.UUID, &p, workflows.TaskColumns); err != nil {
			return "", err
		}
		marks := make([]store.CriterionMarks, len(s.Criteria))
		for i, c := range s.Criteria {
			marks[i] = store.CriterionMarks{UUID: c.UUID, Status: c.Status, DevStatus: c.DevStatus}
		}
		return fmt.Sprintf("rewrote the task row from its workflow (version %d)", s.Row.Version),
			o.Store.RepairCriteria(ctx, s.UUID, marks)
	}
}

func (o *Ops) restart(ctx context.Context, entity workflows.Entity, uuid string) (string, error) {
	var state any
	switch entity {
	case workflows.EntityIdea:
		i, err := o.Store.IdeaRow(ctx, uuid)
		if err != nil {
			return "", err
		}
		rounds, err := o.Store.Elaboration(ctx, uuid)
		if err != nil {
			return "", err
		}
		state = workflows.IdeaStateFromRows(i, rounds)
	case workflows.EntityProposal:
		p, err := o.Store.ProposalDrafts(ctx, uuid)
		if err != nil {
			return "", err
		}
		state = workflows.ProposalStateFromRow(p)
	default:
		t, err := o.Store.TaskRow(ctx, uuid)
		if err != nil {
			return "", err
		}
		criteria, err := o.Store.Criteria(ctx, uuid)
		if err != nil {
			return "", err
		}
		state = workflows.NewTaskState(t, criteria)
	}
	run, err := o.Flows.StartFromState(ctx, state)
	if err != nil {
		return "", err
	}
	return "started a new run from the rows (run " + run + ")", nil
}
