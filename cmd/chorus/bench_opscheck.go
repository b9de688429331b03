package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// The opscheck phase (docs/write-path.md, "Check and repair"): --ops-entities tasks created
// through chorus_create_tasks (rows written and workflows started the normal way, 100 a call,
// two calls at once, each retried with its requestId while it is still in progress), then a full chorus ops check pass, an incremental pass with nothing moved,
// a few claims, and an incremental pass that compares what they moved. Each pass is timed once;
// the 1,000,000 figures are the measured ones scaled linearly (a pass lists every running
// workflow and reads every row, so neither grows slower than the entities).

func (b *bencher) opsCheckPhase(ctx context.Context) *phaseResult {
	o := b.o
	res := &phaseResult{Name: fmt.Sprintf("chorus ops check at %d tasks, %d entities compared at once", o.opsEntities, o.opsConcurrency)}
	if b.t.st == nil {
		res.Skipped = "needs the database of the stack (run without --endpoint)"
		return res
	}
	tc, err := b.temporal(ctx)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}

	// Seed: chorus_create_tasks, 100 tasks a call, two calls at once.
	seedStart := time.Now()
	calls := (o.opsEntities + 99) / 100
	var (
		mu   sync.Mutex
		ids  []string
		next int
		fail error
	)
	parallel(min(2, calls), func(int) {
		for {
			mu.Lock()
			if next >= calls || fail != nil {
				mu.Unlock()
				return
			}
			n := min(100, o.opsEntities-next*100)
			next++
			mu.Unlock()
			more, err := b.seedTasks(ctx, n)
			mu.Lock()
			ids = append(ids, more...)
			if err != nil && fail == nil {
				fail = err
			}
			mu.Unlock()
		}
	})
	if fail != nil {
		res.Skipped = fmt.Sprintf("seeding failed after %d tasks: %v", len(ids), fail)
		return res
	}
	seeded := time.Since(seedStart)
	if _, err := b.settle(ctx, ids[max(0, len(ids)-100):], 30*time.Minute); err != nil {
		res.Notes = append(res.Notes, "Setup: the last workflows had not started: "+err.Error())
	}
	res.Notes = append(res.Notes, fmt.Sprintf("Setup: %d tasks created through chorus_create_tasks in %.0f s (%.0f tasks/s), "+
		"their workflows started by the same calls; not measured in the rows.", len(ids), seeded.Seconds(),
		float64(len(ids))/seeded.Seconds()))

	x := &ops.Ops{Store: b.t.st, Flows: workflows.NewClient(tc, queueOrDefault(""), b.t.st), Concurrency: o.opsConcurrency}
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
		res.Rows = append(res.Rows, row{Name: name, Concurrency: o.opsConcurrency, summary: s,
			Note: fmt.Sprintf("compared %d of %d entities; %d findings, %d busy", p.Compared, p.Entities, len(r.Findings), len(r.Busy))})
		return p, err == nil
	}
	full, okFull := pass("full pass", false)
	idle, okIdle := pass("incremental, nothing moved", true)
	const moved = 20
	for _, id := range ids[:min(moved, len(ids))] {
		if err := b.admin.call(ctx, "chorus_claim_task", map[string]any{"taskUuid": id}, nil); err != nil {
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

// seedTasks creates n tasks in one chorus_create_tasks call with a requestId, retrying it with
// the same requestId while Chorus answers that it is still in progress (a loaded machine), so
// each batch is created once.
func (b *bencher) seedTasks(ctx context.Context, n int) ([]string, error) {
	tasks := make([]map[string]any, n)
	for i := range tasks {
		tasks[i] = map[string]any{"title": fmt.Sprintf("ops %d", i+1), "acceptanceCriteriaItems": criterion("it works")}
	}
	args := map[string]any{"projectUuid": b.project, "tasks": tasks, "requestId": store.NewUUID()}
	for attempt := 1; ; attempt++ {
		var out mcp.CreatedTasks
		err := b.admin.call(ctx, "chorus_create_tasks", args, &out)
		if err != nil && strings.Contains(err.Error(), "Still in progress") && attempt < 30 {
			continue
		}
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(out.Tasks))
		for i, t := range out.Tasks {
			ids[i] = t.UUID
		}
		return ids, nil
	}
}
