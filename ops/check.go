package ops

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/sync/errgroup"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Check lists every disagreement between workflows and rows (CheckReport's findings); only,
// when not "", limits it to one workflow id ("task/<uuid>"). It writes nothing but the check
// marks of a whole pass.
func (o *Ops) Check(ctx context.Context, only string) ([]Finding, error) {
	r, err := o.CheckReport(ctx, only)
	return r.Findings, err
}

// Pass says what one check pass compared.
type Pass struct {
	// Incremental: only the entities that moved since the last pass were compared (CheckIncremental).
	Incremental bool
	// Entities is how many entities the pass considered: every row and every running workflow.
	Entities int
	// Compared is how many of them it compared; in an incremental pass, the others had not moved
	// since a pass found them in agreement.
	Compared int
	// Queried is how many of the compared it queried for their workflow's state: those whose
	// workflow's memo did not hold their row's digest (workflows.MemoDigest), had work pending, or
	// was not running, and those without a row. The others agreed at a glance (Ops.glance).
	Queried  int
	Duration time.Duration
	// Stages is how long each step of the pass took, in the order they ran: "read rows", "list
	// running workflows" (with their check marks in an incremental pass), "find what moved"
	// (incremental only), "compare", "recount unresolved dependencies", "record check marks".
	Stages []Stage
}

// Stage is one step of a pass and how long it took.
type Stage struct {
	Name     string
	Duration time.Duration
}

// stage records the step that ends now, begun at *since, and starts the next one.
func (p *Pass) stage(name string, since *time.Time) {
	now := time.Now()
	p.Stages = append(p.Stages, Stage{Name: name, Duration: now.Sub(*since)})
	*since = now
}

// CheckReport compares every idea, proposal and task row with its workflow, and every running
// entity workflow with its row: each differing column, each row whose workflow is missing or
// closed, each running workflow whose row is missing, each owned row (criterion, round) lost,
// each workflow stuck on an activity that keeps failing, and each task whose kept count of
// unresolved dependencies differs from a recount. Entities that kept changing through
// every observation are listed as busy. only, when not "", limits it to one workflow id, which
// must be "<idea|proposal|task>/<uuid>". It compares up to o.Concurrency entities at once, and a
// whole pass records, per entity it found in agreement, what it compared (store.CheckMark), for
// CheckIncremental. The error is the first read or call that failed (the database, Temporal, or a
// workflow's state query when no worker serves it); what was found until then is returned with it.
func (o *Ops) CheckReport(ctx context.Context, only string) (Report, error) {
	if only != "" {
		var r Report
		entity, uuid, err := vocab.ParseWorkflowID(only)
		if err != nil {
			return r, err
		}
		v, err := o.inspect(ctx, entity, uuid)
		r.add(v)
		if err != nil || entity != vocab.EntityTask {
			return r, err
		}
		counts, err := o.unresolvedCounts(ctx, uuid)
		r.Findings = append(r.Findings, counts...)
		return r, err
	}
	r, _, err := o.pass(ctx, false)
	return r, err
}

// CheckPass is CheckReport of every entity, with what the pass compared.
func (o *Ops) CheckPass(ctx context.Context) (Report, Pass, error) { return o.pass(ctx, false) }

// CheckIncremental is CheckReport for the entities that moved since the last pass (docs/
// write-path.md, "Check and repair"): rows whose version or change id differ from their check
// mark or have none (new rows, and those the last pass did not find in agreement), running
// workflows whose run differs from their mark (a reset, a restart, a continue-as-new) or that have
// no row, and rows whose workflow is not running. Everything else is as the last pass found it:
// its row and its workflow's run have not moved. Visibility (the list of running workflows) tells
// which is which; only the entities that moved are described and queried. A write stuck since the
// last pass on an entity that did not move is found by the next full pass.
func (o *Ops) CheckIncremental(ctx context.Context) (Report, Pass, error) {
	return o.pass(ctx, true)
}

func (r *Report) add(v verdict) {
	r.Findings = append(r.Findings, v.findings...)
	if v.busy != "" {
		r.Busy = append(r.Busy, Busy{WorkflowID: v.id, Reason: v.busy})
	}
}

