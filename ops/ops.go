// Package ops compares every lifecycle entity's workflow with its rows and makes them agree
// again (docs/write-path.md, "Check and repair"): what `chorus ops check` and `chorus ops repair`
// run. It reads workflow state through the `state` query (so workers must be running) and
// DescribeWorkflowExecution, and rows through the store; it writes only through the store's
// guarded repair and by starting workflows. It knows workflows and store; nothing imports it but
// cmd/chorus.
//
// Both are meant for a live system, where commands keep moving rows and workflows. A workflow is
// applying a command when it has a pending activity: its row may then be one version ahead of
// its state, legitimately. So each entity is observed as a consistent pair (row, then the
// workflow's description and state, then the row again, unchanged), a difference counts only
// when two such pairs in a row show it and no change is in flight, and an entity that keeps
// changing through every attempt is reported as busy, not as a finding (observe, judge).
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

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
	// StuckActivity: the workflow runs and one of its activities (a write) has failed attempt
	// after attempt (Ops.StuckAttempts, Ops.StuckAfter). The workflow holds its entity's lock
	// meanwhile, so every command on the entity answers "Still in progress". Repair cannot fix it:
	// fix what the failure names, or terminate the workflow and run repair, which restarts it from
	// its rows.
	StuckActivity = "stuck-activity"
	// LostRows: rows the entity owns besides its own (a task's acceptance criteria, an idea's
	// elaboration rounds) are missing while its workflow holds them, typically because the entity's
	// row was deleted behind Chorus's back and took them with it. Their text lived only in the
	// database, so repair cannot recreate them: restore them from a backup.
	LostRows = "lost-rows"
	// UnresolvedCount: a task's kept count of unresolved dependencies (store/unresolved.go), which
	// chorus_get_unblocked_tasks reads, differs from what its dependencies say. Every write keeps
	// it in its own transaction, so this is never a write in flight: a row written behind
	// Chorus's back, or a writer that failed to keep it. Repair recounts it.
	UnresolvedCount = "unresolved-count"
)

// Kinds lists every kind of finding, in the order reports count them.
var Kinds = []string{Diverged, MissingWorkflow, ClosedWorkflow, MissingRow, StuckActivity, LostRows, UnresolvedCount}

// Repairable reports whether Repair can resolve findings of kind (StuckActivity and LostRows
// need an operator).
func Repairable(kind string) bool { return kind != StuckActivity && kind != LostRows }

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
	// Activity is the activity a StuckActivity finding is about (nil for other kinds).
	Activity *Activity `json:"activity,omitempty"`
}

// Activity is a pending activity of a workflow, as Temporal describes it.
type Activity struct {
	// Type is the activity's name, e.g. "ApplyTaskChange".
	Type string `json:"type"`
	// Attempt is the attempt running or due next, counted from 1.
	Attempt int32 `json:"attempt"`
	// LastFailure is the message of the last failed attempt's error ("" when none failed).
	LastFailure string `json:"lastFailure,omitempty"`
	// LastFailedAt is when the last failed attempt ended (nil when none failed).
	LastFailedAt *time.Time `json:"lastFailedAt,omitempty"`
}

// Busy is an entity check could not compare with its workflow because one of them kept changing
// through every attempt (a command, or a stream of them, was being applied). It is not a
// disagreement: check it again later.
type Busy struct {
	WorkflowID string `json:"workflowId"`
	// Reason says what was moving, e.g. "a change is being applied (ApplyTaskChange is pending)".
	Reason string `json:"reason"`
}

// Report is what one check found.
type Report struct {
	Findings []Finding
	Busy     []Busy
}

// Ops checks and repairs over one store and one Temporal namespace. Only Store and Flows are
// required; the zero values of the others mean the defaults given.
type Ops struct {
	Store *store.Store
	Flows *workflows.Client
	// Converters are those of Flows' Temporal client (payload keys): ReplayHistory replays with
	// them, and a pass opens the digest in each workflow's memo with them. Nil: payloads in the
	// clear (a sealed digest cannot be read, so every workflow is queried).
	Converters *workflows.Converters

	// Attempts is how many times an entity is observed before it is called busy (default 6).
	Attempts int
	// Pause is the wait before observing an entity again; it doubles after each attempt, up to
	// one second (default 50 ms).
	Pause time.Duration
	// StuckAttempts and StuckAfter make an activity that has failed at least once stuck: when it
	// is at attempt StuckAttempts or later (default 5), or its last failed attempt ended StuckAfter
	// ago or longer (default one minute).
	StuckAttempts int32
	StuckAfter    time.Duration
	// Concurrency is how many entities a pass compares at once (default 8).
	Concurrency int
}

func (o *Ops) attempts() int {
	if o.Attempts > 0 {
		return o.Attempts
	}
	return 6
}

func (o *Ops) pause() time.Duration {
	if o.Pause > 0 {
		return o.Pause
	}
	return 50 * time.Millisecond
}

func (o *Ops) stuckAttempts() int32 {
	if o.StuckAttempts > 0 {
		return o.StuckAttempts
	}
	return 5
}

