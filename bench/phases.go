package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
)

// ---- floors ----

func (b *bencher) floorsPhase(ctx context.Context) *phaseResult {
	res := &phaseResult{Name: "Floors: a bare workflow on the same Temporal server"}
	tc, err := b.temporal(ctx)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	w, err := startFloorWorker(tc)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	defer w.Stop()
	f := &floorBench{tc: tc}
	defer f.close(context.WithoutCancel(ctx))

	n, c, per := b.o.FloorOps, b.o.Agents, b.o.FloorPer
	add := func(name string, conc int, r *recorder, wall time.Duration) {
		s := r.summary(wall)
		b.floors[name] = s
		res.Rows = append(res.Rows, row{Name: name, Concurrency: conc, summary: s})
	}
	for _, u := range []struct{ name, update string }{{floorLocal, floorUpdateLocal}, {floorRegular, floorUpdateRemote}} {
		r, err := f.sequential(ctx, u.update, n)
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
			continue
		}
		add(u.name, 1, r, 0)
	}
	r, wall := f.starts(ctx, 1, n)
	add(floorStart, 1, r, wall)
	for _, u := range []struct{ name, update string }{{floorLocalN, floorUpdateLocal}, {floorRegularN, floorUpdateRemote}} {
		r, wall, err := f.concurrent(ctx, u.update, c, per)
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
			continue
		}
		add(u.name, c, r, wall)
	}
	r, wall = f.starts(ctx, c, max(per/2, 1))
	add(floorStartN, c, r, wall)
	res.Notes = append(res.Notes, "Each update waits for completion (WaitForStage Completed). Update-with-start starts a new "+
		"workflow whose update runs one no-op activity, as Chorus's creates do. Concurrent rows: one workflow per client, "+
		"the throughput is successful calls over the wall time.")
	return res
}

// floorP50 compares a row's p50 with named floors' p50.
func (b *bencher) floorP50(s summary, floors ...string) []comparison {
	return b.against(" p50", s.P50Ms, func(f summary) float64 { return f.P50Ms }, floors)
}

// floorP99 compares a row's p99 with named floors' p99.
func (b *bencher) floorP99(s summary, floors ...string) []comparison {
	return b.against(" p99", s.P99Ms, func(f summary) float64 { return f.P99Ms }, floors)
}

// floorRate compares a row's throughput with named floors' throughput.
func (b *bencher) floorRate(rate float64, floors ...string) []comparison {
	return b.against(" /s", rate, func(f summary) float64 { return f.Rate }, floors)
}

// against compares v with the figure of each named floor that was measured, labelled with the
// floor's name and suffix; floors not measured in this run are left out.
func (b *bencher) against(suffix string, v float64, figure func(summary) float64, floors []string) []comparison {
	var out []comparison
	for _, f := range floors {
		if fl, ok := b.floors[f]; ok {
			out = append(out, comparison{Floor: f + suffix, Ratio: ratio(v, figure(fl))})
		}
	}
	return out
}

// ---- helpers over the tools ----

func criterion(desc string) []map[string]any { return []map[string]any{{"description": desc}} }

// createTasks creates n quick tasks in project through one call and returns their uuids.
func (b *bencher) createTasks(ctx context.Context, a *mcpclient.Agent, project string, n int, label string) ([]string, error) {
	tasks := make([]map[string]any, n)
	for i := range tasks {
		tasks[i] = map[string]any{"title": fmt.Sprintf("%s %d", label, i+1), "acceptanceCriteriaItems": criterion("it works")}
	}
	var out mcp.CreatedTasks
	if err := a.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks}, &out); err != nil {
		return nil, err
	}
	ids := make([]string, len(out.Tasks))
	for i, t := range out.Tasks {
		ids[i] = t.UUID
	}
	if len(ids) != n {
		return nil, fmt.Errorf("chorus_create_tasks returned %d tasks for %d", len(ids), n)
	}
	return ids, nil
}

