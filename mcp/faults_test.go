package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// The fault suite (docs/write-path.md): every kind of write under the faults production
// meets, on SQLite and PostgreSQL. Each scenario ends with chorus ops check clean, with each
// command applied exactly once, and with retries under the same requestId getting the first
// outcome.

// writeKinds are the activities that write, one per kind of write.
var writeKinds = []string{"ApplyIdeaChange", "ApplyProposalChange", "ApplyApproval", "StartWorkflows", "ApplyTaskChange",
	"RevokeCascade", "CreateTaskBatchAndStart"}

// world is what everyWrite made.
type world struct {
	project, idea, proposal string
	task                    string   // a task of the approval, claimed by the developer
	batch                   []string // the tasks of a chorus_create_tasks batch
}

// everyWrite drives a lifecycle that performs every kind of write at least once, each call
// with its own requestId, and checks that each took effect exactly once.
func everyWrite(t *testing.T, e *env) world {
	t.Helper()
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	var w world
	w.project = createProject(t, admin, "Apollo")
	w.idea = elaboratedIdea(t, pm, admin, w.project, "Idea")
	w.proposal, _ = fullProposal(t, pm, w.project, w.idea)
	ok(t, admin, "chorus_pm_assign_idea", map[string]any{"ideaUuid": w.idea, "assigneeType": "user", "assigneeUuid": e.owner,
		"requestId": "assign-idea"}, nil)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": w.proposal, "requestId": "submit"}, nil)
	var pv ProposalView
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": w.proposal, "requestId": "approve"}, &pv)
	require.Len(t, pv.MaterializedTasks, 3)
	w.task = pv.MaterializedTasks[0].TaskUUID
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": w.task, "requestId": "claim"}, nil)
	ok(t, dev, "chorus_update_task", map[string]any{"taskUuid": w.task, "status": "in_progress", "requestId": "start"}, nil)
	var batch CreatedTasks
	ok(t, dev, "chorus_create_tasks", map[string]any{"projectUuid": w.project, "requestId": "batch", "tasks": []map[string]any{
		{"title": "B0", "draftUuid": "b0", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "B1", "dependsOnDraftUuids": []string{"b0"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &batch)
	require.Empty(t, batch.Warnings)
	for _, b := range batch.Tasks {
		w.batch = append(w.batch, b.UUID)
	}
	var rv Revoked
	ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": w.proposal, "requestId": "revoke"}, &rv)
	require.Len(t, rv.ClosedTasks, 3)

	// Exactly once: one row per entity and one audit row per command.
	ctx := context.Background()
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, e.st.DB.NewRaw("SELECT count(*) FROM "+q, args...).Scan(ctx, &n))
		return n
	}
	require.Equal(t, 1, count("ideas WHERE uuid = ?", w.idea))
	require.Equal(t, 1, count("elaboration_rounds WHERE idea_uuid = ?", w.idea))
	require.Equal(t, 3, count("tasks WHERE proposal_uuid = ?", w.proposal))
	require.Equal(t, 2, count("tasks WHERE proposal_uuid IS NULL AND project_uuid = ?", w.project))
	for target, actions := range map[string][]string{
		w.idea:     {"elaboration_started", "elaboration_answered", "elaboration_resolved"},
		w.proposal: {"approved", "revoked"},
		w.task:     {"assigned", "status_changed"},
	} {
		for _, a := range actions {
			require.Equal(t, 1, activityCount(t, e.st, target, a), "%s %s once", target, a)
		}
	}
	require.Equal(t, 2, activityCount(t, e.st, w.idea, "assigned"), "claimed once, assigned once")
	return w
}

// A write commits and then reports failure (the acknowledgement is lost): the retry finds its
// own change applied and writes nothing more; the workflow moves on as if the first report had
// arrived.
func TestWriteCommittedThenReportedFailed(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true})
			for _, k := range writeKinds {
				e.faults.FailAfterCommit(k, 1)
			}
			everyWrite(t, e)
			for _, k := range writeKinds {
				require.Equal(t, 1, e.faults.Injected(k), "%s had its acknowledgement lost once", k)
			}
			e.requireAgreement()
		})
	}
}