func (o *Ops) stuckAfter() time.Duration {
	if o.StuckAfter > 0 {
		return o.StuckAfter
	}
	return time.Minute
}

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
		entity, uuid, err := workflows.ParseWorkflowID(only)
		if err != nil {
			return r, err
		}
		v, err := o.inspect(ctx, entity, uuid)
		r.add(v)
		if err != nil || entity != workflows.EntityTask {
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

func (o *Ops) concurrency() int {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	return 8
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
	var rows []string // workflow ids, in the order findings are listed
	for _, g := range []struct {
		entity workflows.Entity
		uuids  []string
	}{{workflows.EntityIdea, ids.Ideas}, {workflows.EntityProposal, ids.Proposals}, {workflows.EntityTask, ids.Tasks}} {
		for _, uuid := range g.uuids {
			rows = append(rows, workflows.WorkflowID(g.entity, uuid))
		}
	}
	hasRow := make(map[string]bool, len(rows))
	for _, id := range rows {
		hasRow[id] = true
	}
	// Running workflows, from visibility: those without a row are compared in any pass; in an
	// incremental one, so are those whose run is not the one their mark names.
	running := map[string]bool{}
	var extra, moved []string
	err = o.eachRunningPage(ctx, func(page []runningWorkflow) error {
		var ids []string
		for _, w := range page {
			running[w.id] = true
			ids = append(ids, w.id)
			if !hasRow[w.id] {
				extra = append(extra, w.id)
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
				moved = append(moved, w.id)
			}
		}
		return nil
	})
	if err != nil {
		return r, p, err
	}
	p.stage("list running workflows", &step)
	targets := rows
	if incremental {
		changed, err := o.Store.UnmarkedRows(ctx)
		if err != nil {
			return r, p, fmt.Errorf("read check marks: %w", err)
		}
		suspect := map[string]bool{}
		for _, id := range append(changed, moved...) {
			suspect[id] = true
		}
		for _, id := range rows {
			if !running[id] {
				suspect[id] = true // a missing or closed workflow, or one between two runs
			}
		}
		targets = nil
		for _, id := range rows {
			if suspect[id] {
				targets = append(targets, id)
			}
		}
		p.stage("find what moved", &step)
	}
	targets = append(targets, extra...)
	p.Entities = len(rows) + len(extra)
	p.Compared = len(targets)

	verdicts := make([]verdict, len(targets))
	var queried atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.concurrency())
	for i, id := range targets {
		g.Go(func() error {
			entity, uuid, err := workflows.ParseWorkflowID(id)
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
	err = g.Wait()
	p.Queried = int(queried.Load())
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
		out = append(out, Finding{WorkflowID: workflows.WorkflowID(workflows.EntityTask, d.TaskUUID), Kind: UnresolvedCount,
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

// ---- observing an entity ----

// side is an entity as its rows, or its workflow's state, show it, rendered for comparison
// (workflows.Checked: the columns the workflow owns, with version and change_id, and what the
// entity owns besides its row).
type side struct {
	workflows.Checked
	// exists: the row exists / the workflow holds a created entity that is not deleted.
	exists   bool
	version  int64
	changeID string
	status   string
}

func (s side) same(t side) bool {
	return s.exists == t.exists && s.version == t.version && s.changeID == t.changeID &&
		maps.Equal(s.Values, t.Values) && maps.Equal(s.Parts, t.Parts)
}

// lostable reports whether a part holds text only the database had.
func lostable(part string) bool {
	return strings.HasPrefix(part, "criterion ") || strings.HasPrefix(part, "round ")
}

// run is what DescribeWorkflowExecution says of an entity's latest run.
type run struct {
	found   bool   // a run was ever started
	status  string // "running", "terminated", "failed", ...
	runID   string
	pending []Activity
	// pendingTask: a workflow task is scheduled or running (the workflow is taking in an event).
	pendingTask bool
	// digest is the Checked digest of its state that the run keeps in its memo
	// (workflows.MemoDigest); "" when it keeps none.
	digest string
}

// observation is one consistent look at an entity: its rows, read before and after its
// workflow's description and state, and found unchanged (else moving says what changed).
type observation struct {
	id     string
	entity workflows.Entity
	row    side
	run    run
	wf     side
	state  any // IdeaState, ProposalState or TaskState, when the run is running
	// proposalID is the task's proposal workflow (tasks only), for revokes and approvals.
	proposalID string
	// moving is why this observation is not a consistent pair ("" when it is).
	moving string
	// moveInFlight: the row holds a move of an idea (movedRow) that is still being delivered: the
	// moving idea's workflow has work pending, or this workflow is taking in an event.
	moveInFlight bool
	// revokeInFlight: the row holds its proposal's revoke (revokedRow) that is still being
	// delivered, likewise.
	revokeInFlight bool
}

// revokedRow reports whether a task's row holds its proposal's revoke that its workflow has not
// adopted: closed, ahead of the state, marked with the proposal's change.
func (ob observation) revokedRow() bool {
	return ob.entity == workflows.EntityTask && ob.proposalID != "" && ob.row.exists && ob.wf.exists &&
		ob.row.status == "closed" && ob.row.version > ob.wf.version && strings.HasPrefix(ob.row.changeID, ob.proposalID+"#")
}

// movedRow reports whether the row holds a move of an idea that its workflow has not adopted:
// one version or more ahead of the state, marked with another idea workflow's change
// (docs/write-path.md, "Who writes what"). It returns that idea's workflow id.
func (ob observation) movedRow() (string, bool) {
	if !ob.row.exists || !ob.wf.exists || ob.row.version <= ob.wf.version {
		return "", false
	}
	id, _, ok := strings.Cut(ob.row.changeID, "#")
	if !ok || !strings.HasPrefix(id, string(workflows.EntityIdea)+"/") || id == ob.id {
		return "", false
	}
	return id, true
}

func (o *Ops) observe(ctx context.Context, entity workflows.Entity, uuid string) (observation, error) {
	ob := observation{id: workflows.WorkflowID(entity, uuid), entity: entity}
	before, err := o.readRows(ctx, entity, uuid, &ob)
	if err != nil {
		return ob, err
	}
	if ob.run, err = o.describe(ctx, ob.id); err != nil {
		return ob, err
	}
	if ob.run.status == "running" {
		if ob.wf, ob.state, err = o.queryState(ctx, entity, ob.id); err != nil {
			return ob, err
		}
	}
	if ob.row, err = o.readRows(ctx, entity, uuid, &ob); err != nil {
		return ob, err
	}
	if mover, ok := ob.movedRow(); ok && ob.run.status == "running" {
		m, err := o.describe(ctx, mover)
		if err != nil {
			return ob, err
		}
		ob.moveInFlight = len(m.pending) > 0 || m.pendingTask || ob.run.pendingTask
	}
	if ob.revokedRow() && ob.run.status == "running" {
		p, err := o.describe(ctx, ob.proposalID)
		if err != nil {
			return ob, err
		}
		ob.revokeInFlight = len(p.pending) > 0 || p.pendingTask || ob.run.pendingTask
	}
	switch {
	case !before.same(ob.row):
		ob.moving = "its row changed while it was being compared"
	case !ob.run.found && ob.row.exists && ob.proposalID != "" && strings.HasPrefix(ob.row.changeID, ob.proposalID+"#"):
		// A task its proposal's approval inserted: the approval starts its workflow next.
		p, err := o.describe(ctx, ob.proposalID)
		if err != nil {
			return ob, err
		}
		if len(p.pending) > 0 || p.pendingTask {
			ob.moving = "its proposal's approval is starting its workflow"
		}
	}
	return ob, nil
}

// readRows reads an entity's row and what it owns; a missing row is a side that does not exist.
func (o *Ops) readRows(ctx context.Context, entity workflows.Entity, uuid string, ob *observation) (side, error) {
	var s side
	var err error
	switch entity {
	case workflows.EntityIdea:
		var i store.Idea
		if i, err = o.Store.IdeaRow(ctx, uuid); err == nil {
			var rounds []store.ElaborationRound
			if rounds, err = o.Store.Elaboration(ctx, uuid); err == nil {
				s, err = render(&i, workflows.IdeaColumns, i.Version, i.ChangeID, i.Status)
				for _, r := range rounds {
					s.Part("round "+r.UUID, r.Status)
				}
			}
		}
	case workflows.EntityProposal:
		var p store.Proposal
		if p, err = o.Store.ProposalDrafts(ctx, uuid); err == nil {
			s, err = render(&p, workflows.ProposalColumns, p.Version, p.ChangeID, p.Status)
			var docs, tasks []string
			for _, d := range p.DocumentDrafts {
				docs = append(docs, d.UUID)
			}
			for _, t := range p.TaskDrafts {
				tasks = append(tasks, t.UUID)
			}
			s.Part("document drafts", strings.Join(docs, ","))
			s.Part("task drafts", strings.Join(tasks, ","))
		}
	default:
		var t store.Task
		if t, err = o.Store.TaskRow(ctx, uuid); err == nil {
			if t.ProposalUUID != nil {
				ob.proposalID = workflows.ProposalID(*t.ProposalUUID)
			}
			var criteria []store.AcceptanceCriterion
			if criteria, err = o.Store.Criteria(ctx, uuid); err == nil {
				s, err = render(&t, workflows.TaskColumns, t.Version, t.ChangeID, t.Status)
				for _, c := range criteria {
					s.Part("criterion "+c.UUID, c.Status+"/"+c.DevStatus)
				}
			}
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return side{}, nil
	}
	if err != nil {
		return side{}, fmt.Errorf("read the rows of %s: %w", workflows.WorkflowID(entity, uuid), err)
	}
	return s, nil
}

// render is the side of a row: its owned columns, version and change_id as text.
func render(model any, cols []string, version int64, changeID, status string) (side, error) {
	c, err := workflows.NewChecked(model, cols)
	return side{Checked: c, exists: true, version: version, changeID: changeID, status: status}, err
}

// dataConverter opens payloads as Flows' Temporal client does (Converters).
func (o *Ops) dataConverter() converter.DataConverter {
	if o.Converters != nil && o.Converters.Data != nil {
		return o.Converters.Data
	}
	return workflows.DataConverter()
}

// describe reads what Temporal says of id's latest run; a workflow never started is found false.
func (o *Ops) describe(ctx context.Context, id string) (run, error) {
	d, err := o.Flows.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return run{}, nil
	}
	if err != nil {
		return run{}, fmt.Errorf("describe %s: %w", id, err)
	}
	info := d.GetWorkflowExecutionInfo()
	r := run{found: true, runID: info.GetExecution().GetRunId(), pendingTask: d.GetPendingWorkflowTask() != nil,
		status: strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))}
	if p, ok := info.GetMemo().GetFields()[workflows.MemoDigest]; ok {
		_ = o.dataConverter().FromPayload(p, &r.digest) // unreadable: no digest, so it is queried
	}
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return r, nil // a closed run's activities are not pending any more, whatever it lists
	}
	r.status = "running"
	for _, p := range d.GetPendingActivities() {
		a := Activity{Type: p.GetActivityType().GetName(), Attempt: p.GetAttempt()}
		if f := p.GetLastFailure(); f != nil {
			a.LastFailure = failureText(f)
			if t := p.GetLastAttemptCompleteTime(); t != nil {
				at := t.AsTime()
				a.LastFailedAt = &at
			}
		}
		r.pending = append(r.pending, a)
	}
	return r, nil
}

// failureText is a failure's message followed by its causes' ("message: cause: cause").
func failureText(f *failurepb.Failure) string {
	var parts []string
	for ; f != nil && len(parts) < 5; f = f.GetCause() {
		if m := f.GetMessage(); m != "" && !slices.Contains(parts, m) {
			parts = append(parts, m)
		}
	}
	return strings.Join(parts, ": ")
}

// queryState reads a running workflow's state and renders its side.
func (o *Ops) queryState(ctx context.Context, entity workflows.Entity, id string) (side, any, error) {
	switch entity {
	case workflows.EntityIdea:
		s, err := query[workflows.IdeaState](ctx, o, id)
		if err != nil {
			return side{}, nil, err
		}
		c, err := s.Checked()
		return side{Checked: c, exists: s.Created && !s.Deleted, version: s.Row.Version, changeID: s.Row.ChangeID,
			status: s.Status}, s, err
	case workflows.EntityProposal:
		s, err := query[workflows.ProposalState](ctx, o, id)
		if err != nil {
			return side{}, nil, err
		}
		c, err := s.Checked()
		return side{Checked: c, exists: s.Created, version: s.Row.Version, changeID: s.Row.ChangeID, status: s.Status}, s, err
	default:
		s, err := query[workflows.TaskState](ctx, o, id)
		if err != nil {
			return side{}, nil, err
		}
		c, err := s.Checked()
		return side{Checked: c, exists: s.Created && !s.Deleted, version: s.Row.Version, changeID: s.Row.ChangeID,
			status: s.Status}, s, err
	}
}

func query[S any](ctx context.Context, o *Ops, id string) (S, error) {
	var s S
	v, err := o.Flows.Temporal.QueryWorkflow(ctx, id, "", workflows.QueryState)
	if err != nil {
		return s, fmt.Errorf("query %s (are the workers running?): %w", id, err)
	}
	return s, v.Get(&s)
}

// ---- judging an observation ----

// judgement is what one observation shows: findings, or why it shows nothing certain.
type judgement struct {
	findings []Finding // disagreements, StuckActivity excepted
	stuck    []Finding // StuckActivity findings
	// busy is why the pair could not be compared ("" when it could): a change was moving it.
	busy string
}

// ownNextChange says whether the row holds a change the workflow would make next: one of its own
// changes (docs/write-path.md, "One write protocol": "<workflow id>#<new version>@<update>") one
// version ahead of its state. Which update it is cannot be told from outside (a pending
// activity's input is not described), so this also matches a change a reset abandoned; callers
// pair it with work in flight (a pending activity or workflow task) before calling it a change
// being applied.
func ownNextChange(ob observation) bool {
	return ob.row.exists && ob.row.version == ob.wf.version+1 &&
		strings.HasPrefix(ob.row.changeID, fmt.Sprintf("%s#%d@", ob.id, ob.wf.version+1))
}

// judge says what an observation shows. now dates the stuck test.
func (o *Ops) judge(ob observation, now time.Time) judgement {
	var j judgement
	for _, a := range ob.run.pending {
		if a.LastFailure == "" {
			continue
		}
		if a.Attempt >= o.stuckAttempts() || a.LastFailedAt != nil && now.Sub(*a.LastFailedAt) >= o.stuckAfter() {
			j.stuck = append(j.stuck, Finding{WorkflowID: ob.id, Kind: StuckActivity, Activity: &a,
				Detail: fmt.Sprintf("%s has failed %d times and keeps being retried (last failure: %s); commands on the entity "+
					"wait behind it. Fix that cause, or terminate the workflow and run chorus ops repair %s to restart it "+
					"from its rows", a.Type, a.Attempt-1, a.LastFailure, ob.id)})
		}
	}
	if ob.moving != "" {
		j.busy = ob.moving
		return j
	}
	if !ob.run.found || ob.run.status != "running" {
		switch {
		case !ob.row.exists: // no row and no running workflow: a deleted entity, nothing to compare
		case !ob.run.found:
			j.findings = []Finding{{WorkflowID: ob.id, Kind: MissingWorkflow, Detail: "the row exists but no workflow was ever started"}}
		default:
			j.findings = []Finding{{WorkflowID: ob.id, Kind: ClosedWorkflow,
				Detail: fmt.Sprintf("the row exists but the workflow's last run is %s", ob.run.status)}}
		}
		return j
	}
	diffs, lost := compare(ob.row, ob.wf)
	if len(diffs) == 0 && len(lost) == 0 && ob.row.exists == ob.wf.exists {
		return j
	}
	if a, ok := ob.midChange(); ok {
		j.busy = a
		return j
	}
	switch {
	case !ob.row.exists && ob.wf.exists:
		j.findings = append(j.findings, Finding{WorkflowID: ob.id, Kind: MissingRow, Detail: "the workflow holds the entity but its row is missing"})
	case len(diffs) > 0:
		cols := make([]string, len(diffs))
		for i, d := range diffs {
			cols[i] = d.Column
		}
		j.findings = append(j.findings, Finding{WorkflowID: ob.id, Kind: Diverged, Detail: "differs in " + strings.Join(cols, ", "),
			Differences: diffs})
	}
	if len(lost) > 0 {
		j.findings = append(j.findings, lostFinding(ob.id, lost))
	}
	return j
}

// midChange says whether the row is legitimately ahead of the workflow's state, and why: the
// workflow has a write in flight whose change the row already holds (or whose delete already
// removed it), or the row holds its task's proposal's revoke, which the task's workflow adopts.
func (ob observation) midChange() (string, bool) {
	if len(ob.run.pending) > 0 {
		pending := make([]string, len(ob.run.pending))
		for i, a := range ob.run.pending {
			pending[i] = a.Type
		}
		why := "a change is being applied (" + strings.Join(pending, ", ") + " pending)"
		switch {
		case ownNextChange(ob):
			return why, true
		case !ob.row.exists && ob.wf.exists: // a delete in flight
			return why, true
		}
	}
	if ob.revokedRow() && ob.revokeInFlight {
		return "its proposal's revoke closed the row, and the workflow is adopting it", true
	}
	if mover, ok := ob.movedRow(); ok && ob.moveInFlight {
		return "a move of " + mover + " moved the row, and the workflow is adopting it", true
	}
	return "", false
}

// compare lists the columns where row and workflow differ, and the owned rows the workflow holds
// that are gone from the database. Nothing is compared without a row; only the row's columns
// when the workflow holds no entity (not created yet, or deleted).
func compare(row, wf side) (diffs, lost []Difference) {
	if !row.exists {
		return nil, nil
	}
	for _, c := range wf.Columns {
		if row.Values[c] != wf.Values[c] {
			diffs = append(diffs, Difference{Column: c, Row: row.Values[c], Workflow: wf.Values[c]})
		}
	}
	if !wf.exists {
		return diffs, nil
	}
	for _, p := range wf.PartNames {
		r, ok := row.Parts[p]
		switch {
		case !ok && lostable(p):
			lost = append(lost, Difference{Column: p, Row: "missing", Workflow: wf.Parts[p]})
		case r != wf.Parts[p]:
			diffs = append(diffs, Difference{Column: p, Row: r, Workflow: wf.Parts[p]})
		}
	}
	return diffs, lost
}

// lostFinding is the LostRows finding for the owned rows in lost.
func lostFinding(id string, lost []Difference) Finding {
	what := "elaboration rounds"
	if strings.HasPrefix(lost[0].Column, "criterion ") {
		what = "acceptance criteria"
	}
	return Finding{WorkflowID: id, Kind: LostRows, Differences: lost,
		Detail: fmt.Sprintf("%d %s rows are missing (the workflow holds them). Their text lived only in the database, so "+
			"chorus ops repair cannot recreate them: restore them from a backup of the database", len(lost), what)}
}

// glance compares an entity's row with what describing its workflow shows: the digest of its
// state the workflow keeps in its memo (workflows.MemoDigest), and its pending work. agree is true
// when the run is running, nothing is pending, and the digest is the row's (workflows.Checked):
// then the workflow's state is the row, as a query would show (the state changes only after its
// row is written, and every change publishes the new digest), and v is that verdict. Otherwise
// (no row, no digest, a different one, work pending, a run not running) it cannot tell, and
// inspect decides. The error is a read or a describe that failed.
func (o *Ops) glance(ctx context.Context, entity workflows.Entity, uuid string) (v verdict, agree bool, err error) {
	ob := observation{id: workflows.WorkflowID(entity, uuid), entity: entity}
	if ob.row, err = o.readRows(ctx, entity, uuid, &ob); err != nil || !ob.row.exists {
		return v, false, err
	}
	if ob.run, err = o.describe(ctx, ob.id); err != nil {
		return v, false, err
	}
	r := ob.run
	if r.status != "running" || r.pendingTask || len(r.pending) > 0 || r.digest == "" || r.digest != ob.row.Digest() {
		return v, false, nil
	}
	return verdict{id: ob.id, last: ob}, true, nil
}

// verdict is what inspecting one entity found.
type verdict struct {
	id       string
	findings []Finding
	// busy is why the entity could not be compared ("" when it was).
	busy string
	// last is the observation the verdict rests on.
	last observation
}

// inspect observes an entity until two consecutive consistent observations agree on what they
// show, or until it has used its attempts (then it is busy). Stuck activities are reported
// whatever the comparison shows.
func (o *Ops) inspect(ctx context.Context, entity workflows.Entity, uuid string) (verdict, error) {
	v := verdict{id: workflows.WorkflowID(entity, uuid)}
	var prev string
	pause := o.pause()
	for attempt := range o.attempts() {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return v, ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
		}
		ob, err := o.observe(ctx, entity, uuid)
		if err != nil {
			return v, err
		}
		j := o.judge(ob, time.Now())
		v.last, v.findings, v.busy = ob, j.stuck, j.busy
		if j.busy != "" && len(j.stuck) > 0 {
			v.busy = "" // stuck, not busy: the finding says why it cannot be compared
			return v, nil
		}
		if j.busy != "" {
			prev = ""
			continue
		}
		if len(j.findings) == 0 {
			return v, nil
		}
		sig, _ := json.Marshal(j.findings)
		if string(sig) == prev {
			v.findings = append(j.findings, j.stuck...)
			return v, nil
		}
		prev = string(sig)
		v.busy = "it kept changing while it was compared"
	}
	return v, nil
}

// ---- repair ----

// ErrSkipped is Repair's error when it left a finding alone on purpose: the entity was changing
// (a command was being applied, or its row or state moved between the repair's reads). Nothing
// was written; the error's text says why. Check again later.
var ErrSkipped = errors.New("skipped")

// ErrCannotRepair is Repair's error for a finding it cannot resolve (StuckActivity, LostRows);
// the error's text says what an operator can do.
var ErrCannotRepair = errors.New("cannot repair")

func skipped(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSkipped, fmt.Sprintf(format, args...))
}

// Repair resolves one finding and says what it did: a diverged or missing row is rewritten
// from its running workflow (the workflow is the truth, as after a `temporal workflow reset`);
// a missing or closed workflow gets a new run started from its rows.
//
// It checks the entity again first, and rewrites a row only when that check confirms the
// finding on a workflow with no change in flight; it then re-reads the workflow right before
// writing, and writes only if the row is still exactly what it checked (store.RowGuard). So it
// never overwrites a change made meanwhile, nor a row legitimately ahead of a workflow that is
// applying a command: it returns an ErrSkipped error saying why instead. A finding that no longer
// holds is left alone, with a nil error. StuckActivity and LostRows findings get an
// ErrCannotRepair error saying what to do.
func (o *Ops) Repair(ctx context.Context, f Finding) (string, error) {
	entity, uuid, err := workflows.ParseWorkflowID(f.WorkflowID)
	if err != nil {
		return "", err
	}
	switch f.Kind {
	case Diverged, MissingRow:
		return o.rewriteRow(ctx, entity, uuid)
	case MissingWorkflow, ClosedWorkflow:
		return o.restart(ctx, entity, uuid)
	case StuckActivity:
		return "", fmt.Errorf("%w: %s is stuck on a failing activity (%s). Look at the failure and fix its cause; or "+
			"terminate the workflow (temporal workflow terminate -w %s) and run chorus ops repair %s, which restarts it "+
			"from its rows", ErrCannotRepair, f.WorkflowID, f.Detail, f.WorkflowID, f.WorkflowID)
	case LostRows:
		return "", fmt.Errorf("%w: %s. Restore them from a backup of the database (then run chorus ops check %s)",
			ErrCannotRepair, f.Detail, f.WorkflowID)
	case UnresolvedCount:
		return o.recount(ctx, uuid)
	}
	return "", fmt.Errorf("no repair for a %q finding", f.Kind)
}

// recount recounts a task's unresolved dependencies from its edges, in one transaction with the
// project locked as every write that counts them (store.RecountUnresolved).
func (o *Ops) recount(ctx context.Context, uuid string) (string, error) {
	t, err := o.Store.TaskRow(ctx, uuid)
	if errors.Is(err, store.ErrNotFound) {
		return "nothing to do: the task row is gone", nil
	} else if err != nil {
		return "", err
	}
	n, err := o.Store.RecountUnresolved(ctx, t.ProjectUUID, uuid)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "nothing to do: the count of unresolved dependencies agrees with the task's dependencies now", nil
	}
	return "recounted the task's unresolved dependencies from its dependencies", nil
}