// createMany creates n tasks in calls of up to 100 (setup, not measured).
func (b *bencher) createMany(ctx context.Context, n int, label string) ([]string, error) {
	var ids []string
	for len(ids) < n {
		more, err := b.createTasks(ctx, b.admin, b.project, min(100, n-len(ids)), label)
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	return ids, nil
}

// settleNote waits for the setup's task workflows (see settle) and says how long it took.
func (b *bencher) settleNote(ctx context.Context, ids []string) string {
	took, err := b.settle(ctx, ids, 2*time.Minute)
	if err != nil {
		return "Setup: did not wait for the task workflows to start (" + err.Error() + "); early calls may include that backlog."
	}
	return fmt.Sprintf("Setup: %d tasks created through chorus_create_tasks; their workflows had all run their first "+
		"workflow task %.1f s after the last create returned (not measured in the rows).", len(ids), took.Seconds())
}

// ---- single agent ----

func (b *bencher) singlePhase(ctx context.Context) *phaseResult {
	res := &phaseResult{Name: "Single agent, one call at a time"}
	dev := b.admin
	if devs, err := b.developers(ctx, 1); err == nil {
		dev = devs[0]
	} else {
		res.Notes = append(res.Notes, "The admin key also plays the developer: "+err.Error())
	}
	tools := []string{"chorus_create_tasks", "chorus_claim_task", "chorus_update_task", "chorus_report_work",
		"chorus_submit_for_verify", "chorus_mark_acceptance_criteria", "chorus_admin_verify_task",
		"chorus_pm_create_idea", "chorus_claim_idea", "chorus_get_task"}
	recs := map[string]*recorder{}
	for _, t := range tools {
		recs[t] = &recorder{}
	}
	round := func(i int, measure bool) error {
		timed := func(tool string, f func() error) error {
			if !measure {
				return f()
			}
			return recs[tool].time(f)
		}
		var ids []string
		if err := timed("chorus_create_tasks", func() (err error) {
			ids, err = b.createTasks(ctx, b.admin, b.project, 1, fmt.Sprintf("single %d", i))
			return err
		}); err != nil {
			return err
		}
		task := ids[0]
		var view mcp.TaskView
		if err := timed("chorus_claim_task", func() error {
			return dev.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": task}, &view)
		}); err != nil {
			return err
		}
		if len(view.AcceptanceCriteriaItems) == 0 {
			return errors.New("the claimed task shows no acceptance criterion")
		}
		steps := []struct {
			tool string
			a    *mcpclient.Agent
			args map[string]any
		}{
			{"chorus_update_task", dev, map[string]any{"taskUuid": task, "status": "in_progress"}},
			{"chorus_report_work", dev, map[string]any{"taskUuid": task, "report": "did the work"}},
			{"chorus_submit_for_verify", dev, map[string]any{"taskUuid": task}},
			{"chorus_mark_acceptance_criteria", b.admin, map[string]any{"taskUuid": task,
				"criteria": []map[string]any{{"uuid": view.AcceptanceCriteriaItems[0].UUID, "status": "passed"}}}},
			{"chorus_admin_verify_task", b.admin, map[string]any{"taskUuid": task}},
			{"chorus_get_task", dev, map[string]any{"taskUuid": task}},
		}
		for _, s := range steps {
			if err := timed(s.tool, func() error { return s.a.Call(ctx, s.tool, s.args, nil) }); err != nil {
				return err
			}
		}
		var idea mcp.CreatedIdea
		if err := timed("chorus_pm_create_idea", func() error {
			return b.admin.Call(ctx, "chorus_pm_create_idea", map[string]any{"projectUuid": b.project,
				"title": fmt.Sprintf("bench idea %d", i)}, &idea)
		}); err != nil {
			return err
		}
		return timed("chorus_claim_idea", func() error {
			return b.admin.Call(ctx, "chorus_claim_idea", map[string]any{"ideaUuid": idea.UUID}, nil)
		})
	}
	if err := round(0, false); err != nil { // warm-up, not measured
		res.Skipped = "the warm-up round failed: " + err.Error()
		return res
	}
	for i := 1; i <= b.o.Rounds; i++ {
		if err := round(i, true); err != nil && ctx.Err() != nil {
			break
		}
	}
	for _, t := range tools {
		s := recs[t].summary(0)
		s.Rate = ratePerCall(s)
		r := row{Name: t, Concurrency: 1, summary: s}
		switch t {
		case "chorus_create_tasks", "chorus_pm_create_idea":
			r.VsFloor = b.floorP50(s, floorStart)
		case "chorus_get_task":
		default:
			r.VsFloor = b.floorP50(s, floorLocal, floorRegular)
		}
		res.Rows = append(res.Rows, r)
	}
	res.Notes = append(res.Notes, "Calls in sequence, so per s is 1000/mean. Lifecycle tools are compared with the "+
		"update floors (a Chorus command runs a guard read as a local activity and its write as a regular one); "+
		"creates with update-with-start. chorus_create_tasks here creates one task.")
	return res
}

// ratePerCall is the rate of back-to-back calls: one over the mean latency.
func ratePerCall(s summary) float64 {
	if s.MeanMs <= 0 {
		return 0
	}
	return 1000 / s.MeanMs
}

// ---- N agents ----

func (b *bencher) agentsPhase(ctx context.Context) *phaseResult {
	n, per := b.o.Agents, b.o.TasksPer
	res := &phaseResult{Name: fmt.Sprintf("%d agents at once, %d task(s) each: claim, in_progress, submit", n, per)}
	devs, err := b.developers(ctx, n)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	ids, err := b.createMany(ctx, n*per, "agents")
	if err != nil {
		res.Skipped = "creating the tasks failed: " + err.Error()
		return res
	}
	res.Notes = append(res.Notes, b.settleNote(ctx, ids))
	tools := []string{"chorus_claim_task", "chorus_update_task", "chorus_submit_for_verify"}
	recs := map[string]*recorder{}
	all := &recorder{}
	for _, t := range tools {
		recs[t] = &recorder{}
	}
	wall := parallel(n, func(i int) {
		for k := range per {
			task := ids[i*per+k]
			for _, t := range tools {
				args := map[string]any{"taskUuid": task}
				if t == "chorus_update_task" {
					args["status"] = "in_progress"
				}
				start := time.Now()
				err := devs[i].Call(ctx, t, args, nil)
				recs[t].observe(start, err)
				all.observe(start, err)
				if err != nil {
					break // the next steps of this task would only fail too
				}
			}
		}
	})
	for _, t := range tools {
		s := recs[t].summary(wall)
		res.Rows = append(res.Rows, row{Name: t, Concurrency: n, summary: s,
			VsFloor: append(b.floorP50(s, floorRegularN), b.floorP99(s, floorRegularN)...)})
	}
	s := all.summary(wall)
	res.Rows = append(res.Rows, row{Name: "all calls", Concurrency: n, summary: s,
		VsFloor: b.floorRate(s.Rate, floorRegularN, floorLocalN)})
	res.Notes = append(res.Notes, fmt.Sprintf("Wall time %.1f s. Per s is successful calls over the phase's wall time; "+
		"\"all calls\" is compared with the bare update throughput at the same concurrency.", wall.Seconds()))
	return res
}

// ---- race ----

func (b *bencher) racePhase(ctx context.Context) *phaseResult {
	n := b.o.Racers
	res := &phaseResult{Name: fmt.Sprintf("%d agents claim the same task at once", n)}
	devs, err := b.developers(ctx, n)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	ids, err := b.createMany(ctx, b.o.RaceRounds, "race")
	if err != nil {
		res.Skipped = "creating the tasks failed: " + err.Error()
		return res
	}
	res.Notes = append(res.Notes, b.settleNote(ctx, ids))
	won, refused := &recorder{}, &recorder{}
	other := &recorder{}
	var (
		mu       sync.Mutex
		refusal  string
		badRound []string
	)
	for round, task := range ids {
		var winners int
		gate := make(chan struct{})
		var ready sync.WaitGroup
		ready.Add(n)
		done := make(chan struct{})
		go func() {
			parallel(n, func(i int) {
				ready.Done()
				<-gate
				start := time.Now()
				err := devs[i].Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
				var te *mcpclient.ToolError
				switch {
				case err == nil:
					won.observe(start, nil)
					mu.Lock()
					winners++
					mu.Unlock()
				case errors.As(err, &te):
					refused.observe(start, nil)
					mu.Lock()
					if refusal == "" {
						refusal = te.Text
					}
					mu.Unlock()
				default:
					other.observe(start, err)
				}
			})
			close(done)
		}()
		ready.Wait()
		close(gate)
		<-done
		if winners != 1 {
			badRound = append(badRound, fmt.Sprintf("round %d had %d winners", round+1, winners))
		}
	}
	ws, rs, xs := won.summary(0), refused.summary(0), other.summary(0)
	res.Rows = append(res.Rows,
		row{Name: "claim won", Concurrency: n, summary: ws, VsFloor: b.floorP50(ws, floorRegular)},
		row{Name: "claim refused", Concurrency: n, summary: rs, VsFloor: b.floorP50(rs, floorLocal)})
	if xs.Errors > 0 {
		res.Rows = append(res.Rows, row{Name: "claim failed otherwise", Concurrency: n, summary: xs})
	}
	verdict := fmt.Sprintf("Exactly one winner in each of %d rounds: %d won, %d refused, %d other errors.",
		len(ids), ws.N, rs.N, xs.Errors)
	if len(badRound) > 0 {
		verdict = "NOT exactly one winner per round: " + strings.Join(badRound, "; ") + "."
	}
	res.Notes = append(res.Notes, verdict, "The refusal the losers read: "+refusal)
	return res
}

// ---- reads ----

func (b *bencher) readsPhase(ctx context.Context, sizes []int) *phaseResult {
	res := &phaseResult{Name: "Reads on a large project (rows seeded straight into the database)"}
	if b.t.st == nil {
		res.Skipped = "needs the app database to seed tasks (pass --database-url with --endpoint)"
		return res
	}
	author, err := b.seedAuthor(ctx)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	reader := b.admin
	for _, size := range sizes {
		var project mcp.CreatedProject
		if err := b.admin.Call(ctx, "chorus_admin_create_project", map[string]any{"name": fmt.Sprintf("bench reads %d %s", size,
			time.Now().UTC().Format(time.RFC3339))}, &project); err != nil {
			res.Notes = append(res.Notes, "create the read project: "+err.Error())
			continue
		}
		start := time.Now()
		ids, err := b.t.st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: b.t.company.UUID, ProjectUUID: project.UUID,
			CreatedByUUID: author, Count: size, ChainLen: 10})
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
			continue
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%d tasks, one criterion each and about 2.8 dependency edges each, seeded in %.1f s.",
			size, time.Since(start).Seconds()))
		deep := max(size/20-1, 1) // the last full page of 20
		calls := []struct {
			name string
			tool string
			args func() map[string]any
		}{
			{"chorus_get_task", "chorus_get_task", func() map[string]any { return map[string]any{"taskUuid": ids[rand.IntN(len(ids))]} }},
			{"chorus_list_tasks page 1", "chorus_list_tasks", func() map[string]any { return map[string]any{"projectUuid": project.UUID} }},
			{fmt.Sprintf("chorus_list_tasks page %d", deep), "chorus_list_tasks", func() map[string]any {
				return map[string]any{"projectUuid": project.UUID, "page": deep}
			}},
			{"chorus_list_tasks status=open page 1", "chorus_list_tasks", func() map[string]any {
				return map[string]any{"projectUuid": project.UUID, "status": "open"}
			}},
			{"chorus_get_unblocked_tasks page 1", "chorus_get_unblocked_tasks", func() map[string]any {
				return map[string]any{"projectUuid": project.UUID}
			}},
			{"chorus_get_unblocked_tasks page 10", "chorus_get_unblocked_tasks", func() map[string]any {
				return map[string]any{"projectUuid": project.UUID, "page": 10}
			}},
			{"chorus_get_available_tasks", "chorus_get_available_tasks", func() map[string]any {
				return map[string]any{"projectUuid": project.UUID}
			}},
		}
		for _, c := range calls {
			_ = reader.Call(ctx, c.tool, c.args(), nil) // warm up
			r := &recorder{}
			for range b.o.ReadCalls {
				_ = r.time(func() error { return reader.Call(ctx, c.tool, c.args(), nil) })
			}
			s := r.summary(0)
			s.Rate = ratePerCall(s)
			res.Rows = append(res.Rows, row{Name: fmt.Sprintf("%s @%d", c.name, size), Concurrency: 1, summary: s})
		}
	}
	res.Notes = append(res.Notes, "The seeded rows have no workflow behind them (store.SeedReadTasks): they sit in a "+
		"project of their own that no command touches, and every read tool answers from the database alone, so the "+
		"reads measure what they would on tasks created through workflows; chorus ops check would report these rows as "+
		"lacking workflows, which is why the bench seeds only into its own projects.")
	return res
}

