package mcp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// chorus ops check and repair on a live system (docs/write-path.md, "Check and repair"): a
// command landing while they look is never taken for a disagreement nor undone by a repair; a
// workflow wedged on a write that keeps failing is reported; rows repair cannot recreate are
// said to be lost.

// opsTrap is a worker interceptor for these tests: it holds the next execution of an activity
// after it ran (its transaction committed) until released, as a slow acknowledgement does, and
// it makes every execution of an activity fail before it runs.
type opsTrap struct {
	interceptor.WorkerInterceptorBase

	mu      sync.Mutex
	hold    map[string]chan struct{} // activity name → release
	held    chan string              // the name of each execution being held
	failing map[string]string        // activity name → the message every execution fails with
}

func newOpsTrap() *opsTrap {
	return &opsTrap{hold: map[string]chan struct{}{}, held: make(chan string, 1), failing: map[string]string{}}
}

// holdNext holds the next successful execution of the named activity until release is called.
func (tr *opsTrap) holdNext(name string) (release func()) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ch := make(chan struct{})
	tr.hold[name] = ch
	return sync.OnceFunc(func() { close(ch) })
}

// fail makes every execution of the named activity fail with msg (a retryable error); "" stops it.
func (tr *opsTrap) fail(name, msg string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if msg == "" {
		delete(tr.failing, name)
	} else {
		tr.failing[name] = msg
	}
}

func (tr *opsTrap) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &trappedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, tr: tr}
}

type trappedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	tr *opsTrap
}

func (a *trappedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	name := activity.GetInfo(ctx).ActivityType.Name
	a.tr.mu.Lock()
	msg, failing := a.tr.failing[name]
	a.tr.mu.Unlock()
	if failing {
		return nil, errors.New(msg)
	}
	out, err := a.Next.ExecuteActivity(ctx, in)
	if err != nil {
		return out, err
	}
	a.tr.mu.Lock()
	release, hold := a.tr.hold[name]
	delete(a.tr.hold, name)
	a.tr.mu.Unlock()
	if hold {
		a.tr.held <- name
		<-release
	}
	return out, nil
}

// startTrappedWorker starts the env's worker with tr besides the env's fault hooks.
func (e *env) startTrappedWorker(tr *opsTrap) {
	e.t.Helper()
	w := workflows.NewWorker(e.tc, e.queue, activities.New(e.st, e.tc),
		worker.Options{Interceptors: []interceptor.WorkerInterceptor{e.faults, tr}})
	require.NoError(e.t, w.Start())
	e.t.Cleanup(w.Stop)
}

// liveTask makes a task with two criteria, claimed and in progress, and returns it with its
// developer's session; chorus_report_work on it moves its row and its workflow one version.
func liveTask(t *testing.T, e *env) (string, *mcpsdk.ClientSession) {
	t.Helper()
	admin := e.client(e.adminKey)
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "first"}, {"description": "second"}}}}}, &created)
	task := created.Tasks[0].UUID
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
	ok(t, dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, nil)
	return task, dev
}

func reportProgress(t testing.TB, dev *mcpsdk.ClientSession, task string) {
	t.Helper()
	res := call(t, dev, "chorus_report_work", map[string]any{"taskUuid": task, "report": "progress"})
	require.False(t, res.IsError, text(res))
}

// duringCheck marks the context of the check a commandsDuringCheck hook interleaves with.
type duringCheck struct{}

// commandsDuringCheck is a bun query hook that runs a command right after a marked check has
// read the tasks table, a set number of times: the command lands between the check's read of a
// row and its look at the workflow, as on a live system.
type commandsDuringCheck struct {
	left atomic.Int32
	run  func()
}

func (h *commandsDuringCheck) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (h *commandsDuringCheck) AfterQuery(ctx context.Context, ev *bun.QueryEvent) {
	if ctx.Value(duringCheck{}) == nil || !strings.Contains(ev.Query, `FROM "tasks"`) {
		return
	}
	if h.left.Add(-1) >= 0 {
		h.run()
	}
}

func taskRow(t testing.TB, e *env, task string) store.Task {
	t.Helper()
	r, err := e.st.TaskRow(context.Background(), task)
	require.NoError(t, err)
	return r
}

