package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

var longText = strings.Repeat("This section explains the change in enough detail for a reviewer. ", 3)

// pmWithIdeaAdmin makes a PM agent that may also resolve elaboration (custom bit idea:admin).
func (e *env) pmWithIdeaAdmin(name string) *mcpsdk.ClientSession {
	e.t.Helper()
	owner := e.owner
	_, key, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: name,
		Roles: []string{perm.PMAgent}, Permissions: []string{"idea:admin"}, OwnerUUID: &owner})
	require.NoError(e.t, err)
	return e.client(key)
}

// elaboratedIdea drives an idea to elaborated through one answered round.
func elaboratedIdea(t *testing.T, pm, answerer *mcpsdk.ClientSession, project, title string) string {
	t.Helper()
	idea := createIdea(t, pm, project, title, nil)
	ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	ok(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, nil)
	ok(t, answerer, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
		"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}, {"questionId": "q2", "selectedOptionId": nil, "customText": "Q3"}}}, nil)
	ok(t, pm, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}, nil)
	return idea
}

// fullProposal creates a proposal on idea with a PRD, a tech design and three chained task drafts.
func fullProposal(t *testing.T, pm *mcpsdk.ClientSession, project, idea string) (string, []string) {
	t.Helper()
	var p CreatedProposal
	ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "SSO rollout",
		"description": "Deliver SSO", "inputType": "idea", "inputUuids": []string{idea}}, &p)
	require.Equal(t, "draft", p.Status)
	for _, typ := range []string{"prd", "tech_design"} {
		ok(t, pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": p.UUID, "type": typ,
			"title": strings.ToUpper(typ), "content": longText}, nil)
	}
	var drafts []string
	for i, title := range []string{"Schema", "API", "UI"} {
		args := map[string]any{"proposalUuid": p.UUID, "title": title, "description": title + " work",
			"priority": "high", "storyPoints": "2.5", "kind": "implementation",
			"acceptanceCriteriaItems": []map[string]any{{"description": title + " works"}, {"description": "  docs updated ", "required": false}}}
		if i > 0 {
			args["dependsOnDraftUuids"] = []string{drafts[i-1]}
		}
		var d DraftOut
		ok(t, pm, "chorus_pm_add_task_draft", args, &d)
		require.Equal(t, "task_draft_added", d.Action)
		drafts = append(drafts, d.DraftUUID)
	}
	return p.UUID, drafts
}

func TestIdeaToApprovedProposal(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, dev, project, "Single sign-on")
		proposal, drafts := fullProposal(t, pm, project, idea)

		var v ValidationOut
		ok(t, pm, "chorus_pm_validate_proposal", map[string]any{"proposalUuid": proposal}, &v)
		require.True(t, v.Valid, "%+v", v.Issues)
		for _, is := range v.Issues {
			require.NotEqual(t, "error", is.Level, is.Message)
		}

		var st StatusOut
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, &st)
		require.Equal(t, "pending", st.Status)
		var iv IdeaView
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Equal(t, "human_conduct_required", iv.DerivedStatus, "a pending proposal waits for review")

		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "ship it"}, &pv)
		require.Equal(t, "approved", pv.Status)
		require.Len(t, pv.MaterializedTasks, 3)
		require.Len(t, pv.MaterializedDocuments, 2)

		// Three open tasks with the right edges, criteria and values; two documents.
		taskOf := map[string]string{}
		for _, m := range pv.MaterializedTasks {
			taskOf[m.DraftUUID] = m.TaskUUID
		}
		var tasks []store.Task
		require.NoError(t, e.st.DB.NewSelect().Model(&tasks).Where("proposal_uuid = ?", proposal).Scan(ctx))
		require.Len(t, tasks, 3)
		for _, task := range tasks {
			require.Equal(t, "open", string(task.Status))
			require.Equal(t, "high", task.Priority)
			require.InDelta(t, 2.5, *task.StoryPoints, 0.001)
		}
		var deps []store.TaskDependency
		require.NoError(t, e.st.DB.NewSelect().Model(&deps).Where("task_uuid IN (?)", bunIn(taskOf)).Scan(ctx))
		require.Len(t, deps, 2)
		require.True(t, slices.ContainsFunc(deps, func(d store.TaskDependency) bool {
			return d.TaskUUID == taskOf[drafts[1]] && d.DependsOnUUID == taskOf[drafts[0]]
		}))
		require.True(t, slices.ContainsFunc(deps, func(d store.TaskDependency) bool {
			return d.TaskUUID == taskOf[drafts[2]] && d.DependsOnUUID == taskOf[drafts[1]]
		}))
		var acs []store.AcceptanceCriterion
		require.NoError(t, e.st.DB.NewSelect().Model(&acs).Where("task_uuid = ?", taskOf[drafts[0]]).Order("sort_order").Scan(ctx))
		require.Len(t, acs, 2)
		require.Equal(t, "docs updated", acs[1].Description)
		require.False(t, acs[1].Required)
		var docs DocumentList
		ok(t, pm, "chorus_get_documents", map[string]any{"projectUuid": project}, &docs)
		require.Equal(t, 2, docs.Total)

		// Each task has its own running workflow, visible to operators by status.
		for _, id := range taskOf {
			desc, err := wftest.Server(t).Client().DescribeWorkflow(ctx, vocab.TaskID(id), "")
			require.NoError(t, err)
			require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.RawResponse.WorkflowExecutionInfo.Status)
		}
		require.Equal(t, 1, activityCount(t, e.st, proposal, "approved"))
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Equal(t, "in_progress", iv.DerivedStatus)

		// The completion report: once, then only with force.
		var rep CreatedReport
		ok(t, pm, "chorus_create_report", map[string]any{"proposalUuid": proposal, "title": "Done", "content": "All shipped"}, &rep)
		require.Equal(t, 1, rep.Version)
		require.Contains(t, fails(t, pm, "chorus_create_report", map[string]any{"proposalUuid": proposal, "title": "Again", "content": "x"}),
			"A report already exists for this proposal")
		ok(t, pm, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
		require.Len(t, iv.Reports, 1)
		require.Equal(t, 1, activityCount(t, e.st, idea, "report_created"))

		// Revoke closes the tasks, deletes the documents and returns the proposal to draft.
		var rv Revoked
		ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, &rv)
		require.Equal(t, "draft", rv.Status)
		require.Len(t, rv.ClosedTasks, 3)
		require.Len(t, rv.DeletedDocuments, 3)
		for _, id := range taskOf {
			requireEventually(t, func() bool {
				var s workflows.TaskState
				v, err := wftest.Server(t).Client().QueryWorkflow(ctx, vocab.TaskID(id), "", workflows.QueryState)
				return err == nil && v.Get(&s) == nil && s.Status == "closed"
			}, "task workflow %s follows the revoke", id)
		}
		ok(t, pm, "chorus_get_documents", map[string]any{"projectUuid": project}, &docs)
		require.Equal(t, 0, docs.Total)

		// Re-submit and re-approve: a fresh set of tasks.
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		n, err := e.st.DB.NewSelect().Model((*store.Task)(nil)).Where("proposal_uuid = ?", proposal).Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 6, n)
		e.requireAgreement()
	})
}

