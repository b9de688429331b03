package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store/storetest"
)

// leaseProject creates a project whose claims lapse after ttl seconds, with one task.
func leaseProject(t *testing.T, admin *mcpsdk.ClientSession, ttl int) (project, task string) {
	t.Helper()
	var p CreatedProject
	ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Leased", "claimTtlSeconds": ttl}, &p)
	require.NotNil(t, p.ClaimTTL)
	require.EqualValues(t, ttl, *p.ClaimTTL)
	return p.UUID, createTask(t, admin, p.UUID)
}

// waitReleased polls the task until its lapsed claim is released.
func waitReleased(t *testing.T, s *mcpsdk.ClientSession, task string) TaskView {
	t.Helper()
	var v TaskView
	requireEventually2(t, 60*time.Second, func() bool {
		ok(t, s, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		return v.Status == "open"
	}, "the lapsed claim is released")
	return v
}

// The lease test of the claim-lease contract (docs/rules.md §5.10): the holder goes silent, the
// lease expires, the task workflow's timer releases the task (activity, notification, marks
// reset), another agent claims it, and the first agent's submit is refused.
func TestClaimLeaseLapses(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		a := e.client(e.agent("Dev A", perm.DeveloperAgent))
		b := e.client(e.agent("Dev B", perm.DeveloperAgent))
		_, task := leaseProject(t, admin, 2)

		var v TaskView
		ok(t, a, "chorus_claim_task", map[string]any{"taskUuid": task}, &v)
		require.NotNil(t, v.ClaimExpiresAt)
		require.EqualValues(t, 2, *v.ClaimTTLSeconds)
		require.Contains(t, strings.Join(v.Hints, "\n"), "⏱ LEASE: this claim lapses at")
		ok(t, a, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, &v)
		require.Equal(t, "in_progress", v.Status)
		items := []map[string]any{{"uuid": v.AcceptanceCriteriaItems[0].UUID, "devStatus": "passed"}}
		ok(t, a, "chorus_report_criteria_self_check", map[string]any{"taskUuid": task, "criteria": items}, nil)

		// Silence: the claim lapses and the task is open again, with no marks left.
		v = waitReleased(t, b, task)
		require.Nil(t, v.Assignee)
		require.Nil(t, v.ClaimExpiresAt)
		require.Equal(t, "pending", v.AcceptanceCriteriaItems[0].DevStatus)
		require.Equal(t, 1, activityCount(t, e.st, task, "claim_expired"))
		require.Equal(t, 2, countRows(t, e, "notifications WHERE entity_uuid = ? AND action = 'task_claim_expired'", task),
			"one each for the holder and the task's creator")

		// Another agent claims it; the first agent's later commands are refused, saying why.
		ok(t, b, "chorus_claim_next_task", nil, &v)
		require.Equal(t, task, v.UUID)
		msg := fails(t, a, "chorus_submit_for_verify", map[string]any{"taskUuid": task})
		require.True(t, strings.HasPrefix(msg, "Only the assignee can submit for verification (assignee: Dev B); your claim lapsed at "), msg)
		require.Contains(t, msg, "after 2s without a task command or session heartbeat from you, and the task was released")
		require.Contains(t, fails(t, a, "chorus_report_work", map[string]any{"taskUuid": task, "report": "done"}), "your claim lapsed")
		require.Contains(t, fails(t, a, "chorus_claim_task", map[string]any{"taskUuid": task}), "Task is already assigned to Dev B")
		e.requireAgreement()
	})
}

// Every task command of the holder and every heartbeat of a session checked in to the task
// renews the claim; nobody else's does; a project without a time to live has claims that never
// lapse.
func TestClaimLeaseRenewals(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		a := e.client(e.agent("Dev A", perm.DeveloperAgent))
		_, task := leaseProject(t, admin, 5)
		plain := createTask(t, admin, createProject(t, admin, "Plain"))
		s := createSessionFor(t, a, "worktree")
		ok(t, a, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": task}, nil) // claims it
		ok(t, a, "chorus_claim_task", map[string]any{"taskUuid": plain}, nil)
		var v TaskView
		ok(t, a, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "assigned", v.Status)
		first := *v.ClaimExpiresAt

		// For 12 s (well past the 5 s time to live) the holder keeps it alive: heartbeats, a
		// report, a re-claim; an admin's edit in between renews nothing.
		end := time.Now().Add(12 * time.Second)
		for i := 0; time.Now().Before(end); i++ {
			switch i % 3 {
			case 0:
				res := call(t, a, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID})
				require.False(t, res.IsError, text(res))
			case 1:
				res := call(t, a, "chorus_report_work", map[string]any{"taskUuid": task, "report": "still on it"})
				require.False(t, res.IsError, text(res))
			default:
				ok(t, a, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
			}
			ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "priority": "high"}, nil)
			time.Sleep(500 * time.Millisecond)
		}
		ok(t, a, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "assigned", v.Status, "renewed claims do not lapse")
		require.True(t, v.ClaimExpiresAt.After(first))
		require.Zero(t, activityCount(t, e.st, task, "claim_expired"))

		// Checked out of the session, heartbeats no longer renew it: it lapses.
		ok(t, a, "chorus_session_checkout_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": task}, nil)
		for range 3 {
			ok(t, a, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}, nil)
			time.Sleep(time.Second)
		}
		waitReleased(t, a, task)
		ok(t, a, "chorus_get_task", map[string]any{"taskUuid": plain}, &v)
		require.Equal(t, "assigned", v.Status, "claims in a project without a time to live never lapse")
		require.Nil(t, v.ClaimExpiresAt)

		// A claim that ends (submitted) stops its lease; a reopen by an admin starts a fresh one.
		ok(t, a, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		ok(t, a, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, nil)
		ok(t, a, "chorus_submit_for_verify", map[string]any{"taskUuid": task}, nil)
		ok(t, a, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Nil(t, v.ClaimExpiresAt, "a task waiting for verification has no lease")
		time.Sleep(6 * time.Second)
		ok(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": task}, nil)
		ok(t, a, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "in_progress", v.Status)
		require.NotNil(t, v.ClaimExpiresAt)
		waitReleased(t, a, task)
		require.Equal(t, 2, activityCount(t, e.st, task, "claim_expired"))
		e.requireAgreement()
	})
}