// The worker dies between a write's commit and its completion, at each kind of write: the
// server retries the activity on the next worker once its attempt times out, the retry finds
// the change applied, and the command completes once.
func TestWorkerKilledBetweenCommitAndCompletion(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		for _, kind := range writeKinds {
			t.Run(dialect+"/"+kind, func(t *testing.T) {
				t.Parallel()
				e := startEnv(t, dialect, envOptions{flows: true, noWorker: true})
				var mu sync.Mutex
				current := e.startWorker()
				e.faults.OnceAfter(kind, func() {
					mu.Lock()
					defer mu.Unlock()
					current.Stop() // the "kill": this attempt's result is never reported
					current = e.startWorker()
				})
				everyWrite(t, e)
				require.Equal(t, 1, e.faults.Injected(kind), "the worker died after a %s commit", kind)
				e.requireAgreement()
			})
		}
	}
}

// The database is unavailable for 60 s in the middle of a command: the command waits instead
// of failing; the agent's call answers "still in progress" at its deadline; calls that arrive
// meanwhile are refused as retryable; once the database is back, a retry with the same requestId
// gets the outcome within seconds, and the command took effect once.
func TestDatabaseOutageOfAMinute(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			e := startEnv(t, dialect, envOptions{flows: true, faultyDB: true, callTimeout: 15 * time.Second})
			admin := e.client(e.adminKey)
			dev := e.client(e.agent("Dev", perm.DeveloperAgent))
			project := createProject(t, admin, "Apollo")
			task := createTask(t, admin, project)
			ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)

			// The outage begins as the command reads its guard (the dependencies).
			up := make(chan struct{})
			e.faults.OnceBefore("Blockers", func() {
				e.outage.Down()
				go func() {
					time.Sleep(60 * time.Second)
					e.outage.Up()
					close(up)
				}()
			})
			args := map[string]any{"taskUuid": task, "status": "in_progress", "requestId": "start"}
			msg := fails(t, dev, "chorus_update_task", args)
			require.True(t, strings.HasPrefix(msg, "Still in progress"), msg)

			// Meanwhile: refused as retryable, HTTP 503 with a JSON-RPC error, never 500.
			resp, body := e.rawPost("Bearer "+e.adminKey, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
			require.Equal(t, "5", resp.Header.Get("Retry-After"))
			require.Contains(t, body, "cannot reach its database")

			<-up
			var v TaskView
			requireEventually2(t, 30*time.Second, func() bool {
				res := call(t, dev, "chorus_update_task", args)
				if res.IsError {
					require.True(t, strings.HasPrefix(text(res), "Still in progress"), text(res))
					return false
				}
				v = decode[TaskView](t, res)
				return true
			}, "the retry gets the command's outcome")
			require.Equal(t, "in_progress", v.Status)
			require.Equal(t, 1, activityCount(t, e.st, task, "status_changed"), "applied once")
			e.requireAgreement()
		})
	}
}

// The Temporal server restarts while calls are in flight: each call completes, or answers
// "still in progress" and its retry with the same requestId gets the outcome; each took effect
// once.
func TestTemporalRestartDuringCalls(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			rs := wftest.Restartable(t)
			e := startEnv(t, dialect, envOptions{flows: true, temporal: rs.Client(), callTimeout: 20 * time.Second})
			admin := e.client(e.adminKey)
			dev := e.client(e.agent("Dev", perm.DeveloperAgent))
			project := createProject(t, admin, "Apollo")
			var created CreatedTasks
			tasks := []map[string]any{}
			for i := range 4 {
				tasks = append(tasks, map[string]any{"title": fmt.Sprintf("T%d", i), "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}})
			}
			ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks}, &created)

			var wg sync.WaitGroup
			for i, tk := range created.Tasks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = dev.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "chorus_claim_task",
						Arguments: map[string]any{"taskUuid": tk.UUID, "requestId": fmt.Sprintf("claim-%d", i)}})
				}()
			}
			require.NoError(t, rs.Restart(context.Background()))
			wg.Wait()
			for i, tk := range created.Tasks {
				var v TaskView
				requireEventually2(t, time.Minute, func() bool {
					res := call(t, dev, "chorus_claim_task", map[string]any{"taskUuid": tk.UUID, "requestId": fmt.Sprintf("claim-%d", i)})
					if res.IsError {
						require.True(t, strings.HasPrefix(text(res), "Still in progress"), text(res))
						return false
					}
					v = decode[TaskView](t, res)
					return true
				}, "the claim of %s completes", tk.UUID)
				require.Equal(t, "assigned", v.Status)
				require.Equal(t, 1, activityCount(t, e.st, tk.UUID, "assigned"), "claimed once")
			}
			e.requireAgreement()
		})
	}
}

