package ops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

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
	entity vocab.Entity
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
	return ob.entity == vocab.EntityTask && ob.proposalID != "" && ob.row.exists && ob.wf.exists &&
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
	if !ok || !strings.HasPrefix(id, string(vocab.EntityIdea)+"/") || id == ob.id {
		return "", false
	}
	return id, true
}

func (o *Ops) observe(ctx context.Context, entity vocab.Entity, uuid string) (observation, error) {
	ob := observation{id: vocab.WorkflowID(entity, uuid), entity: entity}
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
func (o *Ops) readRows(ctx context.Context, entity vocab.Entity, uuid string, ob *observation) (side, error) {
	var s side
	var err error
	switch entity {
	case vocab.EntityIdea:
		var i store.Idea
		if i, err = o.Store.IdeaRow(ctx, uuid); err == nil {
			var rounds []store.ElaborationRound
			if rounds, err = o.Store.Elaboration(ctx, uuid); err == nil {
				s, err = render(&i, workflows.IdeaColumns, i.Version, i.ChangeID, string(i.Status))
				for _, r := range rounds {
					s.Part("round "+r.UUID, string(r.Status))
				}
			}
		}
	case vocab.EntityProposal:
		var p store.Proposal
		if p, err = o.Store.ProposalDrafts(ctx, uuid); err == nil {
			s, err = render(&p, workflows.ProposalColumns, p.Version, p.ChangeID, string(p.Status))
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
				ob.proposalID = vocab.ProposalID(*t.ProposalUUID)
			}
			var criteria []store.AcceptanceCriterion
			if criteria, err = o.Store.Criteria(ctx, uuid); err == nil {
				s, err = render(&t, workflows.TaskColumns, t.Version, t.ChangeID, string(t.Status))
				for _, c := range criteria {
					s.Part("criterion "+c.UUID, string(c.Status)+"/"+string(c.DevStatus))
				}
			}
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return side{}, nil
	}
	if err != nil {
		return side{}, fmt.Errorf("read the rows of %s: %w", vocab.WorkflowID(entity, uuid), err)
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
func (o *Ops) queryState(ctx context.Context, entity vocab.Entity, id string) (side, any, error) {
	switch entity {
	case vocab.EntityIdea:
		s, err := query[workflows.IdeaState](ctx, o, id)
		if err != nil {
			return side{}, nil, err
		}
		c, err := s.Checked()
		return side{Checked: c, exists: s.Created && !s.Deleted, version: s.Row.Version, changeID: s.Row.ChangeID,
			status: s.Status}, s, err
	case vocab.EntityProposal:
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

// glance compares an entity's row with what describing its workflow shows: the digest of its
// state the workflow keeps in its memo (workflows.MemoDigest), and its pending work. agree is true
// when the run is running, nothing is pending, and the digest is the row's (workflows.Checked):
// then the workflow's state is the row, as a query would show (the state changes only after its
// row is written, and every change publishes the new digest), and v is that verdict. Otherwise
// (no row, no digest, a different one, work pending, a run not running) it cannot tell, and
// inspect decides. The error is a read or a describe that failed.
func (o *Ops) glance(ctx context.Context, entity vocab.Entity, uuid string) (v verdict, agree bool, err error) {
	ob := observation{id: vocab.WorkflowID(entity, uuid), entity: entity}
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