// The release of a lapsed claim is a write like any other (docs/write-path.md): its
// acknowledgement lost, it is retried and recognised as applied; its worker killed between the
// commit and the completion, the next worker's retry finds it applied. Either way the task is
// released once, with one activity and one notification, and its workflow agrees with its row.
func TestClaimLeaseExpiryFaults(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		for _, fault := range []string{"ack-lost", "worker-killed"} {
			t.Run(dialect+"/"+fault, func(t *testing.T) {
				t.Parallel()
				e := startEnv(t, dialect, envOptions{flows: true, noWorker: true})
				var mu sync.Mutex
				current := e.startWorker()
				admin := e.client(e.adminKey)
				a := e.client(e.agent("Dev A", perm.DeveloperAgent))
				_, task := leaseProject(t, admin, 2)
				ok(t, a, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
				// The next task write is the expiry's.
				if fault == "ack-lost" {
					e.faults.FailAfterCommit("ApplyTaskChange", 1)
				} else {
					e.faults.OnceAfter("ApplyTaskChange", func() {
						mu.Lock()
						defer mu.Unlock()
						current.Stop()
						current = e.startWorker()
					})
				}
				waitReleased(t, admin, task)
				require.Equal(t, 1, e.faults.Injected("ApplyTaskChange"))
				// Wait for the workflow to take in the completion, then check exactly once.
				e.requireAgreement()
				require.Equal(t, 1, activityCount(t, e.st, task, "claim_expired"))
				require.Equal(t, 2, countRows(t, e, "notifications WHERE entity_uuid = ? AND action = 'task_claim_expired'", task),
					"the holder and the creator, once each")
				var v TaskView
				ok(t, a, "chorus_claim_task", map[string]any{"taskUuid": task}, &v)
				require.Equal(t, "assigned", v.Status, "the workflow moved on: the task can be claimed again")
				e.requireAgreement()
			})
		}
	}
}

// A session heartbeat, the commonest call, writes nothing for a claim renewed within the last
// tenth of its time to live (docs/rules.md §5.10): the task's row and workflow are left as they
// are. Once more than a tenth has passed, it renews the claim again, exactly once even when the
// renewal's acknowledgement is lost.
func TestHeartbeatLeavesAFreshClaimAlone(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		a := e.client(e.agent("Dev A", perm.DeveloperAgent))
		_, task := leaseProject(t, admin, 20)
		s := createSessionFor(t, a, "worktree")
		ok(t, a, "chorus_session_checkin_task", map[string]any{"sessionUuid": s.UUID, "taskUuid": task}, nil) // claims it
		claimed, err := e.st.TaskRow(ctx, task)
		require.NoError(t, err)

		ok(t, a, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}, nil)
		row, err := e.st.TaskRow(ctx, task)
		require.NoError(t, err)
		require.Equal(t, claimed.Version, row.Version, "a heartbeat right after the claim writes nothing")
		require.Equal(t, *claimed.ClaimExpiresAt, *row.ClaimExpiresAt)

		// Once more than a tenth of the 20 s has run out, the heartbeat renews the claim.
		requireEventually2(t, 30*time.Second, func() bool { return time.Until(*claimed.ClaimExpiresAt) < 17*time.Second },
			"two seconds pass")
		ok(t, a, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}, nil)
		row, err = e.st.TaskRow(ctx, task)
		require.NoError(t, err)
		require.Equal(t, claimed.Version+1, row.Version)
		require.True(t, row.ClaimExpiresAt.After(*claimed.ClaimExpiresAt))
		e.requireAgreement()

		// Fault: the renewal commits and reports failure (the acknowledgement is lost). The
		// heartbeat still answers, the renewal is applied once, and the next heartbeat finds the
		// claim fresh and writes nothing.
		renewed := row
		requireEventually2(t, 30*time.Second, func() bool { return time.Until(*renewed.ClaimExpiresAt) < 17*time.Second },
			"two seconds pass")
		e.faults.FailAfterCommit("ApplyTaskChange", 1)
		ok(t, a, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}, nil)
		require.Equal(t, 1, e.faults.Injected("ApplyTaskChange"))
		row, err = e.st.TaskRow(ctx, task)
		require.NoError(t, err)
		require.Equal(t, renewed.Version+1, row.Version, "renewed once")
		ok(t, a, "chorus_session_heartbeat", map[string]any{"sessionUuid": s.UUID}, nil)
		again, err := e.st.TaskRow(ctx, task)
		require.NoError(t, err)
		require.Equal(t, row.Version, again.Version, "the retried renewal left a fresh claim: nothing written")
		e.requireAgreement()
	})
}
