package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Repairs and the answers agents were given (docs/write-path.md, "Check and repair", "Exactly
// once").

// A command its workflow refuses as a divergence (its write met a row moved behind Chorus's
// back, and wrote nothing) does not pin its requestId: Temporal keeps that refusal for the
// update's id in the run, so the requestId moves to its next generation, and after ops repair the
// retry with the same requestId runs instead of getting the refusal again for ever.
func TestDivergedRefusalDoesNotPinTheRequestID(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		_, err := e.st.DB.NewUpdate().Table("tasks").Set("version = version + 1").Set("change_id = 'by-hand'").
			Where("uuid = ?", task).Exec(ctx)
		require.NoError(t, err)

		args := map[string]any{"taskUuid": task, "status": "in_progress", "requestId": "start"}
		require.Contains(t, fails(t, admin, "chorus_update_task", args), "its stored record and its workflow disagree")
		e.repairOnly(t, ops.Diverged)
		var v TaskView
		ok(t, admin, "chorus_update_task", args, &v)
		require.Equal(t, "in_progress", v.Status, "after the repair, the same requestId runs")
		ok(t, admin, "chorus_update_task", args, &v)
		require.Equal(t, 1, activityCount(t, e.st, task, "status_changed"), "and its retry answers, once")
		e.requireAgreement()
	})
}

// A closed proposal's workflow stays open (docs/write-path.md, "Every row has its workflow"):
// a command to the proposal is refused with its state, not as a divergence an operator must
// repair, a move of its idea reaches it like any other, and chorus ops check finds it agreeing
// with its row rather than a row whose workflow ended.
func TestClosedProposalKeepsItsWorkflow(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		other := createProject(t, admin, "Borealis")
		idea := elaboratedIdea(t, pm, admin, project, "Idea")
		proposal, _ := fullProposal(t, pm, project, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		ok(t, admin, "chorus_admin_close_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "not now"}, nil)
		d, err := e.tc.DescribeWorkflowExecution(ctx, vocab.ProposalID(proposal), "")
		require.NoError(t, err)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
		require.Contains(t, fails(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}),
			"Can only approve pending Proposals, current status: closed")
		ok(t, pm, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": other}, nil)
		e.requireAgreement()
	})
}

// A `temporal workflow reset` that re-applies updates runs their handlers again; a guard that
// reads other rows would judge them on today's rows, refuse a command that was accepted and
// applied, and leave every later command diverging. A command whose change is already in the
// change journal skips those guards and finds its write applied: here a task's start, whose
// blockers a later dependency changed, and an idea's move under a parent deleted since.
func TestResetReappliesAcceptedCommandsWhoseGuardsNoLongerHold(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		var created CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "T0", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "T1", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
		t0, t1 := created.Tasks[0].UUID, created.Tasks[1].UUID
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": t1}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": t1, "status": "in_progress"}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": t1, "addDependsOn": []string{t0}}, nil)

		theme := createIdea(t, admin, project, "Theme", map[string]any{"isContainer": true})
		child := createIdea(t, admin, project, "Child", nil)
		ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "parentUuid": theme}, nil)
		ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "title": "Child, renamed"}, nil)
		ok(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": theme}, nil)

		resetTo(t, e, vocab.TaskID(t1), 2)
		resetTo(t, e, vocab.IdeaID(child), 2)
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, vocab.TaskID(t1), "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "in_progress" && s.Row.Version == 4
		}, "the re-applied start and dependency bring the task back where it was")
		requireEventually(t, func() bool {
			var s workflows.IdeaState
			v, err := e.tc.QueryWorkflow(ctx, vocab.IdeaID(child), "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Title == "Child, renamed" && s.Row.Version == 3
		}, "the re-applied edits bring the idea back where it was")
		// The re-applied commands took the time of their re-application; nothing else differs.
		found, err := e.ops().Check(ctx, "")
		require.NoError(t, err)
		for _, f := range found {
			require.Equal(t, ops.Diverged, f.Kind, "%+v", f)
			for _, d := range f.Differences {
				require.Contains(t, []string{"assigned_at", "updated_at", "started_at"}, d.Column, "%+v", f)
			}
			_, err := e.ops().Repair(ctx, f)
			require.NoError(t, err)
		}
		e.requireAgreement()
		ok(t, admin, "chorus_submit_for_verify", map[string]any{"taskUuid": t1}, nil)
		ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "title": "Child, again"}, nil)
		require.Equal(t, 1, activityCount(t, e.st, t1, "status_changed"), "nothing applied twice")
		e.requireAgreement()
	})
}

