package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// ghostReservation is the claim_reservations row an API process that died while asking task's
// workflow leaves behind: held by nobody alive, lapsing at until.
func ghostReservation(t *testing.T, e *env, task string, until time.Time) {
	t.Helper()
	_, err := e.st.DB.NewRaw("INSERT INTO claim_reservations (task_uuid, holder, expires_at) VALUES (?, ?, ?)",
		task, "ghost-"+store.NewUUID(), until.UTC()).Exec(context.Background())
	require.NoError(t, err)
}

// reservationRows counts the claim_reservations rows, live or lapsed.
func reservationRows(t *testing.T, e *env) int {
	t.Helper()
	var n int
	require.NoError(t, e.st.DB.NewRaw("SELECT count(*) FROM claim_reservations").Scan(context.Background(), &n))
	return n
}

// A reservation left by a call that died (docs/rules.md §4.14) costs a waiting call at most its
// lapse: a caller skips the reserved task while another is free, waits for it when it is the
// last claimable one and claims it once it lapses, and is told "none available" at once when the
// only reserved task is not claimable anyway. Lapsed rows do not pile up.
func TestClaimNextGhostReservation(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		other := e.client(e.agent("Other", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		ids := quickTasks(t, admin, project, "A:high", "B:low")
		lapse := time.Now().Add(3 * time.Second)
		ghostReservation(t, e, ids["A"], lapse)

		var v TaskView
		start := time.Now()
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project}, &v)
		require.Equal(t, ids["B"], v.UUID, "a reserved task is skipped while another is free")
		require.Less(t, time.Since(start), 2*time.Second, "without waiting for the reservation")

		ok(t, other, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "r1"}, &v)
		require.Equal(t, ids["A"], v.UUID, "the last claimable task is claimed once the dead call's reservation lapses")
		require.False(t, time.Now().Before(lapse), "not before it lapses")
		require.Less(t, time.Since(lapse), 3*time.Second)

		// A reservation of a task nobody can claim does not make anyone wait.
		ghostReservation(t, e, ids["B"], time.Now().Add(time.Minute))
		start = time.Now()
		require.Contains(t, fails(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project}), "No task is available")
		require.Less(t, time.Since(start), 2*time.Second)

		// Rows of dead calls go once they lapse: a lapsed one of a task no call will ask for again
		// (here a held one) is removed by later calls.
		ghostReservation(t, e, ids["A"], time.Now().Add(-time.Minute))
		_, err := e.st.DB.NewRaw("UPDATE claim_reservations SET expires_at = ? WHERE task_uuid = ?",
			time.Now().Add(-time.Second).UTC(), ids["B"]).Exec(context.Background())
		require.NoError(t, err)
		more := quickTasks(t, admin, project, "C:low")
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project}, &v)
		require.Equal(t, more["C"], v.UUID)
		require.Zero(t, reservationRows(t, e), "lapsed reservations are removed")
		for _, id := range []string{ids["A"], ids["B"], more["C"]} {
			require.Equal(t, 1, activityCount(t, e.st, id, "assigned"))
		}
		e.requireAgreement()
	})
}