func (o *Ops) rewriteRow(ctx context.Context, entity workflows.Entity, uuid string) (string, error) {
	v, err := o.inspect(ctx, entity, uuid)
	if err != nil {
		return "", err
	}
	ob := v.last
	if v.busy != "" {
		return "", skipped("%s is changing (%s); check it again later", v.id, v.busy)
	}
	kinds := map[string]bool{}
	for _, f := range v.findings {
		kinds[f.Kind] = true
	}
	switch {
	case kinds[StuckActivity]:
		return "", skipped("%s is stuck on a failing activity; its row is not rewritten while a change is in flight", v.id)
	case !kinds[Diverged] && !kinds[MissingRow] && kinds[LostRows]:
		return o.Repair(ctx, v.findings[slices.IndexFunc(v.findings, func(f Finding) bool { return f.Kind == LostRows })])
	case !kinds[Diverged] && !kinds[MissingRow]:
		return "nothing to do: the row agrees with its workflow now", nil
	case len(ob.run.pending) > 0:
		return "", skipped("%s has %s pending: it is applying a change", v.id, ob.run.pending[0].Type)
	}
	if ownNextChange(ob) && ob.run.pendingTask {
		return "", skipped("the row holds %s's own next change (%s), which the workflow may still record; if it stays so, "+
			"terminate the workflow and run chorus ops repair %s to restart it from its rows", v.id, ob.row.changeID, v.id)
	}
	// A move or revoke that is all the workflow lacks (the row one version ahead) is adopted through
	// its signal, as its delivery would have.
	if mover, ok := ob.movedRow(); ok && ob.row.version == ob.wf.version+1 {
		return o.adoptMove(ctx, ob, mover)
	}
	if ob.revokedRow() && ob.row.version == ob.wf.version+1 {
		return o.adoptRevoke(ctx, ob)
	}
	// Rows that hold changes Chorus applied (the change journal lists the row's) and the workflow
	// lost (a reset that dropped updates or signals, a move or revoke never delivered): agents were
	// told those commands succeeded, so the rows are the truth, and the workflow follows them
	// forward instead of the rows being rolled back.
	if forward, err := o.rowsAhead(ctx, ob, uuid); err != nil {
		return "", err
	} else if forward {
		return o.restartFromRows(ctx, ob, entity, uuid)
	}
	// A move or revoke further ahead that the journal does not list (a revoke written before
	// revokes were journaled) is adopted through its signal too.
	if mover, ok := ob.movedRow(); ok {
		return o.adoptMove(ctx, ob, mover)
	}
	if ob.revokedRow() {
		return o.adoptRevoke(ctx, ob)
	}
	if deletedBy, err := o.deletedByOwnChange(ctx, ob, uuid); err != nil {
		return "", err
	} else if deletedBy != "" {
		return o.endDeleted(ctx, ob, deletedBy)
	}
	// Re-verify right before writing: the same run, nothing in flight, the same state.
	again, err := o.describe(ctx, v.id)
	if err != nil {
		return "", err
	}
	if again.runID != ob.run.runID || len(again.pending) > 0 {
		return "", skipped("%s started a change while it was being repaired", v.id)
	}
	wf, state, err := o.queryState(ctx, entity, v.id)
	if err != nil {
		return "", err
	}
	if !wf.same(ob.wf) {
		return "", skipped("%s's state moved while it was being repaired", v.id)
	}
	if project := wf.Values["project_uuid"]; project != "" {
		if exists, err := o.Store.LifecycleProjectExists(ctx, project); err != nil {
			return "", err
		} else if !exists {
			return "", foreignWorkflow(v.id, entity, project)
		}
	}
	r := store.RowRepair{UUID: uuid, Guard: store.RowGuard{Missing: !ob.row.exists, Version: ob.row.version, ChangeID: ob.row.changeID},
		Undo: rollbackActivity(entity, uuid, state, ob.row.version)}
	var lost, lostDrafts int
	switch s := state.(type) {
	case workflows.IdeaState:
		p := s.Projection()
		r.Table, r.Model, r.Columns, r.Rounds = "ideas", &p, workflows.IdeaColumns, map[string]string{}
		for _, rd := range s.Rounds {
			r.Rounds[rd.UUID] = rd.Status
		}
	case workflows.ProposalState:
		p := s.Projection()
		r.Table, r.Model, r.Columns = "proposals", &p, workflows.ProposalColumns
		r.Drafts = &store.DraftLists{Documents: s.Documents, Tasks: s.Tasks}
		lostDrafts = missingDrafts(ob.row.Parts["document drafts"], s.Documents) +
			missingDrafts(ob.row.Parts["task drafts"], s.Tasks)
	case workflows.TaskState:
		p := s.Projection()
		r.Table, r.Model, r.Columns = "tasks", &p, workflows.TaskColumns
		for _, c := range s.Criteria {
			r.Criteria = append(r.Criteria, store.CriterionMarks{UUID: c.UUID, Status: c.Status, DevStatus: c.DevStatus})
		}
	}
	for p := range wf.Parts {
		if _, ok := ob.row.Parts[p]; !ok && lostable(p) {
			lost++
		}
	}
	if err := o.Store.RepairRow(ctx, r); errors.Is(err, store.ErrRowMoved) {
		return "", skipped("%s's row changed since it was checked; nothing was written", v.id)
	} else if store.IsConstraintViolation(err) {
		return "", fmt.Errorf("%w: the database refused %s's row as its workflow holds it (%v): a row it refers to (its "+
			"project, parent idea or proposal) is not in this database. If the workflow is not this deployment's, terminate it "+
			"(temporal workflow terminate -w %s --reason ...); if rows were deleted by hand, restore them from a backup. "+
			"Running repair again changes nothing", ErrCannotRepair, v.id, err, v.id)
	} else if err != nil {
		return "", err
	}
	owned := "acceptance criteria"
	if entity == workflows.EntityIdea {
		owned = "elaboration rounds"
	}
	msg := fmt.Sprintf("rewrote the %s row from its workflow (version %d)", entity, wf.version)
	switch {
	case r.Guard.Missing && lost > 0:
		msg = fmt.Sprintf("re-inserted the %s row from its workflow (version %d). What lived only in the database cannot be "+
			"recreated; restore it from a backup: the columns the workflow does not hold (its description or content, among "+
			"others) and the %d %s rows that went with the row", entity, wf.version, lost, owned)
	case r.Guard.Missing:
		msg = fmt.Sprintf("re-inserted the %s row from its workflow (version %d). The columns the workflow does not hold "+
			"(its description or content, among others) are empty: restore them from a backup", entity, wf.version)
	case lost > 0:
		msg += fmt.Sprintf(". %d %s rows are gone and cannot be recreated (their text lived only in the database): restore "+
			"them from a backup", lost, owned)
	}
	if lostDrafts > 0 && !r.Guard.Missing {
		msg += fmt.Sprintf(". The row lost %d of the drafts the workflow holds; their text lived only in the database, so "+
			"they cannot be recreated: restore them from a backup, or remove them with the draft tools", lostDrafts)
	}
	if n := r.Undo.Undone; n > 0 {
		msg += fmt.Sprintf(". This rolled back %d change(s) Chorus had applied (row version %d): the row's history past the "+
			"workflow cannot be adopted, since it does not end in a change Chorus made. Their change journal entries are marked "+
			"rolled back, a retry of their calls with the same requestId is told so, and a rolled_back activity on the %s "+
			"records it", n, ob.row.version, entity)
	}
	return msg, nil
}

