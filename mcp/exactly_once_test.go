package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Races between a command's check and its write, and retries whose workflow forgot the update
// (docs/write-path.md, "One write protocol" and "Exactly once"). Each hook runs a competing
// command at the worst moment: after the workflow checked, before its write.

// A parent idea deleted between an edit's lineage check and its write: the edit is refused as
// "parent not found" and changes nothing, instead of retrying a write the foreign key refuses
// forever (which wedged the idea). Likewise for a create under that parent.
func TestParentDeletedBeforeTheWrite(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		parent := createIdea(t, admin, project, "Theme", map[string]any{"isContainer": true})
		child := createIdea(t, admin, project, "Child", nil)

		e.faults.OnceBefore("ApplyIdeaChange", func() {
			ok(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": parent}, nil)
		})
		msg := fails(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": child, "parentUuid": parent, "requestId": "move"})
		require.Contains(t, msg, "Parent idea not found")
		var v IdeaView
		ok(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": child}, &v)
		require.Nil(t, v.ParentUUID)
		ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": child}, nil) // not wedged
		require.Zero(t, activityCount(t, e.st, child, "reparented"))

		other := createIdea(t, admin, project, "Theme 2", map[string]any{"isContainer": true})
		e.faults.OnceBefore("ApplyIdeaChange", func() {
			ok(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": other}, nil)
		})
		msg = fails(t, admin, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "Orphan",
			"parentUuid": other, "requestId": "create"})
		require.Contains(t, msg, "Parent idea not found")
		n, err := e.st.DB.NewSelect().Table("ideas").Where("title = ?", "Orphan").Count(context.Background())
		require.NoError(t, err)
		require.Zero(t, n)
		e.requireAgreement() // and no workflow is left without its row
	})
}

// Two ideas reparented under each other at once: the second write sees the first and is
// refused as a cycle, on both databases.
func TestConcurrentReparentingMakesNoCycle(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.client(e.agent("PM", perm.PMAgent))
		project := createProject(t, admin, "Apollo")
		a := createIdea(t, admin, project, "A", map[string]any{"isContainer": true})
		b := createIdea(t, admin, project, "B", map[string]any{"isContainer": true})

		// B under A is checked (no cycle yet); before it is written, A goes under B.
		e.faults.OnceBefore("ApplyIdeaChange", func() {
			ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": a, "parentUuid": b}, nil)
		})
		msg := fails(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": b, "parentUuid": a})
		require.Contains(t, msg, "would create a cycle")
		var va, vb IdeaView
		ok(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": a}, &va)
		ok(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": b}, &vb)
		require.Equal(t, b, *va.ParentUUID)
		require.Nil(t, vb.ParentUUID)
		e.requireAgreement()
	})
}

// A claim commits, its worker dies before reporting, and the proposal is revoked before the
// claim's retry: the retry finds its change in the change journal, so the claim succeeds (it
// did happen) and the task then follows the revoke; no false "nothing was changed", and the
// workflow and the row agree.
func TestCommittedClaimOvertakenByRevoke(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, admin, project, "Idea")
		proposal, _ := fullProposal(t, pm, project, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		task := pv.MaterializedTasks[0].TaskUUID

		// The claim commits; its acknowledgement is lost; the revoke runs before the retry.
		e.faults.FailAfterCommit("ApplyTaskChange", 1)
		e.faults.OnceBefore("ApplyTaskChange", func() {}) // the claim's first attempt
		e.faults.OnceBefore("ApplyTaskChange", func() {   // its retry
			ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, nil)
		})
		var tv TaskView
		ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, &tv)
		// The claim succeeded; its view is read from the row, which the revoke has closed since.
		require.Contains(t, []string{"assigned", "closed"}, tv.Status)
		require.Equal(t, 1, activityCount(t, e.st, task, "assigned"))
		require.Equal(t, 1, e.faults.Injected("ApplyTaskChange"))
		ok(t, dev, "chorus_get_task", map[string]any{"taskUuid": task}, &tv)
		require.Equal(t, "closed", tv.Status)
		e.requireAgreement()
	})
}