// A repair that cannot follow the rows forward (the row's history past the workflow ends in a
// change Chorus never made: an edit by hand) rolls the row back to the workflow, undoing a
// command its agent was told succeeded. It says so: the change journal entry of that command is
// marked rolled back, a retry with the call's requestId is told its command was rolled back
// instead of getting the old answer, and an activity on the task records it.
func TestRollbackByRepairIsToldToARetry(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, nil)
		report := map[string]any{"taskUuid": task, "report": "halfway", "status": "in_progress", "requestId": "report"}
		ok(t, admin, "chorus_report_work", report, nil)

		// The workflow loses the report (a reset), and the row is then edited by hand.
		id := vocab.TaskID(task)
		rollBack(t, e, id, 1)
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "assigned"
		}, "the reset workflow is back at assigned")
		_, err := e.st.DB.NewUpdate().Table("tasks").Set("version = version + 1").Set("change_id = 'by-hand'").
			Where("uuid = ?", task).Exec(ctx)
		require.NoError(t, err)

		_, did := e.repairOnly(t, ops.Diverged)
		require.Contains(t, did, "rewrote the task row")
		require.Contains(t, did, "rolled back 1 change(s) Chorus had applied")
		e.requireAgreement()
		var v TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "assigned", v.Status, "the row follows the workflow")
		require.Equal(t, 1, activityCount(t, e.st, task, "rolled_back"))

		msg := fails(t, admin, "chorus_report_work", report)
		require.True(t, strings.HasPrefix(msg, "This requestId's command was applied and then rolled back"), msg)
		require.Equal(t, msg, fails(t, admin, "chorus_report_work", report), "the ledger keeps that answer")
		var again TaskView
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, &again)
		require.Equal(t, "assigned", again.Status, "a call whose command stands is answered as before")
		report["requestId"] = "report-again"
		ok(t, admin, "chorus_report_work", report, nil)
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "in_progress", v.Status, "sent again under a new requestId, it applies")
		e.requireAgreement()
	})
}

// A revoke whose signal a task's workflow lost (a reset that dropped it along with a claim) is a
// divergence once nothing delivers it any more, not a change "being adopted" for ever: repair
// makes the workflow follow the row, which holds both the claim and the revoke.
func TestLostRevokeIsRepairedForward(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, admin, project, "Idea")
		proposal, _ := fullProposal(t, pm, project, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		task := pv.MaterializedTasks[0].TaskUUID
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, nil)
		id := vocab.TaskID(task)
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "closed"
		}, "the task follows the revoke")

		rollBack(t, e, id, 1) // to before the claim: the claim and the revoke's signal are dropped
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "open"
		}, "the reset workflow is back at open")
		f, did := e.repairOnly(t, ops.Diverged)
		require.Equal(t, id, f.WorkflowID)
		require.Contains(t, did, "started a new run from the rows")
		e.requireAgreement()
		var v TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
		require.Equal(t, "closed", v.Status)
		require.NotNil(t, v.Assignee, "the claim stays")
	})
}

// A workflow whose entity's project is not in this database (another deployment's workflow on
// the same namespace and task queue, or a project deleted by hand) cannot be repaired into these
// rows: repair says why and what to do (terminate it) instead of failing on a foreign key and
// leaving the operator to run repair again; once terminated, check is clean.
func TestRepairOfAForeignWorkflowSaysWhatToDo(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		_, err := e.st.DB.NewDelete().Table("projects").Where("uuid = ?", project).Exec(ctx)
		require.NoError(t, err)

		found, err := e.ops().Check(ctx, "")
		require.NoError(t, err)
		require.Len(t, found, 1, "%+v", found)
		require.Equal(t, ops.MissingRow, found[0].Kind)
		_, err = e.ops().Repair(ctx, found[0])
		require.ErrorIs(t, err, ops.ErrCannotRepair)
		require.Contains(t, err.Error(), "project "+project+", which is not in this database")
		require.Contains(t, err.Error(), "temporal workflow terminate -w "+vocab.TaskID(task))
		require.NotContains(t, err.Error(), "constraint")

		require.NoError(t, e.tc.TerminateWorkflow(ctx, vocab.TaskID(task), "", "not this deployment's"))
		e.requireAgreement()
	})
}
