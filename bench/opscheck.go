package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// The opscheck phase (docs/write-path.md, "Check and repair"): --ops-entities open tasks seeded
// into the database of a project of their own, each task's workflow then started from its rows
// (the start chorus ops repair makes), then a full chorus ops check pass, an incremental pass
// with nothing moved, a few claims, and an incremental pass that compares what they moved. Each pass is timed once;
// the 1,000,000 figures are the measured ones scaled linearly (a pass lists every running
// workflow and reads every row, so neither grows slower than the entities).

func (b *bencher) opsCheckPhase(ctx context.Context) *phaseResult {
	o := b.o
	res := &phaseResult{Name: fmt.Sprintf("chorus ops check at %d tasks, %d entities compared at once", o.OpsEntities, o.OpsConcurrency)}
	if b.t.st == nil {
		res.Skipped = "needs the database of the stack (run without --endpoint)"
		return res
	}
	tc, err := b.temporal(ctx)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}

	flows := workflows.NewClient(tc, workflows.TaskQueue, b.t.st)
	ids, skipped := b.seedOpsCheck(ctx, flows, res)
	if skipped != "" {
		res.Skipped = skipped
		return res
	}

	x := &ops.Ops{Store: b.t.st, Flows: flows, Concurrency: o.OpsConcurrency}
	pass := func(name string, incremental bool) (ops.Pass, bool) {
		var (
			r   ops.Report
			p   ops.Pass
			err error
		)
		if incremental {
			r, p, err = x.CheckIncremental(ctx)
		} else {
			r, p, err = x.CheckPass(ctx)
		}
		s := summary{N: p.Compared, MeanMs: float64(p.Duration.Milliseconds()), P50Ms: float64(p.Duration.Milliseconds()),
			P99Ms: float64(p.Duration.Milliseconds()), MaxMs: float64(p.Duration.Milliseconds()), WallS: p.Duration.Seconds()}
		if p.Duration > 0 {
			s.Rate = float64(p.Entities) / p.Duration.Seconds()
		}
		if err != nil {
			s.Errors, s.Error = 1, err.Error()
		}
		res.Rows = append(res.Rows, row{Name: name, Concurrency: o.OpsConcurrency, summary: s,
			Note: fmt.Sprintf("compared %d of %d entities (%d queried); %d findings, %d busy", p.Compared, p.Entities, p.Queried,
				len(r.Findings), len(r.Busy))})
		var stages []string
		for _, st := range p.Stages {
			stages = append(stages, fmt.Sprintf("%s %.1f s", st.Name, st.Duration.Seconds()))
		}
		res.Notes = append(res.Notes, fmt.Sprintf("The %s took: %s.", name, strings.Join(stages, ", ")))
		return p, err == nil
	}
	full, okFull := pass("full pass", false)
	idle, okIdle := pass("incremental, nothing moved", true)
	const moved = 20
	for _, id := range ids[:min(moved, len(ids))] {
		if err := b.admin.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": id}, nil); err != nil {
			res.Notes = append(res.Notes, "a claim between the passes failed: "+err.Error())
			break
		}
	}
	after, okAfter := pass(fmt.Sprintf("incremental, %d claimed since", moved), true)
	if okFull && okIdle && okAfter && full.Entities > 0 {
		scale := 1e6 / float64(full.Entities)
		res.Notes = append(res.Notes, fmt.Sprintf("Per s is entities considered per second. Estimated at 1,000,000 entities "+
			"(linear in the entities: every pass lists the running workflows from visibility and reads every row): "+
			"a full pass %s, an incremental one with little moved %s to %s.",
			time.Duration(float64(full.Duration)*scale).Round(time.Second),
			time.Duration(float64(idle.Duration)*scale).Round(time.Second),
			time.Duration(float64(after.Duration)*scale).Round(time.Second)))
	}
	return res
}