// A call times out, its command is applied, and the workflow then forgets the update (here an
// operator terminates it and ops repair starts a new run from the rows; continue-as-new past the
// recent-updates list does the same): the retry with the same requestId must not apply the
// command again. The change journal knows it was applied.
func TestRetryAfterTheWorkflowForgotTheUpdate(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		args := map[string]any{"taskUuid": task, "report": "REPORT-Y", "requestId": "rid-Y"}
		ok(t, admin, "chorus_report_work", args, nil)
		reports := func() int {
			n, err := e.st.DB.NewSelect().Table("comments").Where("content LIKE ?", "%REPORT-Y%").Count(ctx)
			require.NoError(t, err)
			return int(n)
		}
		require.Equal(t, 1, reports())

		// The first call's answer was lost: its ledger row still says running.
		_, err := e.st.DB.NewUpdate().Table("tool_requests").Set("state = 'running'").Set("result = NULL").
			Where("request_id = ?", "rid-Y").Exec(ctx)
		require.NoError(t, err)
		// The workflow forgets the update: terminated, then restarted from its row.
		require.NoError(t, e.tc.TerminateWorkflow(ctx, vocab.TaskID(task), "", "test"))
		e.repairOnly(t, ops.ClosedWorkflow)

		msg := fails(t, admin, "chorus_report_work", args)
		require.True(t, strings.HasPrefix(msg, "This requestId's command was already carried out"), msg)
		require.Equal(t, 1, reports(), "the retry did not apply the report again")
		require.Equal(t, msg, fails(t, admin, "chorus_report_work", args), "the ledger keeps that outcome")
		require.Equal(t, 1, reports())
		e.requireAgreement()
	})
}

// A call whose answer was lost is retried while its workflow still remembers the update: the
// retry gets the first call's own result, not a new application and not the fallback answer.
func TestRetryGetsTheResultWhileTheWorkflowRemembers(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	task := createTask(t, admin, project)
	var first TaskView
	ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, &first)
	_, err := e.st.DB.NewUpdate().Table("tool_requests").Set("state = 'running'").Set("result = NULL").
		Where("request_id = ?", "claim").Exec(ctx)
	require.NoError(t, err)
	var again TaskView
	ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, &again)
	require.Equal(t, first, again)
	require.Equal(t, 1, activityCount(t, e.st, task, "assigned"))
	e.requireAgreement()
}

// resetTo resets the workflow id to the end of the workflow task completed before the update
// accepted n-th from last (n = 0: the last workflow task), with Temporal's default of
// re-applying the signals and updates that came after.
func resetTo(t *testing.T, e *env, id string, n int) { reset(t, e, id, n) }

// rollBack is resetTo without re-applying anything (`--reapply-exclude All`): the workflow goes
// back to before its last n updates, and its rows stay where they were.
func rollBack(t *testing.T, e *env, id string, n int) {
	reset(t, e, id, n, enumspb.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL, enumspb.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE)
}

func reset(t *testing.T, e *env, id string, n int, exclude ...enumspb.ResetReapplyExcludeType) {
	t.Helper()
	ctx := context.Background()
	var completed, accepted []int64
	var lastCompleted int64
	it := e.tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			lastCompleted = ev.GetEventId()
			completed = append(completed, lastCompleted)
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			accepted = append(accepted, lastCompleted)
		}
	}
	to := completed[len(completed)-1]
	if n > 0 {
		to = accepted[len(accepted)-n]
	}
	_, err := e.tc.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{Namespace: workflows.Namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id}, Reason: "test", WorkflowTaskFinishEventId: to,
		RequestId: store.NewUUID(), ResetReapplyExcludeTypes: exclude})
	require.NoError(t, err)
}

// A reset that changes nothing (to the last workflow task), and a reset to before the last two
// updates with those updates re-applied: the workflow ends where it was, naming the same
// changes and the same child rows (rounds, questions, criteria) as the rows, so ops check stays
// clean and the next commands work. Ids that depended on the run id made every such reset a
// divergence that ops repair could not clear.
func TestResetThatReappliesUpdatesKeepsAgreement(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")

		// An idea in elaboration: the round's and questions' ids come from the change.
		idea := createIdea(t, admin, project, "Idea", nil)
		ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
		ok(t, admin, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, nil)
		resetTo(t, e, vocab.IdeaID(idea), 0)
		e.requireAgreement()
		var round RoundView
		ok(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
			"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}}}, &round)
		require.Equal(t, "answered", round.Status)
		require.NotNil(t, round.Questions[0].Answer, "the answer is stored on the question row")
		e.requireAgreement()

		// A task whose criteria were replaced, then started; reset to before those two updates.
		var created CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "old"}}}}}, &created)
		task := created.Tasks[0].UUID
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "acceptanceCriteriaItems": []map[string]any{{"description": "new"}}}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, nil)
		resetTo(t, e, vocab.TaskID(task), 2)
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, vocab.TaskID(task), "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "in_progress"
		}, "the re-applied updates bring the task back to in_progress")
		e.requireAgreement()
		var tv TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &tv)
		require.Len(t, tv.AcceptanceCriteriaItems, 1)
		ok(t, admin, "chorus_report_criteria_self_check", map[string]any{"taskUuid": task, "criteria": []map[string]any{
			{"uuid": tv.AcceptanceCriteriaItems[0].UUID, "devStatus": "passed", "devEvidence": "tested"}}}, nil)
		require.Equal(t, 1, activityCount(t, e.st, task, "assigned"), "nothing applied twice")
		e.requireAgreement()
	})
}

