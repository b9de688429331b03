package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// Signals that reach a workflow while its last command before continue-as-new still runs
// (docs/write-path.md, "Who writes what"): the signal waits for the command's lock, and the run
// must apply it before it continues as new, or the next run starts without it (a task that
// lost its revoke stays claimable; one that lost its move refuses every claim until repair).
// The server here suggests continue-as-new after a handful of events, so the claim is each
// task's last command before its run continues as new.
func TestSignalDuringLastCommandSurvivesContinueAsNew(t *testing.T) {
	tc := wftest.Dedicated(t, "limit.historyCount.suggestContinueAsNew=8")
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true, temporal: tc})
			admin := e.client(e.adminKey)
			pm := e.pmWithIdeaAdmin("PM")
			dev := e.client(e.agent("Dev", perm.DeveloperAgent))
			a := createProject(t, admin, "Apollo")
			b := createProject(t, admin, "Borealis")

			approved := func(title string) (idea, proposal string, tasks []string) {
				idea = elaboratedIdea(t, pm, admin, a, title)
				proposal, _ = fullProposal(t, pm, a, idea)
				ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
				var pv ProposalView
				ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
				for _, m := range pv.MaterializedTasks {
					tasks = append(tasks, m.TaskUUID)
				}
				return idea, proposal, tasks
			}
			// claimMeeting claims task; its write commits and reports a failure, and before the
			// retry (which finds the claim applied) meanwhile runs, so that its signal waits for
			// the claim's lock. It returns the task's next run's state.
			claimMeeting := func(task string, meanwhile func()) workflows.TaskState {
				id := vocab.TaskID(task)
				first := currentRun(t, e, id)
				e.faults.FailAfterCommit("ApplyTaskChange", 1)
				e.faults.OnceBefore("ApplyTaskChange", func() {}) // the claim's first attempt
				e.faults.OnceBefore("ApplyTaskChange", meanwhile) // its retry
				ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim-" + task}, nil)
				return nextRunState(t, e, id, first)
			}

			_, proposal, tasks := approved("Revoked")
			next := claimMeeting(tasks[0], func() {
				ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, nil)
			})
			require.Equal(t, "closed", next.Status, "the revoke that arrived during the claim reached the next run")
			require.Nil(t, next.Lease)

			idea, _, tasks := approved("Moved")
			next = claimMeeting(tasks[0], func() {
				ok(t, pm, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": b}, nil)
			})
			require.Equal(t, b, next.ProjectUUID, "the move that arrived during the claim reached the next run")
			require.Equal(t, "Borealis", next.ProjectName)
			ok(t, dev, "chorus_release_task", map[string]any{"taskUuid": tasks[0]}, nil) // not wedged
			e.requireAgreement()
		})
	}
}

// currentRun is the run id of the workflow's latest run.
func currentRun(t *testing.T, e *env, id string) string {
	t.Helper()
	d, err := e.tc.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// nextRunState waits until the run runID of the task workflow id has continued as new and
// returns the state the next run started from.
func nextRunState(t *testing.T, e *env, id, runID string) workflows.TaskState {
	t.Helper()
	ctx := context.Background()
	next := ""
	requireEventually2(t, 30*time.Second, func() bool {
		it := e.tc.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		return next != ""
	}, "run %s of %s continues as new", runID, id)
	it := e.tc.GetWorkflowHistory(ctx, id, next, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	require.True(t, it.HasNext())
	ev, err := it.Next()
	require.NoError(t, err)
	var in workflows.TaskRun
	require.NoError(t, workflows.DataConverter().FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in))
	require.NotNil(t, in.State)
	return *in.State
}

// A task whose claim has a lease (docs/rules.md §5.10) is revoked and then moved with its idea
// while a command of its holder is about to write: the write meets the moved row, and the
// workflow adopts the move there, with the revoke's close it carries. A closed task holds no
// lease, as the revoke wrote it, so the workflow drops the lease too and agrees with the row.
func TestMoveAdoptedOverARevokeEndsTheLease(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		var p CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Leased", "claimTtlSeconds": 3600}, &p)
		other := createProject(t, admin, "Borealis")
		idea := elaboratedIdea(t, pm, admin, p.UUID, "Idea")
		proposal, _ := fullProposal(t, pm, p.UUID, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		task := pv.MaterializedTasks[0].TaskUUID
		var v TaskView
		ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, &v)
		require.NotNil(t, v.ClaimExpiresAt, "the claim has a lease")

		e.faults.OnceBefore("ApplyTaskChange", func() {
			ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, nil)
			ok(t, pm, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": other}, nil)
		})
		require.Contains(t, fails(t, dev, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}),
			"was moved to another project")
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "closed", v.Status)
		require.Nil(t, v.ClaimExpiresAt)
		e.requireAgreement()
	})
}