// pass runs a whole check pass, full or incremental, and records its check marks.
func (o *Ops) pass(ctx context.Context, incremental bool) (Report, Pass, error) {
	started := time.Now()
	step := started
	p := Pass{Incremental: incremental}
	var r Report
	ids, err := o.Store.AllLifecycleUUIDs(ctx)
	if err != nil {
		return r, p, fmt.Errorf("read rows: %w", err)
	}
	p.stage("read rows", &step)
	rows := rowWorkflowIDs(ids)
	listed, err := o.listRunning(ctx, rows, incremental)
	if err != nil {
		return r, p, err
	}
	p.stage("list running workflows", &step)
	targets := rows
	if incremental {
		if targets, err = o.movedRows(ctx, rows, listed); err != nil {
			return r, p, err
		}
		p.stage("find what moved", &step)
	}
	targets = append(targets, listed.extra...)
	p.Entities = len(rows) + len(listed.extra)
	p.Compared = len(targets)

	verdicts, queried, err := o.compareAll(ctx, targets)
	p.Queried = queried
	for _, v := range verdicts {
		r.add(v)
	}
	if err != nil {
		return r, p, err
	}
	p.stage("compare", &step)
	counts, err := o.unresolvedCounts(ctx)
	r.Findings = append(r.Findings, counts...)
	if err != nil {
		return r, p, err
	}
	p.stage("recount unresolved dependencies", &step)
	if err := o.saveMarks(ctx, verdicts, r.Findings); err != nil {
		return r, p, err
	}
	p.stage("record check marks", &step)
	p.Duration = time.Since(started)
	return r, p, nil
}

// rowWorkflowIDs is the workflow id of every row, ideas then proposals then tasks: the order
// findings are listed in.
func rowWorkflowIDs(ids store.LifecycleUUIDs) []string {
	var rows []string
	for _, g := range []struct {
		entity vocab.Entity
		uuids  []string
	}{{vocab.EntityIdea, ids.Ideas}, {vocab.EntityProposal, ids.Proposals}, {vocab.EntityTask, ids.Tasks}} {
		for _, uuid := range g.uuids {
			rows = append(rows, vocab.WorkflowID(g.entity, uuid))
		}
	}
	return rows
}

// listedRuns is what visibility's list of running workflows says against the rows.
type listedRuns struct {
	// running holds every running entity workflow's id.
	running map[string]bool
	// extra are the running workflows without a row: compared in any pass.
	extra []string
	// moved are the rows whose running workflow's run is not the one their check mark names
	// (incremental passes only).
	moved []string
}

// listRunning lists the running entity workflows (visibility), and, in an incremental pass, reads
// their check marks to find those whose run moved.
func (o *Ops) listRunning(ctx context.Context, rows []string, incremental bool) (listedRuns, error) {
	hasRow := make(map[string]bool, len(rows))
	for _, id := range rows {
		hasRow[id] = true
	}
	l := listedRuns{running: map[string]bool{}}
	err := o.eachRunningPage(ctx, func(page []runningWorkflow) error {
		var ids []string
		for _, w := range page {
			l.running[w.id] = true
			ids = append(ids, w.id)
			if !hasRow[w.id] {
				l.extra = append(l.extra, w.id)
			}
		}
		if !incremental {
			return nil
		}
		marked, err := o.Store.MarkedRuns(ctx, ids)
		if err != nil {
			return fmt.Errorf("read check marks: %w", err)
		}
		for _, w := range page {
			if hasRow[w.id] && marked[w.id] != w.runID {
				l.moved = append(l.moved, w.id)
			}
		}
		return nil
	})
	return l, err
}

// movedRows is what an incremental pass compares of the rows, in their order: those whose version
// or change id differ from their check mark or have none, those whose run moved, and those whose
// workflow is not running.
func (o *Ops) movedRows(ctx context.Context, rows []string, listed listedRuns) ([]string, error) {
	changed, err := o.Store.UnmarkedRows(ctx)
	if err != nil {
		return nil, fmt.Errorf("read check marks: %w", err)
	}
	suspect := map[string]bool{}
	for _, id := range append(changed, listed.moved...) {
		suspect[id] = true
	}
	for _, id := range rows {
		if !listed.running[id] {
			suspect[id] = true // a missing or closed workflow, or one between two runs
		}
	}
	var targets []string
	for _, id := range rows {
		if suspect[id] {
			targets = append(targets, id)
		}
	}
	return targets, nil
}