// claim_next racing everything else that takes or blocks a candidate: plain claims of the top
// tasks, an assignment, dependencies added to candidates, with and without requestIds. Enough
// tasks stay claimable that every claim_next call must get one; each task is held once, and no
// reservation is left behind.
func TestClaimNextMixedRace(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.client(e.agent("PM", perm.PMAgent))
		project := createProject(t, admin, "Race")
		var specs []string
		for i := range 30 {
			specs = append(specs, fmt.Sprintf("T%02d:%s", i, []string{"low", "medium", "high"}[i%3]))
		}
		quickTasks(t, admin, project, specs...)
		order, err := e.st.ClaimCandidates(ctx, []string{project}, nil, nil, 100)
		require.NoError(t, err)
		require.Len(t, order, 30)
		last := order[len(order)-1].UUID // an open task the new dependencies point at

		const racers = 10
		agents := make([]*mcpsdk.ClientSession, racers+5)
		for i := range agents {
			agents[i] = e.client(e.agent(fmt.Sprintf("Agent %02d", i), perm.DeveloperAgent))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[string]int{}
		for i := range racers {
			wg.Go(func() {
				args := map[string]any{"projectUuid": project}
				if i%2 == 0 {
					args["requestId"] = "next"
				}
				res := call(t, agents[i], "chorus_claim_next_task", args)
				for retry := 0; retry < 3 && res.IsError && strings.HasPrefix(text(res), "Still in progress"); retry++ {
					res = call(t, agents[i], "chorus_claim_next_task", args)
				}
				require.False(t, res.IsError, "racer %d: %s", i, text(res))
				v := decode[TaskView](t, res)
				mu.Lock()
				got[v.UUID]++
				mu.Unlock()
			})
		}
		for i := range 5 { // plain claims of the top tasks
			wg.Go(func() { call(t, agents[racers+i], "chorus_claim_task", map[string]any{"taskUuid": order[i].UUID}) })
		}
		wg.Go(func() {
			call(t, pm, "chorus_pm_assign_task", map[string]any{"taskUuid": order[5].UUID, "agentUuid": agentUUID(t, e, "Agent 14")})
		})
		for i := 6; i < 9; i++ { // dependencies added to candidates
			wg.Go(func() {
				call(t, admin, "chorus_update_task", map[string]any{"taskUuid": order[i].UUID, "addDependsOn": []string{last}})
			})
		}
		wg.Wait()
		require.Len(t, got, racers, "every racer got its own task")
		for id, n := range got {
			require.Equal(t, 1, n, "task %s claimed twice", id)
		}
		for i, t0 := range order {
			most := 1
			if i == 5 {
				most = 2 // the PM's assignment may follow a claim (it reassigns)
			}
			require.LessOrEqual(t, activityCount(t, e.st, t0.UUID, "assigned"), most, "task %d", i)
		}
		require.Zero(t, reservationRows(t, e), "every reservation was released")
		e.requireAgreement()
	})
}

// agentUUID finds an agent by name.
func agentUUID(t *testing.T, e *env, name string) string {
	t.Helper()
	var id string
	require.NoError(t, e.st.DB.NewSelect().Table("agents").Column("uuid").Where("name = ?", name).Scan(context.Background(), &id))
	return id
}

// A call whose deadline passes while it asks a candidate's workflow (here: no worker runs)
// releases its reservation as it ends, so other calls do not wait for the lapse; its claim may
// still complete, and its retry answers that claim and claims nothing more.
func TestClaimNextDeadlineMidClaim(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := newFlowEnvNoWorker(t, dialect)
			w := e.startWorker()
			admin := e.client(e.adminKey)
			project := createProject(t, admin, "Apollo")
			ids := quickTasks(t, admin, project, "A:high", "B:low")
			devKey := e.agent("Dev", perm.DeveloperAgent)
			other := e.client(e.agent("Other", perm.DeveloperAgent))
			w.Stop()

			p := e.process()
			p.deps.CallTimeout = 2 * time.Second
			dev := p.client(devKey)
			args := map[string]any{"projectUuid": project, "requestId": "next"}
			require.Contains(t, fails(t, dev, "chorus_claim_next_task", args), "Still in progress")
			require.Zero(t, reservationRows(t, e), "the reservation ends with the call")

			e.startWorker()
			var v TaskView
			start := time.Now()
			ok(t, other, "chorus_claim_next_task", map[string]any{"projectUuid": project}, &v)
			require.Less(t, time.Since(start), 20*time.Second)
			p.deps.CallTimeout = time.Minute
			var mine TaskView
			ok(t, dev, "chorus_claim_next_task", args, &mine)
			require.NotEqual(t, v.UUID, mine.UUID)
			for _, id := range []string{ids["A"], ids["B"]} {
				require.Equal(t, 1, activityCount(t, e.st, id, "assigned"))
			}
			require.Zero(t, reservationRows(t, e))
			e.requireAgreement()
		})
	}
}

// moveOnReserve is a query hook that runs move once, just before a chorus_claim_next_task call
// reserves its first candidate: the candidates it read name the project the tasks left.
type moveOnReserve struct { // runs move (any change) once
	once sync.Once
	move func()
}