// A reset that drops a proposal's draft updates leaves the row holding a draft the workflow does
// not know, added by a command its agent was told succeeded: ops repair makes the workflow follow
// the row forward (a new run from the row), keeping the draft. A draft the workflow holds but
// the row lost (a database edit, which the change journal does not list) is reported, not
// invented, and the row follows the workflow.
func TestResetThatDropsDraftsIsRepaired(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, pm, project, "Idea")
		proposal, drafts := fullProposal(t, pm, project, idea)
		var extra DraftOut
		ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": "Extra",
			"dependsOnDraftUuids": []string{drafts[2]}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, &extra)

		// Reset to before the last update (the extra draft) without re-applying it.
		id := vocab.ProposalID(proposal)
		rollBack(t, e, id, 1)
		requireEventually(t, func() bool {
			var s workflows.ProposalState
			v, err := e.tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && len(s.Tasks) == 3
		}, "the reset workflow holds three task drafts")

		f, did := e.repairOnly(t, ops.Diverged)
		require.Contains(t, f.Detail, "task drafts")
		require.Contains(t, did, "ended the run and started a new run from the rows")
		e.requireAgreement()

		p, err := e.st.ProposalDrafts(ctx, proposal)
		require.NoError(t, err)
		var kept []string
		for _, d := range p.TaskDrafts {
			kept = append(kept, d.UUID)
		}
		require.Equal(t, append(drafts, extra.DraftUUID), kept, "the extra draft its agent was told of stays")
		require.Equal(t, "Schema work", *p.TaskDrafts[0].Description, "drafts keep their content")
		require.Len(t, p.DocumentDrafts, 2)

		// The proposal works again: a draft the PM adds now lands in both.
		ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": "Again",
			"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, nil)
		e.requireAgreement()

		// A draft lost from the row (a database edit) is reported by repair, not recreated.
		p, err = e.st.ProposalDrafts(ctx, proposal)
		require.NoError(t, err)
		require.Len(t, p.TaskDrafts, 5)
		lost := p.TaskDrafts[0].UUID
		_, err = e.st.DB.NewUpdate().Table("proposals").Set("task_drafts = ?", mustJSON(t, p.TaskDrafts[1:])).
			Set("version = version + 1").Where("uuid = ?", proposal).Exec(ctx)
		require.NoError(t, err)
		_, did = e.repairOnly(t, ops.Diverged)
		require.Contains(t, did, "The row lost 1 of the drafts the workflow holds")
		p, err = e.st.ProposalDrafts(ctx, proposal)
		require.NoError(t, err)
		for _, d := range p.TaskDrafts {
			require.NotEqual(t, lost, d.UUID)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// A reset with Temporal's default re-application delivers the updates after the reset point
// together, in one workflow task. Each must be judged on the state the ones before it leave:
// claiming a task and then starting it are re-applied as a claim and a start, not a claim and a
// start refused because the task was still open when it arrived (which left the row ahead of the
// workflow, and ops repair undoing a command its agent had been told succeeded). The times those
// commands set are the re-application's: ops check may list them, and ops repair aligns them.
func TestResetReappliesUpdatesThatDependOnEachOther(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress", "title": "Renamed"}, nil)

		resetTo(t, e, vocab.TaskID(task), 2)
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, vocab.TaskID(task), "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "in_progress"
		}, "both re-applied updates bring the task back to in_progress")
		// The re-applied claim is the same change (the row already holds it), but the workflow
		// took the time of its re-application: only that time may differ, and repair aligns it.
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
		var tv TaskView
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &tv)
		require.Equal(t, "Renamed", tv.Title)
		require.Equal(t, "in_progress", tv.Status)
		ok(t, admin, "chorus_submit_for_verify", map[string]any{"taskUuid": task}, nil)
		e.requireAgreement()
	})
}