// Commands land while ops check looks: between its read of a row and its query of the
// workflow (the workflow is then a version ahead), and between a write's commit and its
// acknowledgement (the row is then a version ahead, the write pending). Neither is a
// divergence; nor is anything a stream of commands does meanwhile.
func TestOpsCheckIsStableWhileCommandsRun(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := newFlowEnvNoWorker(t, dialect)
			hook := &commandsDuringCheck{}
			e.st.DB.AddQueryHook(hook) // before the worker starts: no query runs concurrently
			trap := newOpsTrap()
			e.startTrappedWorker(trap)
			task, dev := liveTask(t, e)
			id := vocab.TaskID(task)

			// A command completes right after the check read the tasks table, twice.
			hook.run = func() { reportProgress(t, dev, task) }
			hook.left.Store(2)
			before := taskRow(t, e, task).Version
			r, err := e.ops().CheckReport(context.WithValue(context.Background(), duringCheck{}, true), "")
			require.NoError(t, err)
			require.Empty(t, r.Findings, "a command that landed during the check is not a divergence")
			require.LessOrEqual(t, hook.left.Load(), int32(0), "both commands ran during the check")
			require.Equal(t, before+2, taskRow(t, e, task).Version)

			// A write committed, its acknowledgement not yet recorded: the row is a version ahead.
			release := trap.holdNext("ApplyTaskChange")
			t.Cleanup(release) // a failing test does not leave the command hanging
			done := make(chan *mcpsdk.CallToolResult, 1)
			go func() {
				res, _ := dev.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "chorus_report_work",
					Arguments: map[string]any{"taskUuid": task, "report": "held"}})
				done <- res
			}()
			<-trap.held
			r, err = e.ops().CheckReport(context.Background(), "")
			require.NoError(t, err)
			require.Empty(t, r.Findings, "a row ahead of a workflow whose write is pending is not a divergence")
			require.Len(t, r.Busy, 1)
			require.Equal(t, id, r.Busy[0].WorkflowID)
			require.Contains(t, r.Busy[0].Reason, "ApplyTaskChange pending")
			release()
			res := <-done
			require.NotNil(t, res)
			require.False(t, res.IsError, text(res))
			e.requireAgreement()

			// A stream of commands while checks run: none of them reports a finding.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var calls, refused atomic.Int32
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					res, err := dev.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "chorus_report_work",
						Arguments: map[string]any{"taskUuid": task, "report": "stream"}})
					calls.Add(1)
					if err != nil || res.IsError {
						refused.Add(1)
					}
				}
			}()
			for range 10 {
				found, err := e.ops().Check(context.Background(), "")
				require.NoError(t, err)
				require.Empty(t, found, "no finding while commands stream")
			}
			close(stop)
			wg.Wait()
			require.Positive(t, calls.Load())
			require.Zero(t, refused.Load(), "every command of the stream was applied")
			e.requireAgreement()
		})
	}
}

// ops repair, given a finding from an earlier check, looks again before it writes: it never
// rewrites the row of a workflow that is applying a change (the row is legitimately ahead), and
// leaves alone a finding that no longer holds.
func TestOpsRepairLeavesALiveChangeAlone(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := newFlowEnvNoWorker(t, dialect)
			trap := newOpsTrap()
			e.startTrappedWorker(trap)
			task, dev := liveTask(t, e)
			id := vocab.TaskID(task)

			// What a check might have reported a moment ago, while a command was on its way.
			stale := ops.Finding{WorkflowID: id, Kind: ops.Diverged, Detail: "differs in version, change_id"}
			settled := taskRow(t, e, task)

			release := trap.holdNext("ApplyTaskChange")
			t.Cleanup(release) // a failing test does not leave the command hanging
			done := make(chan *mcpsdk.CallToolResult, 1)
			go func() {
				res, _ := dev.CallTool(ctx, &mcpsdk.CallToolParams{Name: "chorus_report_work",
					Arguments: map[string]any{"taskUuid": task, "report": "held"}})
				done <- res
			}()
			<-trap.held
			ahead := taskRow(t, e, task)
			require.Equal(t, settled.Version+1, ahead.Version, "the write committed")
			_, err := e.ops().Repair(ctx, stale)
			now := taskRow(t, e, task)
			require.Equal(t, ahead.Version, now.Version, "the row is not rolled back")
			require.Equal(t, ahead.ChangeID, now.ChangeID)
			require.ErrorIs(t, err, ops.ErrSkipped)
			require.Contains(t, err.Error(), "ApplyTaskChange")
			release()
			res := <-done
			require.NotNil(t, res)
			require.False(t, res.IsError, "the command completes: %s", text(res))
			e.requireAgreement()
			require.Equal(t, ahead.ChangeID, taskRow(t, e, task).ChangeID)

			// Once the entity agrees again, the stale finding is left alone: nothing is rewritten.
			settled = taskRow(t, e, task)
			did, err := e.ops().Repair(ctx, stale)
			require.NoError(t, err)
			require.Contains(t, did, "nothing to do")
			require.Equal(t, settled.UpdatedAt, taskRow(t, e, task).UpdatedAt, "an agreeing row is not rewritten")
		})
	}
}

