package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/chorus-dev/chorus/ops"
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
		d, err := e.tc.DescribeWorkflowExecution(ctx, workflows.ProposalID(proposal), "")
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

		resetTo(t, e, workflows.TaskID(t1), 2)
		resetTo(t, e, workflows.IdeaID(child), 2)
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, workflows.TaskID(t1), "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "in_progress" && s.Row.Version == 4
		}, "the re-applied start and dependency bring the task back where it was")
		requireEventually(t, func() bool {
			var s workflows.IdeaState
			v, err := e.tc.QueryWorkflow(ctx, workflows.IdeaID(child), "", workflows.QueryState)
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