// foreignWorkflow is the error of a repair whose workflow holds an entity of a project this
// database does not have.
func foreignWorkflow(id string, entity workflows.Entity, project string) error {
	return fmt.Errorf("%w: %s holds a %s of project %s, which is not in this database: the workflow belongs to another "+
		"deployment (one using the same Temporal namespace and task queue), or its project was deleted behind Chorus's back. "+
		"Terminate it (temporal workflow terminate -w %s --reason \"not this deployment's\"), or restore the project from a "+
		"backup. Running repair again changes nothing", ErrCannotRepair, id, entity, project, id)
}

// rollbackActivity is what a repair that rolls the row back from version from records
// (store.RowRepair.Undo): an activity on the entity, its actor Chorus itself.
func rollbackActivity(entity workflows.Entity, uuid string, state any, from int64) *store.Rollback {
	var company, project string
	var to int64
	switch s := state.(type) {
	case workflows.IdeaState:
		company, project, to = s.CompanyUUID, s.ProjectUUID, s.Row.Version
	case workflows.ProposalState:
		company, project, to = s.CompanyUUID, s.ProjectUUID, s.Row.Version
	case workflows.TaskState:
		company, project, to = s.CompanyUUID, s.ProjectUUID, s.Row.Version
	}
	return &store.Rollback{Activity: store.Activity{UUID: workflows.DerivedUUID("rolled-back", uuid, fmt.Sprint(from), fmt.Sprint(to)),
		CompanyUUID: company, ProjectUUID: project, TargetType: string(entity), TargetUUID: uuid, ActorType: "system",
		ActorUUID: workflows.SystemActorUUID, Action: "rolled_back"}}
}