// Creates and updates retried after a timeout, with the same requestId: the first attempt's
// entity or change is found, never made twice.
func TestRetriesAfterTimeouts(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true, noWorker: true, callTimeout: 3 * time.Second})
			admin := e.client(e.adminKey)
			project := createProject(t, admin, "Apollo")
			stillInProgress := func(tool string, args map[string]any) {
				t.Helper()
				msg := fails(t, admin, tool, args)
				require.True(t, strings.HasPrefix(msg, "Still in progress: Chorus has not finished this call yet"), msg)
			}
			// No worker runs: every lifecycle call outlives its deadline.
			createIdea := map[string]any{"projectUuid": project, "title": "Idea", "requestId": "idea-1"}
			stillInProgress("chorus_pm_create_idea", createIdea)
			createTasks := map[string]any{"projectUuid": project, "requestId": "tasks-1", "tasks": []map[string]any{
				{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}
			stillInProgress("chorus_create_tasks", createTasks)

			w := e.startWorker()
			var idea CreatedIdea
			ok(t, admin, "chorus_pm_create_idea", createIdea, &idea)
			var tasks CreatedTasks
			ok(t, admin, "chorus_create_tasks", createTasks, &tasks)
			claim := map[string]any{"ideaUuid": idea.UUID, "requestId": "claim-1"}
			w.Stop()
			stillInProgress("chorus_claim_idea", claim)
			e.startWorker()
			var iv IdeaView
			ok(t, admin, "chorus_claim_idea", claim, &iv)
			require.Equal(t, "elaborating", iv.Status)

			var ideas IdeaList
			ok(t, admin, "chorus_get_ideas", map[string]any{"projectUuid": project}, &ideas)
			require.Equal(t, 1, ideas.Total, "one idea, however often its create was retried")
			var list TaskList
			ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
			require.Equal(t, 1, list.Total)
			require.Equal(t, 1, activityCount(t, e.st, idea.UUID, "assigned"))
			e.requireAgreement()
		})
	}
}