func bunIn(m map[string]string) any {
	var ids []string
	for _, v := range m {
		ids = append(ids, v)
	}
	return bunInSlice(ids)
}

func TestIllegalProposalTransitions(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	otherPM := e.client(e.agent("Other", perm.PMAgent))
	project := createProject(t, admin, "Apollo")
	idea := elaboratedIdea(t, pm, admin, project, "Idea")

	// Only ideas the caller holds can be inputs; themes never.
	require.Contains(t, fails(t, otherPM, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "x",
		"inputType": "idea", "inputUuids": []string{idea}}), "Can only create Proposals based on Ideas you have claimed")

	var p CreatedProposal
	ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Empty",
		"inputType": "idea", "inputUuids": []string{idea}}, &p)

	// Submitting an empty draft lists every issue and changes nothing.
	msg := fails(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": p.UUID})
	require.True(t, strings.HasPrefix(msg, "Failed to submit Proposal: Proposal validation failed:\n[error] Proposal must contain at least one PRD document draft"), msg)
	require.Contains(t, msg, "[error] Proposal must contain at least one task draft")
	require.Contains(t, msg, "[warning] Proposal description should not be empty")

	for tool, want := range map[string]string{
		"chorus_admin_approve_proposal": "Can only approve pending Proposals, current status: draft",
		"chorus_admin_close_proposal":   "Can only close pending Proposals, current status: draft",
		"chorus_pm_reject_proposal":     "Can only reject pending Proposals, current status: draft",
		"chorus_pm_revoke_proposal":     "Can only revoke approved Proposals, current status: draft",
	} {
		require.Contains(t, fails(t, admin, tool, map[string]any{"proposalUuid": p.UUID, "reviewNote": "n"}), want, tool)
	}
	// A task draft without criteria is refused; unknown drafts are reported.
	require.Contains(t, fails(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": p.UUID, "title": "T",
		"acceptanceCriteriaItems": []map[string]any{{"description": "   "}}}), "Failed to add task draft: Acceptance criteria are required")
	require.Equal(t, "Failed to update task draft: Task draft not found", fails(t, pm, "chorus_pm_update_task_draft",
		map[string]any{"proposalUuid": p.UUID, "draftUuid": store.NewUUID(), "title": "x"}))

	// A self, unknown and cyclic dependency each show in validation.
	var a, b DraftOut
	ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": p.UUID, "title": "A",
		"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, &a)
	ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": p.UUID, "title": "B", "dependsOnDraftUuids": []string{a.DraftUUID},
		"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, &b)
	unknown := store.NewUUID()
	ok(t, pm, "chorus_pm_update_task_draft", map[string]any{"proposalUuid": p.UUID, "draftUuid": a.DraftUUID,
		"dependsOnDraftUuids": []string{b.DraftUUID, a.DraftUUID, unknown}}, nil)
	var v ValidationOut
	ok(t, pm, "chorus_pm_validate_proposal", map[string]any{"proposalUuid": p.UUID}, &v)
	ids := []string{}
	for _, is := range v.Issues {
		ids = append(ids, is.ID)
	}
	require.Contains(t, ids, "E-DEP-UNKNOWN")
	require.Contains(t, ids, "E-DEP-SELF")
	require.Contains(t, ids, "E-DEP-CYCLE")
	// Removing B strips it from A's dependencies.
	ok(t, pm, "chorus_pm_remove_task_draft", map[string]any{"proposalUuid": p.UUID, "draftUuid": b.DraftUUID}, nil)
	var pv ProposalView
	ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": p.UUID, "section": "tasks"}, &pv)
	require.Len(t, *pv.TaskDrafts, 1)
	require.Equal(t, []string{a.DraftUUID, unknown}, (*pv.TaskDrafts)[0].DependsOnDraftUUIDs)
	// No document drafts: an empty list, not null (issue 19).
	res0 := call(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": p.UUID, "section": "full"})
	var raw struct{ DocumentDrafts json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(text(res0)), &raw))
	require.JSONEq(t, `[]`, string(raw.DocumentDrafts))

	// A second proposal on the same idea is told about the first (docs/rules.md §8.11): JSON, then a note.
	res := call(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Second",
		"inputType": "idea", "inputUuids": []string{idea}})
	require.False(t, res.IsError, text(res))
	jsonPart, note, found := strings.Cut(text(res), "\nNote: ")
	require.True(t, found, text(res))
	require.True(t, json.Valid([]byte(jsonPart)), jsonPart)
	require.Equal(t, `Idea is also referenced by existing Proposal(s): "Empty"`, note)
	// The note is a field of the structured result too: some clients show the model nothing else.
	require.Equal(t, note, decode[CreatedProposal](t, res).NoteText)
	sc, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.JSONEq(t, jsonPart, string(sc), "the text's JSON is the structured result")

	// Approved proposals refuse draft edits; another PM cannot revoke it.
	proposal, _ := fullProposal(t, pm, project, idea)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	require.Contains(t, fails(t, pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": proposal, "type": "adr",
		"title": "x", "content": "y"}), "Failed to add document draft: Proposal not found or not in draft status")
	require.Contains(t, fails(t, otherPM, "chorus_pm_reject_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "no"}),
		"You can only reject your own proposals")
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, nil)
	require.Contains(t, fails(t, otherPM, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}),
		"You can only revoke your own proposals")
	require.Contains(t, fails(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}),
		"Can only approve pending Proposals, current status: approved")
	e.requireAgreement()
}