// seedAuthor is the agent the seeded tasks name as their creator.
func (b *bencher) seedAuthor(ctx context.Context) (string, error) {
	if b.t.adminUUID != "" {
		return b.t.adminUUID, nil
	}
	a, _, err := b.t.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: b.t.company.UUID, Name: "bench seeder",
		Roles: []string{}, OwnerUUID: &b.t.owner.UUID})
	if err != nil {
		return "", err
	}
	return a.UUID, nil
}

// ---- bulk ----

func (b *bencher) bulkPhase(ctx context.Context) *phaseResult {
	size := b.o.BulkSize
	res := &phaseResult{Name: fmt.Sprintf("Bulk creation: chorus_create_tasks with %d tasks per call", size)}
	_, _ = b.createTasks(ctx, b.admin, b.project, size, "bulk warm-up")
	r := &recorder{}
	for i := range b.o.BulkBatches {
		_ = r.time(func() error {
			_, err := b.createTasks(ctx, b.admin, b.project, size, fmt.Sprintf("bulk %d", i+1))
			return err
		})
	}
	s := r.summary(0)
	s.Rate = ratePerCall(s)
	res.Rows = append(res.Rows, row{Name: "chorus_create_tasks call", Concurrency: 1, summary: s, VsFloor: b.floorP50(s, floorStart)})
	tasks := s
	tasks.Rate = s.Rate * float64(size)
	res.Rows = append(res.Rows, row{Name: "tasks created", Note: "per s = tasks/s", Concurrency: 1, summary: tasks,
		VsFloor: b.floorRate(tasks.Rate, floorStart, floorStartN)})
	res.Notes = append(res.Notes, fmt.Sprintf("Calls in sequence. Each call writes its %d tasks in one transaction and starts "+
		"a workflow per task; tasks/s is compared with bare update-with-start throughput, one client and concurrent.", size))
	return res
}