// rowsAhead reports whether the row is ahead of the workflow's state with a change the change
// journal lists at the row's version: a change Chorus applied (and an agent was told of) that the
// workflow no longer holds.
func (o *Ops) rowsAhead(ctx context.Context, ob observation, uuid string) (bool, error) {
	if !ob.row.exists || !ob.wf.exists || ob.row.version <= ob.wf.version {
		return false, nil
	}
	ok, err := o.Store.ChangeAppliedAt(ctx, ob.row.changeID, uuid, ob.row.version)
	if err != nil {
		return false, fmt.Errorf("read the change journal of %s: %w", ob.id, err)
	}
	return ok, nil
}

// restartFromRows ends the workflow's run and starts a new one from the rows (the workflow
// follows the rows forward), after checking once more that the run is the one observed and has
// nothing in flight.
func (o *Ops) restartFromRows(ctx context.Context, ob observation, entity workflows.Entity, uuid string) (string, error) {
	again, err := o.describe(ctx, ob.id)
	if err != nil {
		return "", err
	}
	if again.runID != ob.run.runID || len(again.pending) > 0 {
		return "", skipped("%s started a change while it was being repaired", ob.id)
	}
	reason := fmt.Sprintf("chorus ops repair: the rows hold changes this run lost (version %d, change %s; the run holds "+
		"version %d); restarting from the rows", ob.row.version, ob.row.changeID, ob.wf.version)
	if err := o.Flows.Temporal.TerminateWorkflow(ctx, ob.id, ob.run.runID, reason); err != nil {
		return "", fmt.Errorf("terminate %s: %w", ob.id, err)
	}
	did, err := o.restart(ctx, entity, uuid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("the rows hold changes Chorus applied that the workflow no longer held (row version %d, workflow "+
		"version %d, as after a reset): ended the run and %s, so commands agents were told succeeded stay in effect",
		ob.row.version, ob.wf.version, did), nil
}

// deletedByOwnChange returns the change that deleted the entity's row when the row is gone by a
// command of the entity's own workflow that the workflow no longer holds (a reset to before the
// delete), "" otherwise.
func (o *Ops) deletedByOwnChange(ctx context.Context, ob observation, uuid string) (string, error) {
	if ob.row.exists || !ob.wf.exists {
		return "", nil
	}
	change, version, err := o.Store.LastChange(ctx, uuid)
	if err != nil {
		return "", fmt.Errorf("read the change journal of %s: %w", ob.id, err)
	}
	if version > ob.wf.version && strings.HasPrefix(change, ob.id+"#") {
		return change, nil
	}
	return "", nil
}

// endDeleted ends the run of a workflow whose entity its own command deleted: the entity stays
// deleted, as its agent was told.
func (o *Ops) endDeleted(ctx context.Context, ob observation, change string) (string, error) {
	reason := fmt.Sprintf("chorus ops repair: the entity was deleted by %s, which this run lost", change)
	if err := o.Flows.Temporal.TerminateWorkflow(ctx, ob.id, ob.run.runID, reason); err != nil {
		return "", fmt.Errorf("terminate %s: %w", ob.id, err)
	}
	return fmt.Sprintf("the row was deleted by the workflow's own change %s, which the workflow no longer held (as after "+
		"a reset): ended the run, so the entity stays deleted as its agent was told", change), nil
}

// adoptRevoke tells a task's workflow about its proposal's revoke that its row holds and its state
// lacks (the signal never arrived): the revoke committed, and the task follows it.
func (o *Ops) adoptRevoke(ctx context.Context, ob observation) (string, error) {
	_, proposal, err := workflows.ParseWorkflowID(ob.proposalID)
	if err != nil {
		return "", err
	}
	sig := workflows.ProposalRevoked{ProposalUUID: proposal, Row: workflows.RowMark{Version: ob.row.version, ChangeID: ob.row.changeID},
		At: time.Now().UTC()}
	if err := o.Flows.Temporal.SignalWorkflow(ctx, ob.id, "", workflows.SignalProposalRevoked, sig); err != nil {
		return "", fmt.Errorf("signal %s: %w", ob.id, err)
	}
	return fmt.Sprintf("the row holds its proposal's revoke, which the workflow had not taken in: told the workflow, which "+
		"adopts it (closed, version %d)", sig.Row.Version), nil
}

// missingDrafts counts the draft uuids in held (the workflow's) that the row's comma-separated
// list lacks.
func missingDrafts(row string, held []string) int {
	have := strings.Split(row, ",")
	n := 0
	for _, id := range held {
		if !slices.Contains(have, id) {
			n++
		}
	}
	return n
}

// adoptMove tells a workflow about the move of an idea its row holds and its state lacks (the
// signal of the move never arrived): the row is the truth here, since the move committed and
// rewriting the row would undo it for this entity alone.
func (o *Ops) adoptMove(ctx context.Context, ob observation, mover string) (string, error) {
	sig := workflows.EntityMoved{ProjectUUID: ob.row.Values["project_uuid"], Version: ob.row.version, ChangeID: ob.row.changeID,
		Status: ob.row.status}
	name, err := o.Store.ProjectName(ctx, sig.ProjectUUID)
	if err != nil {
		return "", err
	}
	sig.ProjectName = name
	if err := o.Flows.Temporal.SignalWorkflow(ctx, ob.id, "", workflows.SignalEntityMoved, sig); err != nil {
		return "", fmt.Errorf("signal %s: %w", ob.id, err)
	}
	return fmt.Sprintf("the row holds a move by %s that the workflow had not taken in: told the workflow, which adopts "+
		"it (project %s, version %d)", mover, sig.ProjectUUID, sig.Version), nil
}

func (o *Ops) restart(ctx context.Context, entity workflows.Entity, uuid string) (string, error) {
	id := workflows.WorkflowID(entity, uuid)
	if r, err := o.describe(ctx, id); err != nil {
		return "", err
	} else if r.status == "running" {
		return "nothing to do: the workflow runs now", nil
	}
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
		s := workflows.IdeaStateFromRows(i, rounds)
		if s.ProjectName, err = o.Store.ProjectName(ctx, s.ProjectUUID); err != nil {
			return "", err
		}
		state = s
	case workflows.EntityProposal:
		p, err := o.Store.ProposalDrafts(ctx, uuid)
		if err != nil {
			return "", err
		}
		s := workflows.ProposalStateFromRow(p)
		if s.ProjectName, err = o.Store.ProjectName(ctx, s.ProjectUUID); err != nil {
			return "", err
		}
		state = s
	default:
		t, err := o.Store.TaskRow(ctx, uuid)
		if err != nil {
			return "", err
		}
		criteria, err := o.Store.Criteria(ctx, uuid)
		if err != nil {
			return "", err
		}
		s := workflows.NewTaskState(t, criteria)
		if s.ProjectName, err = o.Store.ProjectName(ctx, s.ProjectUUID); err != nil {
			return "", err
		}
		state = s
	}
	run, err := o.Flows.StartFromState(ctx, state)
	if err != nil {
		return "", err
	}
	return "started a new run from the rows (run " + run + ")", nil
}