func TestConcurrentApprovalsAndDraftEdits(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	admin2 := e.client(e.agent("Admin 2", perm.AdminAgent))
	pm := e.pmWithIdeaAdmin("PM")
	project := createProject(t, admin, "Apollo")
	idea := elaboratedIdea(t, pm, admin, project, "Idea")
	proposal, _ := fullProposal(t, pm, project, idea)

	// Ten agents edit ten different drafts at once: every edit survives.
	for i := range 7 {
		ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": proposal, "title": fmt.Sprintf("Extra %d", i),
			"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, nil)
	}
	var pv ProposalView
	ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": proposal, "section": "tasks"}, &pv)
	var drafts []string
	for _, d := range *pv.TaskDrafts {
		drafts = append(drafts, d.UUID)
	}
	require.Len(t, drafts, 10)
	var wg sync.WaitGroup
	for i, d := range drafts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := e.client(e.agent(fmt.Sprintf("editor-%d", i), perm.PMAgent))
			ok(t, s, "chorus_pm_update_task_draft", map[string]any{"proposalUuid": proposal, "draftUuid": d,
				"title": fmt.Sprintf("edited %d", i)}, nil)
		}()
	}
	wg.Wait()
	ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": proposal, "section": "tasks"}, &pv)
	for i, d := range *pv.TaskDrafts {
		require.Equal(t, fmt.Sprintf("edited %d", i), d.Title)
	}

	// Two admins approve at once: one wins, the other is told why.
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	results := make([]*mcpsdk.CallToolResult, 2)
	for i, s := range []*mcpsdk.ClientSession{admin, admin2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = call(t, s, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal})
		}()
	}
	wg.Wait()
	wins := 0
	for _, r := range results {
		if !r.IsError {
			wins++
		} else {
			require.Contains(t, text(r), "Can only approve pending Proposals, current status: approved")
		}
	}
	require.Equal(t, 1, wins)
	n, err := e.st.DB.NewSelect().Model((*store.Task)(nil)).Where("proposal_uuid = ?", proposal).Count(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 10, n)
	e.requireAgreement()
}