// compareAll compares each of targets (workflow ids), up to o.Concurrency at once: at a glance
// (glance), and by inspecting it when the glance cannot tell. It returns a verdict per target, in
// their order, and how many it queried; the error is the first that failed, with the verdicts
// found until then.
func (o *Ops) compareAll(ctx context.Context, targets []string) ([]verdict, int, error) {
	verdicts := make([]verdict, len(targets))
	var queried atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.concurrency())
	for i, id := range targets {
		g.Go(func() error {
			entity, uuid, err := vocab.ParseWorkflowID(id)
			if err != nil {
				return nil
			}
			v, agree, err := o.glance(gctx, entity, uuid)
			if err != nil || agree {
				verdicts[i] = v
				return err
			}
			queried.Add(1)
			v, err = o.inspect(gctx, entity, uuid)
			verdicts[i] = v
			return err
		})
	}
	err := g.Wait()
	return verdicts, int(queried.Load()), err
}

// saveMarks records the check marks of a pass: a mark per entity found in agreement with its row
// and running workflow, none for the others (they are compared again by the next pass).
func (o *Ops) saveMarks(ctx context.Context, verdicts []verdict, findings []Finding) error {
	found := map[string]bool{}
	for _, f := range findings {
		found[f.WorkflowID] = true
	}
	now := store.Now()
	var marks []store.CheckMark
	var clear []string
	for _, v := range verdicts {
		ob := v.last
		if v.id == "" {
			continue
		}
		if found[v.id] || v.busy != "" || !ob.row.exists || ob.run.status != "running" {
			clear = append(clear, v.id)
			continue
		}
		marks = append(marks, store.CheckMark{WorkflowID: v.id, RunID: ob.run.runID, RowVersion: ob.row.version,
			RowChangeID: ob.row.changeID, CheckedAt: now})
	}
	if err := o.Store.SaveCheckMarks(ctx, marks, clear); err != nil {
		return fmt.Errorf("record check marks: %w", err)
	}
	return nil
}

// unresolvedCounts lists an UnresolvedCount finding for each task (of taskUUIDs, or every task)
// whose kept count differs from a recount. It reads the database once, in one statement: one
// consistent state, on which a write never shows half done, so no second reading is needed.
func (o *Ops) unresolvedCounts(ctx context.Context, taskUUIDs ...string) ([]Finding, error) {
	drifts, err := o.Store.UnresolvedDrifts(ctx, taskUUIDs...)
	if err != nil {
		return nil, fmt.Errorf("read counts of unresolved dependencies: %w", err)
	}
	var out []Finding
	for _, d := range drifts {
		out = append(out, Finding{WorkflowID: vocab.WorkflowID(vocab.EntityTask, d.TaskUUID), Kind: UnresolvedCount,
			Detail: fmt.Sprintf("the task's kept count of unresolved dependencies is %d, but %d of its dependencies are neither "+
				"done nor closed (chorus_get_unblocked_tasks reads the count); repair recounts it", d.Kept, d.Counted)})
	}
	return out, nil
}

// runningWorkflow is a running entity workflow as visibility lists it.
type runningWorkflow struct{ id, runID string }

// eachRunningPage calls f with every page of the running entity workflows of this deployment's
// task queue (visibility's list, 1,000 a page), stopping at f's first error.
func (o *Ops) eachRunningPage(ctx context.Context, f func([]runningWorkflow) error) error {
	var token []byte
	for {
		resp, err := o.Flows.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf(`ExecutionStatus = "Running" AND TaskQueue = %q AND ChorusEntity IN ("idea", "proposal", "task")`,
				o.Flows.TaskQueue),
			NextPageToken: token, PageSize: 1000,
		})
		if err != nil {
			return fmt.Errorf("list running workflows: %w", err)
		}
		page := make([]runningWorkflow, 0, len(resp.GetExecutions()))
		for _, e := range resp.GetExecutions() {
			page = append(page, runningWorkflow{id: e.GetExecution().GetWorkflowId(), runID: e.GetExecution().GetRunId()})
		}
		if err := f(page); err != nil {
			return err
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return nil
		}
	}
}