// seedOpsCheck seeds the opscheck phase's open tasks: the rows straight into the database, then
// each task's workflow started from its rows, the start chorus ops repair makes (creating
// 100,000 tasks through chorus_create_tasks takes hours on a small machine; what a pass compares
// is the same). It adds the setup's notes to res and returns the tasks' uuids, or why the phase
// is skipped.
func (b *bencher) seedOpsCheck(ctx context.Context, flows *workflows.Client, res *phaseResult) ([]string, string) {
	o := b.o
	author, err := b.seedAuthor(ctx)
	if err != nil {
		return nil, err.Error()
	}
	var project mcp.CreatedProject
	if err := b.admin.Call(ctx, "chorus_admin_create_project", map[string]any{"name": fmt.Sprintf("bench opscheck %s",
		time.Now().UTC().Format(time.RFC3339))}, &project); err != nil {
		return nil, "create the opscheck project: " + err.Error()
	}
	seedStart := time.Now()
	ids, err := b.t.st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: b.t.company.UUID, ProjectUUID: project.UUID,
		CreatedByUUID: author, Count: o.OpsEntities, Open: true})
	if err != nil {
		return nil, "seed the rows: " + err.Error()
	}
	rowsTook := time.Since(seedStart)
	startStart := time.Now()
	var (
		mu      sync.Mutex
		next    int
		fail    error
		started int
	)
	parallel(16, func(int) {
		for {
			mu.Lock()
			if next >= len(ids) || fail != nil {
				mu.Unlock()
				return
			}
			id := ids[next]
			next++
			mu.Unlock()
			err := b.startTaskFromRows(ctx, flows, id)
			mu.Lock()
			if err != nil && fail == nil {
				fail = err
			}
			if err == nil {
				started++
			}
			mu.Unlock()
		}
	})
	if fail != nil {
		return nil, fmt.Sprintf("starting the workflows failed after %d of %d: %v", started, len(ids), fail)
	}
	startsTook := time.Since(startStart)
	drained, err := b.drainWorkflowTasks(ctx, flows, 2*time.Hour)
	if err != nil {
		res.Notes = append(res.Notes, "Setup: the workflows' first workflow tasks were still queued: "+err.Error())
	}
	res.Notes = append(res.Notes, fmt.Sprintf("Setup: %d open tasks (one criterion each) seeded into the database in %.0f s, "+
		"then each task's workflow started from its rows as chorus ops repair starts one, 16 at once, in %.0f s (%.0f a second); "+
		"the worker had run every queued workflow task %.0f s later (the task queue's backlog was empty); none of this is "+
		"measured in the rows. A pass compares every lifecycle entity of the database: run this phase on its own.",
		len(ids), rowsTook.Seconds(), startsTook.Seconds(), float64(len(ids))/startsTook.Seconds(), drained.Seconds()))
	return ids, ""
}

// drainWorkflowTasks waits until the workflow task queue of flows has no backlog (DescribeTaskQueue's
// approximate backlog count is 0 twice in a row), so a pass measures settled workflows rather than
// a worker still running their first tasks. Waiting on a sample of workflows is not enough: new
// tasks are handed straight to a waiting worker while older ones wait in the backlog. It returns
// how long it waited; the error is a describe that failed or timeout passing.
func (b *bencher) drainWorkflowTasks(ctx context.Context, flows *workflows.Client, timeout time.Duration) (time.Duration, error) {
	tc, err := b.temporal(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	empty := 0
	for empty < 2 {
		resp, err := tc.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
			Namespace: b.t.namespace, TaskQueue: &taskqueuepb.TaskQueue{Name: flows.TaskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW, ReportStats: true})
		if err != nil {
			return time.Since(start), fmt.Errorf("describe task queue %s: %w", flows.TaskQueue, err)
		}
		if n := resp.GetStats().GetApproximateBacklogCount(); n > 0 {
			empty = 0
			if time.Since(start) > timeout {
				return time.Since(start), fmt.Errorf("%d workflow tasks still queued after %s", n, timeout)
			}
		} else {
			empty++
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return time.Since(start), nil
}

// startTaskFromRows starts the workflow of a seeded task from its rows, as chorus ops repair
// starts one for a row whose workflow is missing.
func (b *bencher) startTaskFromRows(ctx context.Context, flows *workflows.Client, id string) error {
	t, err := b.t.st.TaskRow(ctx, id)
	if err != nil {
		return err
	}
	criteria, err := b.t.st.Criteria(ctx, id)
	if err != nil {
		return err
	}
	s := workflows.NewTaskState(t, criteria)
	if s.ProjectName, err = b.t.st.ProjectName(ctx, s.ProjectUUID); err != nil {
		return err
	}
	_, err = flows.StartFromState(ctx, s)
	return err
}