// A refusal does not pin its requestId; once the state changes, the same call runs.
func TestRefusalDoesNotPinTheRequestID(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	dev1 := e.client(e.agent("Dev1", perm.DeveloperAgent))
	dev2 := e.client(e.agent("Dev2", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T0", "draftUuid": "t0", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "T1", "dependsOnDraftUuids": []string{"t0"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	t0, t1 := created.Tasks[0].UUID, created.Tasks[1].UUID
	ok(t, dev1, "chorus_claim_task", map[string]any{"taskUuid": t1}, nil)
	args := map[string]any{"taskUuid": t1, "status": "in_progress", "requestId": "r-1"}
	require.Contains(t, fails(t, dev1, "chorus_update_task", args), "1 dependency not resolved")

	ok(t, dev2, "chorus_claim_task", map[string]any{"taskUuid": t0}, nil)
	work(t, dev2, t0)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": t0}, &v)
	markAll(t, admin, t0, v, "passed")
	ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": t0}, nil)

	ok(t, dev1, "chorus_update_task", args, &v)
	require.Equal(t, "in_progress", v.Status, "the blocker is gone, so the same requestId now runs")
	ok(t, dev1, "chorus_update_task", args, &v)
	require.Equal(t, 1, activityCount(t, e.st, t1, "status_changed"), "and its retry returns the result, once")
	e.requireAgreement()
}

// A requestId names one call: reused for another tool it is refused, never answered with the
// first tool's result.
func TestRequestIDBelongsToOneTool(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	idea := createIdea(t, admin, project, "Idea", nil)
	ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea, "requestId": "same"}, nil)
	require.Equal(t, `Input validation error: requestId "same" was already used for a different call (chorus_claim_idea); use a new requestId for new work`,
		fails(t, admin, "chorus_release_idea", map[string]any{"ideaUuid": idea, "requestId": "same"}))
	var iv IdeaView
	ok(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
	require.Equal(t, "elaborating", iv.Status, "the release did not run")
	e.requireAgreement()
}

// A chorus_create_tasks batch whose workflow failed (and wrote nothing) can be retried under
// the same requestId.
func TestFailedBatchCanBeRetried(t *testing.T) {
	e := newFlowEnvNoWorker(t, "sqlite")
	failing := workflowsWorkerWithActivity(t, e, "CreateTaskBatchAndStart",
		func(context.Context, activities.TaskBatchStart) ([]string, error) {
			return nil, temporal.NewNonRetryableApplicationError("the batch cannot be written", "Broken", nil)
		})
	require.NoError(t, failing.Start())
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	args := map[string]any{"projectUuid": project, "requestId": "batch-1", "tasks": []map[string]any{
		{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}
	require.Contains(t, fails(t, admin, "chorus_create_tasks", args), "internal error")
	failing.Stop()
	e.startWorker()
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", args, &created)
	require.Len(t, created.Tasks, 1)
	var list TaskList
	ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
	require.Equal(t, 1, list.Total)
	e.requireAgreement()
}

// workflowsWorkerWithActivity is a worker of the env's queue with the real workflows and
// activities, except the activity registered as name, which is fn.
func workflowsWorkerWithActivity(t *testing.T, e *env, name string, fn any) worker.Worker {
	t.Helper()
	acts := activities.New(e.st, e.tc)
	w := worker.New(e.tc, e.queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.IdeaWorkflow, workflow.RegisterOptions{Name: workflows.IdeaWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.ProposalWorkflow, workflow.RegisterOptions{Name: workflows.ProposalWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.TaskWorkflow, workflow.RegisterOptions{Name: workflows.TaskWorkflowName})
	w.RegisterWorkflowWithOptions(workflows.CreateTasksWorkflow, workflow.RegisterOptions{Name: workflows.CreateTasksWorkflowName})
	v := reflect.ValueOf(acts)
	for i := range v.NumMethod() {
		if n := v.Type().Method(i).Name; n != name {
			w.RegisterActivityWithOptions(v.Method(i).Interface(), activity.RegisterOptions{Name: n})
		}
	}
	w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	return w
}

// A chorus_create_tasks batch whose write commits but whose workflow starts then fail (Temporal
// refuses them, say) is retried: the retry finds the batch written, writes nothing, and starts
// the workflows. The call answers once, with each task created once and running its workflow.
func TestBatchStartsFailAfterItsWriteCommitted(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) { batchStartsFailAfterItsWriteCommitted(t, newFlowEnvNoWorker(t, dialect)) })
	}
}

func batchStartsFailAfterItsWriteCommitted(t *testing.T, e *env) {
	acts := activities.New(e.st, e.tc)
	var attempts atomic.Int32
	w := workflowsWorkerWithActivity(t, e, "CreateTaskBatchAndStart",
		func(ctx context.Context, in activities.TaskBatchStart) ([]string, error) {
			if attempts.Add(1) == 1 {
				if _, err := e.st.CreateTaskBatch(ctx, in.Batch); err != nil {
					return nil, err
				}
				return nil, errors.New("start workflow: the Temporal server is unavailable")
			}
			return acts.CreateTaskBatchAndStart(ctx, in)
		})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	admin := e.client(e.adminKey)
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "requestId": "batch", "tasks": []map[string]any{
		{"title": "A", "draftUuid": "a", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "B", "dependsOnDraftUuids": []string{"a"}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	require.Len(t, created.Tasks, 2)
	require.GreaterOrEqual(t, attempts.Load(), int32(2), "the first attempt failed after its write")
	var list TaskList
	ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
	require.Equal(t, 2, list.Total, "the retry wrote nothing more")
	require.Equal(t, 1, activityCount(t, e.st, created.Tasks[0].UUID, "created"))
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": created.Tasks[0].UUID}, nil) // its workflow runs
	e.requireAgreement()
}

// requireEventually2 polls cond until it holds or within passes.
func requireEventually2(t testing.TB, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition never held: "+msg, args...)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// A `temporal workflow reset` rolls a workflow back but not its rows: the next command is
// refused as a divergence (never acknowledged and skipped), ops check lists it, and ops repair
// makes the workflow follow its rows forward: they hold a change Chorus applied and its agent was
// told succeeded (the change journal lists it), so the workflow's run is ended and a new one
// starts from the rows, and the command stays in effect.
func TestResetIsDetectedAndRepaired(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, nil)

		// Reset to the workflow task before the move to in_progress, dropping that update.
		id := vocab.TaskID(task)
		rollBack(t, e, id, 1)

		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "assigned"
		}, "the reset workflow is back at assigned")
		msg := fails(t, admin, "chorus_release_task", map[string]any{"taskUuid": task})
		require.Contains(t, msg, "its stored record and its workflow disagree")
		f, did := e.repairOnly(t, ops.Diverged)
		require.Equal(t, id, f.WorkflowID)
		require.Contains(t, did, "ended the run and started a new run from the rows")
		e.requireAgreement()
		var v TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "in_progress", v.Status, "the start its agent was told of stays in effect")
		ok(t, admin, "chorus_submit_for_verify", map[string]any{"taskUuid": task}, nil)
		require.Equal(t, 1, activityCount(t, e.st, task, "status_changed"))
		require.Zero(t, activityCount(t, e.st, task, "rolled_back"))
		e.requireAgreement()
	})
}