func (h *moveOnReserve) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	if strings.HasPrefix(ev.Query, "INSERT") && strings.Contains(ev.Query, `"claim_reservations"`) {
		h.once.Do(h.move)
	}
	return ctx
}

func (h *moveOnReserve) AfterQuery(context.Context, *bun.QueryEvent) {}

// softCall calls a tool from a server goroutine (a query hook), where a test may not stop:
// a failure is reported and the test goes on.
func softCall(t *testing.T, s *mcpsdk.ClientSession, name string, args any) {
	res, err := s.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Errorf("tools/call %s: %v", name, err)
	} else if res.IsError {
		t.Errorf("%s failed: %s", name, text(res))
	}
}

// An idea moved (chorus_move_idea) between a call's read of its candidates and its claim: the
// workflows refuse the claims that name the old project, but the tasks are still open, unheld and
// in a project the caller may edit, so the call claims one of them rather than answer "none
// available".
func TestClaimNextCandidateMovedMidCall(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		p := createProject(t, admin, "Apollo")
		q := createProject(t, admin, "Gemini")
		idea := elaboratedIdea(t, pm, admin, p, "Root")
		proposal, _ := fullProposal(t, pm, p, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, nil)

		devKey := e.agent("Dev", perm.DeveloperAgent)
		hook := &moveOnReserve{move: func() {
			softCall(t, admin, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": q})
		}}
		dev := e.process(hook).client(devKey)
		var v TaskView
		ok(t, dev, "chorus_claim_next_task", nil, &v)
		require.Equal(t, q, v.Project.UUID)
		require.Equal(t, 1, activityCount(t, e.st, v.UUID, "assigned"))
		require.Zero(t, reservationRows(t, e))
		e.requireAgreement()
	})
}

// Candidates deleted or blocked between a call's read and its claim are skipped for the next
// one, never claimed; a reservation of a candidate deleted meanwhile is not left behind.
func TestClaimNextCandidatesDeletedOrBlockedMidCall(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		ids := quickTasks(t, admin, project, "A:high", "B:medium", "C:low", "D:low")
		devKey := e.agent("Dev", perm.DeveloperAgent)
		hook := &moveOnReserve{move: func() {
			softCall(t, admin, "chorus_admin_delete_task", map[string]any{"taskUuid": ids["A"]})
			softCall(t, admin, "chorus_update_task", map[string]any{"taskUuid": ids["B"], "addDependsOn": []string{ids["D"]}})
		}}
		dev := e.process(hook).client(devKey)
		var v TaskView
		ok(t, dev, "chorus_claim_next_task", map[string]any{"projectUuid": project, "requestId": "n"}, &v)
		require.Equal(t, ids["C"], v.UUID)
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": ids["B"]}, &v)
		require.Equal(t, "open", v.Status)
		require.Nil(t, v.Assignee)
		require.Zero(t, reservationRows(t, e))
		e.requireAgreement()
	})
}

// A call that waits for a reservation longer than its deadline says it claimed nothing (no claim
// of its own is in flight); called again with the same requestId, it claims the task once the
// reservation lapses.
func TestClaimNextWaitOutlastsDeadline(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true, callTimeout: 2 * time.Second})
			admin := e.client(e.adminKey)
			dev := e.client(e.agent("Dev", perm.DeveloperAgent))
			project := createProject(t, admin, "Apollo")
			ids := quickTasks(t, admin, project, "A:high")
			ghostReservation(t, e, ids["A"], time.Now().Add(3*time.Second))
			args := map[string]any{"projectUuid": project, "requestId": "n"}
			msg := fails(t, dev, "chorus_claim_next_task", args)
			require.Contains(t, msg, "Nothing was claimed for you; call again.")
			var v TaskView
			ok(t, dev, "chorus_claim_next_task", args, &v)
			require.Equal(t, ids["A"], v.UUID)
			require.Equal(t, 1, activityCount(t, e.st, ids["A"], "assigned"))
			e.requireAgreement()
		})
	}
}