// A write that can never succeed (here every attempt fails as a foreign-key violation would)
// wedges its workflow: every command answers "Still in progress". ops check reports it as a
// stuck activity, with its type, attempts and failure; repair says what to do; terminating the
// workflow and repairing restarts it from its rows.
func TestOpsCheckReportsAStuckWrite(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := startEnv(t, dialect, envOptions{flows: true, noWorker: true, callTimeout: 3 * time.Second})
			trap := newOpsTrap()
			e.startTrappedWorker(trap)
			task, dev := liveTask(t, e)
			id := vocab.TaskID(task)

			const failure = `insert or update on table "comments" violates foreign key constraint "comments_author_fkey"`
			trap.fail("ApplyTaskChange", failure)
			msg := fails(t, dev, "chorus_report_work", map[string]any{"taskUuid": task, "report": "wedged"})
			require.True(t, strings.HasPrefix(msg, "Still in progress"), msg)

			var stuck ops.Finding
			requireEventually2(t, 30*time.Second, func() bool {
				found, err := e.ops().Check(ctx, "")
				require.NoError(t, err)
				for _, f := range found {
					require.Equal(t, ops.StuckActivity, f.Kind, "nothing but the stuck write: %+v", f)
					stuck = f
				}
				return len(found) == 1
			}, "ops check reports the stuck write")
			require.Equal(t, id, stuck.WorkflowID)
			require.NotNil(t, stuck.Activity)
			require.Equal(t, "ApplyTaskChange", stuck.Activity.Type)
			require.GreaterOrEqual(t, stuck.Activity.Attempt, int32(5))
			require.Contains(t, stuck.Activity.LastFailure, failure)
			require.Contains(t, stuck.Detail, failure)
			require.Contains(t, fails(t, dev, "chorus_report_work", map[string]any{"taskUuid": task, "report": "again"}),
				"Still in progress", "the entity is wedged")

			_, err := e.ops().Repair(ctx, stuck)
			require.ErrorIs(t, err, ops.ErrCannotRepair)
			require.Contains(t, err.Error(), "terminate the workflow")
			_, err = e.ops().Repair(ctx, ops.Finding{WorkflowID: id, Kind: ops.Diverged})
			require.ErrorIs(t, err, ops.ErrSkipped, "a row is not rewritten while its workflow is stuck on a write")

			// The operator's way out: terminate, then repair restarts the workflow from its rows.
			require.NoError(t, e.tc.TerminateWorkflow(ctx, id, "", "stuck on a write"))
			trap.fail("ApplyTaskChange", "")
			_, did := e.repairOnly(t, ops.ClosedWorkflow)
			require.Contains(t, did, "started a new run from the rows")
			e.requireAgreement()
			reportProgress(t, dev, task)
			e.requireAgreement()
		})
	}
}

// A task row deleted behind Chorus's back takes its acceptance criteria with it (foreign key).
// Repair re-inserts the row from the workflow but cannot recreate the criteria, whose text lived
// only in the database: it says so, and check reports them as lost rows needing a backup,
// never as a divergence repair would claim to fix.
func TestOpsRepairSaysLostCriteriaNeedABackup(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			e := newFlowEnv(t, dialect)
			task, _ := liveTask(t, e)
			id := vocab.TaskID(task)
			criteria, err := e.st.Criteria(ctx, task)
			require.NoError(t, err)
			require.Len(t, criteria, 2)
			_, err = e.st.DB.NewDelete().TableExpr("tasks").Where("uuid = ?", task).Exec(ctx)
			require.NoError(t, err)

			_, did := e.repairOnly(t, ops.MissingRow)
			require.Contains(t, did, "cannot be recreated", "repair says the criteria cannot be recreated")
			require.Contains(t, did, "2 acceptance criteria rows")
			require.Contains(t, did, "from a backup")
			require.Contains(t, did, "re-inserted the task row")

			found, err := e.ops().Check(ctx, "")
			require.NoError(t, err)
			require.Len(t, found, 1, "only the lost criteria remain: %+v", found)
			lost := found[0]
			require.Equal(t, ops.LostRows, lost.Kind)
			require.Equal(t, id, lost.WorkflowID)
			require.Contains(t, lost.Detail, "acceptance criteria")
			require.Contains(t, lost.Detail, "restore them from a backup")
			require.Len(t, lost.Differences, 2)
			for _, d := range lost.Differences {
				require.Equal(t, "missing", d.Row)
			}
			_, err = e.ops().Repair(ctx, lost)
			require.ErrorIs(t, err, ops.ErrCannotRepair)
			require.Contains(t, err.Error(), "restore them from a backup")
		})
	}
}