// A terminated workflow leaves rows no command can change (commands to the entity are refused
// as a divergence that names the repair): ops check lists it, and ops repair starts a new run
// from the rows.
func TestTerminatedWorkflowIsRestartedByRepair(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	idea := createIdea(t, admin, project, "Idea", nil)
	ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	require.NoError(t, e.tc.TerminateWorkflow(ctx, vocab.IdeaID(idea), "", "test"))
	require.Contains(t, fails(t, admin, "chorus_release_idea", map[string]any{"ideaUuid": idea}),
		"An operator must run `chorus ops repair idea/"+idea+"`")

	_, did := e.repairOnly(t, ops.ClosedWorkflow)
	require.Contains(t, did, "started a new run from the rows")
	e.requireAgreement()
	e.requireProjectInMemo(t, vocab.IdeaID(idea), "Apollo") // the new run's memo names the project
	var iv IdeaView
	ok(t, admin, "chorus_release_idea", map[string]any{"ideaUuid": idea}, &iv)
	require.Equal(t, "open", iv.Status)
	ok(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": idea}, nil)
	e.requireAgreement()
}

// An operator terminates a task's workflow in the middle of a command. The call in flight, its
// retry with the same requestId and any other command to the task are refused at once as a
// divergence naming `chorus ops repair <workflow id>`, never spun until their deadline nor
// answered "not found"; after the repair, the retry runs (docs/write-path.md, "Check and
// repair"). An entity that is gone is still not found.
func TestTerminatedWorkflowIsADivergence(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true, callTimeout: 20 * time.Second})
			ctx := context.Background()
			admin := e.client(e.adminKey)
			project := createProject(t, admin, "Apollo")
			var created CreatedTasks
			ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
				{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
				{"title": "Gone", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
			task, gone := created.Tasks[0].UUID, created.Tasks[1].UUID
			ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
			id := vocab.TaskID(task)
			repairText := "An operator must run `chorus ops repair " + id + "`"

			// The command's update is accepted and its write is about to run when the operator
			// terminates the workflow; the write stays held until the end of the test.
			writing, release := make(chan struct{}), make(chan struct{})
			e.faults.OnceBefore("ApplyTaskChange", func() {
				close(writing)
				<-release
			})
			writes := e.faults.Runs("ApplyTaskChange")
			start := map[string]any{"taskUuid": task, "status": "in_progress", "requestId": "start"}
			answer := make(chan string, 1)
			began := time.Now()
			go func() { answer <- fails(t, admin, "chorus_update_task", start) }()
			<-writing
			require.NoError(t, e.tc.TerminateWorkflow(ctx, id, "", "operator"))
			msg := <-answer
			require.Contains(t, msg, repairText)
			require.Contains(t, msg, "was terminated")
			require.Less(t, time.Since(began), 10*time.Second, "answered at once, not at the deadline")

			began = time.Now()
			require.Contains(t, fails(t, admin, "chorus_update_task", start), repairText, "the retry")
			require.Contains(t, fails(t, admin, "chorus_release_task", map[string]any{"taskUuid": task}), repairText)
			require.Less(t, time.Since(began), 10*time.Second)

			// A deleted task's workflow completes with its row gone: not found.
			ok(t, admin, "chorus_admin_delete_task", map[string]any{"taskUuid": gone}, nil)
			_, err := workflows.Send(ctx, e.deps.Flows, workflows.ClaimTask, gone, workflows.Call{}, "agent", workflows.TaskCommand{})
			require.ErrorContains(t, err, "Task not found")

			e.repairOnly(t, ops.ClosedWorkflow)
			var v TaskView
			ok(t, admin, "chorus_update_task", start, &v)
			require.Equal(t, "in_progress", v.Status, "after the repair, the retry runs")

			// The terminated run's write, let go now, finds the row moved on: it writes nothing.
			close(release)
			requireEventually(t, func() bool { return e.faults.Runs("ApplyTaskChange") > writes+1 },
				"the terminated run's write ended")
			require.Equal(t, 1, activityCount(t, e.st, task, "status_changed"), "applied once")
			e.requireAgreement()
		})
	}
}
