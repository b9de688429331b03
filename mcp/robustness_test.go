package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Inputs found by trying the product the way users (and careless agents) do. Each used to end
// in an internal error, a stuck entity or a leak; each must now get a clear answer that changes
// nothing.

func TestHostileStringsAreRefusedByName(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "a\x00b"}, "Input validation error: title must not contain NUL characters"},
		{"chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "t", "content": strings.Repeat("x", maxLongText+1)},
			fmt.Sprintf("Input validation error: content must be at most %d characters long, got %d", maxLongText, maxLongText+1)},
		{"chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": strings.Repeat("t", maxShortText+1)},
			fmt.Sprintf("Input validation error: title must be at most %d characters long", maxShortText)},
		{"chorus_admin_create_project", map[string]any{"name": "x\x00y"}, "Input validation error: name must not contain NUL characters"},
		{"chorus_list_tasks", map[string]any{"projectUuid": project, "page": 99999999999999999999.0}, "Input validation error: page must be at most 1000000"},
		{"chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{{"title": "t", "storyPoints": -3,
			"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, "Input validation error: tasks[0].storyPoints must be at least 0"},
		{"chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "a", "draftUuid": "d", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "b", "draftUuid": "d", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}},
			`Input validation error: tasks: draftUuid "d" is used by two tasks`},
	}
	for _, c := range cases {
		msg := fails(t, admin, c.tool, c.args)
		require.True(t, strings.HasPrefix(msg, c.want), "%s: got %q, want prefix %q", c.tool, msg, c.want)
	}
	var list IdeaList
	ok(t, admin, "chorus_get_ideas", map[string]any{"projectUuid": project}, &list)
	require.Equal(t, 0, list.Total)
	var tasks TaskList
	ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &tasks)
	require.Equal(t, 0, tasks.Total)
}

func TestLenientNumbersAndUUIDCase(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": strings.ToUpper(project), "tasks": []map[string]any{
		{"title": "t", "storyPoints": "+3", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": strings.ToUpper(created.Tasks[0].UUID)}, &v)
	require.InDelta(t, 3.0, *v.StoryPoints, 0.0001)
	require.Equal(t, created.Tasks[0].UUID, v.UUID)
	ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": strings.ToUpper(created.Tasks[0].UUID)}, &v)
	require.Equal(t, "assigned", v.Status)

	// Nothing asked of chorus_update_task changes nothing.
	var again TaskView
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": v.UUID}, &again)
	require.Equal(t, v.UpdatedAt, again.UpdatedAt)
}

func TestQuestionIDsMustNotBeEmpty(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	idea := createIdea(t, admin, project, "Idea", nil)
	ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	qs := twoQuestions()
	qs[1]["id"] = " "
	require.Equal(t, "Failed to start elaboration: Every question needs a non-empty id (answers refer to it)",
		fails(t, admin, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": qs}))
}

func TestProposalDraftsStayWithinTheirBudget(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	pm := e.pmWithIdeaAdmin("PM")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	idea := elaboratedIdea(t, pm, admin, project, "Idea")
	proposal, _ := fullProposal(t, pm, project, idea)
	big := strings.Repeat("z", maxLongText-10)
	var refused string
	for i := range 12 {
		res := call(t, pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": proposal, "type": "spec",
			"title": fmt.Sprintf("Spec %d", i), "content": big})
		if res.IsError {
			refused = text(res)
			break
		}
	}
	require.Contains(t, refused, "Failed to add document draft: the proposal's drafts would take")
	// The proposal still works: remove a draft, submit, approve.
	var pv ProposalView
	ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	ok(t, pm, "chorus_pm_remove_document_draft", map[string]any{"proposalUuid": proposal, "draftUuid": pv.DocumentDraftIndex[2].UUID}, nil)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	require.Equal(t, "approved", pv.Status)
	e.requireAgreement()
}

func TestAssigningIntoAPrivateProjectNeedsAccess(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	var p CreatedProject
	ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Secret", "visibility": "private"}, &p)
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": p.UUID, "tasks": []map[string]any{
		{"title": "Hidden work", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)

	stranger, err := e.st.EnsureUser(ctx, e.company, "stranger@example.com", "Stranger")
	require.NoError(t, err)
	outsider, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "Outsider",
		Roles: []string{perm.DeveloperAgent}, OwnerUUID: &stranger.UUID})
	require.NoError(t, err)
	msg := fails(t, admin, "chorus_pm_assign_task", map[string]any{"taskUuid": created.Tasks[0].UUID, "agentUuid": outsider.UUID})
	require.Contains(t, msg, `Agent "Outsider" cannot work in this task's project`)

	var ci CheckinOut
	ok(t, e.client(key), "chorus_checkin", nil, &ci)
	require.Empty(t, ci.Notifications.Recent, "nothing about the private project reached the outsider")
	n, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("recipient_uuid = ?", outsider.UUID).Count(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// An ownerless agent may not make a private project no one could reach.
	_, noOwnerKey, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "Orphan", Roles: []string{perm.AdminAgent}})
	require.NoError(t, err)
	require.Contains(t, fails(t, e.client(noOwnerKey), "chorus_admin_create_project", map[string]any{"name": "x", "visibility": "private"}),
		"An agent without an owner cannot create a private project")
}

func TestParallelRetriesWithOneRequestID(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	results := make([]string, 12)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := call(t, admin, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": "Once", "requestId": "same"})
			if res.IsError {
				results[i] = "error: " + text(res)
				return
			}
			results[i] = decode[CreatedIdea](t, res).UUID
		}()
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, results[0], r)
	}
	var list IdeaList
	ok(t, admin, "chorus_get_ideas", map[string]any{"projectUuid": project}, &list)
	require.Equal(t, 1, list.Total)
}

func TestScopingHeadersOnMyAssignments(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	a, b := createProject(t, admin, "A"), createProject(t, admin, "B")
	for _, p := range []string{a, b} {
		var c CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": p, "tasks": []map[string]any{
			{"title": "t", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &c)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": c.Tasks[0].UUID}, nil)
	}
	tracker := func(headers map[string]string) map[string]TaskTrackerEntry {
		req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chorus_get_my_assignments","arguments":{}}}`))
		req.Header.Set("Authorization", "Bearer "+e.adminKey)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body struct {
			Result struct {
				StructuredContent MyAssignments `json:"structuredContent"`
			} `json:"result"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return body.Result.StructuredContent.TaskTracker
	}
	require.Len(t, tracker(nil), 2)
	require.Len(t, tracker(map[string]string{"X-Chorus-Project": " " + strings.ToUpper(a) + " ,"}), 1)
	require.Contains(t, tracker(map[string]string{"X-Chorus-Project": a}), a)
	require.Empty(t, tracker(map[string]string{"X-Chorus-Project": store.NewUUID()}))
	require.Empty(t, tracker(map[string]string{"X-Chorus-Project-Group": store.NewUUID()}), "an unknown group scopes to nothing (docs/rules.md §8.8)")
	require.Empty(t, tracker(map[string]string{"X-Chorus-Project-Group": store.NewUUID(), "X-Chorus-Project": a}), "the group wins")

	// A real group: its projects, and only those.
	var g GroupView
	ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "G"}, &g)
	ok(t, admin, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": b, "groupUuid": g.UUID}, nil)
	scoped := tracker(map[string]string{"X-Chorus-Project-Group": strings.ToUpper(g.UUID), "X-Chorus-Project": a})
	require.Len(t, scoped, 1)
	require.Contains(t, scoped, b)
}

func TestMalformedBodiesGetJSONRPCErrors(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := "Bearer " + e.adminKey
	for body, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,`: -32700,
		`"x"`:                      -32600,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`: -32600,
		`{"jsonrpc":"2.0","id":1}`:                 -32600,
		`[]`:                                       -32600,
	} {
		resp, got := e.rawPost(auth, body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		require.Contains(t, resp.Header.Get("Content-Type"), "application/json", body)
		var m struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(got), &m), got)
		require.Equal(t, want, m.Error.Code, body)
	}
}

// A uuid is accepted in any case wherever it appears, at the top level or inside
// arrays and objects, whatever the field is called; a value that is not a uuid is refused by
// name and changes nothing.
func TestUUIDsAreCaseInsensitiveAtAnyDepth(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	project := createProject(t, admin, "Apollo")
	up := strings.ToUpper

	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": up(project), "tasks": []map[string]any{
		{"title": "T0", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "T1", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "T2", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	t0, t1, t2 := created.Tasks[0].UUID, created.Tasks[1].UUID, created.Tasks[2].UUID

	// The case as filed: addDependsOn with an upper-case uuid.
	var v TaskView
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": t2, "addDependsOn": []string{up(t0), up(t1)}}, &v)
	require.Empty(t, v.Warnings)
	require.Len(t, v.DependsOn, 2)
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": up(t2), "removeDependsOn": []string{up(t1)}}, &v)
	require.Len(t, v.DependsOn, 1)
	require.Equal(t, t0, v.DependsOn[0].UUID)

	// Inside objects in arrays: criterion uuids of a self-check.
	ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": up(t0)}, nil)
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": t0, "status": "in_progress"}, nil)
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": t0}, &v)
	var checked CriteriaOut
	ok(t, admin, "chorus_report_criteria_self_check", map[string]any{"taskUuid": up(t0), "criteria": []map[string]any{
		{"uuid": up(v.AcceptanceCriteriaItems[0].UUID), "devStatus": "passed"}}}, &checked)
	require.Equal(t, "passed", checked.Items[0].DevStatus)

	// Proposal inputs and draft dependencies.
	idea := elaboratedIdea(t, pm, admin, project, "Idea")
	var p CreatedProposal
	ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "P", "inputType": "idea",
		"inputUuids": []string{up(idea)}}, &p)
	var a, b DraftOut
	ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": up(p.UUID), "title": "A",
		"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, &a)
	ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": p.UUID, "title": "B",
		"dependsOnDraftUuids": []string{up(a.DraftUUID)}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}, &b)
	var pv ProposalView
	ok(t, pm, "chorus_get_proposal", map[string]any{"proposalUuid": p.UUID, "section": "tasks"}, &pv)
	require.Equal(t, []string{a.DraftUUID}, (*pv.TaskDrafts)[1].DependsOnDraftUUIDs)

	// create_tasks labels that are uuids match in any case too.
	label := store.NewUUID()
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "L0", "draftUuid": label, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
		{"title": "L1", "dependsOnDraftUuids": []string{up(label)}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	require.Empty(t, created.Warnings)
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": created.Tasks[1].UUID}, &v)
	require.Len(t, v.DependsOn, 1)

	// Not a uuid, at any depth: refused by name, nothing changes.
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"chorus_update_task", map[string]any{"taskUuid": t2, "addDependsOn": []string{t1, "T0"}}, `addDependsOn[1] must be a uuid`},
		{"chorus_report_criteria_self_check", map[string]any{"taskUuid": t0, "criteria": []map[string]any{
			{"uuid": "first", "devStatus": "passed"}}}, `criteria[0].uuid must be a uuid`},
		{"chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "P", "inputType": "idea",
			"inputUuids": []string{idea + "x"}}, `inputUuids[0] must be a uuid`},
		{"chorus_get_task", map[string]any{"taskUuid": ""}, `taskUuid must be a uuid`},
	} {
		msg := fails(t, admin, c.tool, c.args)
		require.True(t, strings.HasPrefix(msg, "Input validation error: "+c.want), "%s: %s", c.tool, msg)
	}
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": t2}, &v)
	require.Len(t, v.DependsOn, 1)
	e.requireAgreement()
}

// Equivalent calls are the same call: for the requestId ledger (labels that are uuids in another
// case or spelling) and for the handler (a dependency named twice).
func TestEquivalentCallsAreOneCall(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	label := store.NewUUID()
	tasks := func(def, use string) []map[string]any {
		return []map[string]any{
			{"title": "L0", "draftUuid": def, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "L1", "dependsOnDraftUuids": []string{use}, "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}
	}
	var first, retry CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "requestId": "r1",
		"tasks": tasks(label, strings.ToUpper(label))}, &first)
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "requestId": "r1",
		"tasks": tasks("{"+strings.ToUpper(label)+"}", "urn:uuid:"+label)}, &retry)
	require.Equal(t, first.Tasks, retry.Tasks, "the retry returns the first result")
	require.Empty(t, first.Warnings)

	var other CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &other)
	var v TaskView
	ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": other.Tasks[0].UUID,
		"addDependsOn": []string{first.Tasks[0].UUID, strings.ToUpper(first.Tasks[0].UUID)}}, &v)
	require.Empty(t, v.Warnings, "naming one dependency twice adds it once, with no warning")
	require.Len(t, v.DependsOn, 1)

	// Numbers sent as strings must be written as decimal numbers.
	for _, page := range []string{"1_000", "0x1p4", "1e", "--1"} {
		msg := fails(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project, "page": page})
		require.Equal(t, fmt.Sprintf("Input validation error: page must be an integer, got %q", page), msg)
	}
	var list TaskList
	ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project, "page": "+1", "pageSize": "1e1"}, &list)
	require.Equal(t, 10, list.PageSize)
	e.requireAgreement()
}

// No sequence of schema-valid calls pushes a payload, a history or a continue-as-new
// input past Temporal's limits. A call too large for one payload is refused up front, naming
// the limit; a long sequence keeps the workflow's state small, and the idea stays usable.
func TestPayloadsStayWithinTemporalLimits(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	emoji := func(n int) string { return strings.Repeat("\U0001F600", n) }

	// A: six tasks of 100,000 emoji each: every field within its schema, the call far over budget.
	var tasks []map[string]any
	for i := range 6 {
		tasks = append(tasks, map[string]any{"title": fmt.Sprintf("T%d", i), "description": emoji(100_000),
			"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}})
	}
	msg := fails(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks})
	require.Contains(t, msg, "one call may carry at most 524288 (512 KiB)")
	var list TaskList
	ok(t, admin, "chorus_list_tasks", map[string]any{"projectUuid": project}, &list)
	require.Equal(t, 0, list.Total, "nothing half-created")

	// B: a 500-emoji title, 100,000-emoji content, then ten rounds of fifteen questions with five
	// options, every id about 500 characters, each round answered.
	var created CreatedIdea
	ok(t, admin, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": emoji(500), "content": emoji(100_000)}, &created)
	idea := created.UUID
	ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	longID := func(round, q, o int) string { return fmt.Sprintf("%02d-%02d-%d-%s", round, q, o, emoji(490)) }
	for round := range 10 {
		var questions []map[string]any
		var answers []map[string]any
		for q := range 15 {
			var options []map[string]any
			for o := range 5 {
				options = append(options, map[string]any{"id": longID(round, q, o), "label": fmt.Sprintf("Option %d", o)})
			}
			questions = append(questions, map[string]any{"id": longID(round, q, 9), "text": "Which?", "category": "scope", "options": options})
			answers = append(answers, map[string]any{"questionId": longID(round, q, 9), "selectedOptionId": longID(round, q, 0), "customText": nil})
		}
		ok(t, admin, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "comprehensive", "questions": questions}, nil)
		ok(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea, "answers": answers}, nil)
	}

	// The workflow's state, which continue-as-new carries, stays small.
	v, err := e.tc.QueryWorkflow(context.Background(), vocab.IdeaID(idea), "", workflows.QueryState)
	require.NoError(t, err)
	var raw json.RawMessage
	require.NoError(t, v.Get(&raw))
	t.Logf("idea state after 10 rounds of 15 questions with 500-character ids: %d bytes", len(raw))
	require.Less(t, len(raw), 64<<10, "state stays far below Temporal's 2 MB payload limit")
	desc, err := e.tc.DescribeWorkflowExecution(context.Background(), vocab.IdeaID(idea), "")
	require.NoError(t, err)
	require.Less(t, desc.GetWorkflowExecutionInfo().GetHistorySizeBytes(), int64(16<<20), "the run's history stays bounded")

	// And the idea still takes every command.
	ok(t, admin, "chorus_edit_idea", map[string]any{"ideaUuid": idea, "title": "Shorter"}, nil)
	ok(t, admin, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}, nil)
	e.requireAgreement()
	res := call(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": idea})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "Idea not found", fails(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": idea}))
}

// A check-then-write invariant holds under concurrent calls on PostgreSQL as on
// SQLite: one report per proposal unless forced, and no dependency cycle from two concurrent
// edits.
func TestConcurrentGuardsHoldOnEveryDatabase(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		pm2 := e.pmWithIdeaAdmin("PM2")
		project := createProject(t, admin, "Apollo")
		idea := elaboratedIdea(t, pm, admin, project, "Idea")
		proposal, _ := fullProposal(t, pm, project, idea)
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)

		var wg sync.WaitGroup
		results := make([]*mcpsdk.CallToolResult, 6)
		for i := range results {
			s := pm
			if i%2 == 1 {
				s = pm2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = call(t, s, "chorus_create_report", map[string]any{"proposalUuid": proposal,
					"title": fmt.Sprintf("Report %d", i), "content": "done"})
			}()
		}
		wg.Wait()
		succeeded := 0
		for _, r := range results {
			if !r.IsError {
				succeeded++
			} else {
				require.Contains(t, text(r), "A report already exists for this proposal")
			}
		}
		require.Equal(t, 1, succeeded, "exactly one report")

		// Two tasks made to depend on each other at the same moment: one edge, one cycle warning.
		a, b := pv.MaterializedTasks[0].TaskUUID, pv.MaterializedTasks[2].TaskUUID
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": pv.MaterializedTasks[1].TaskUUID,
			"removeDependsOn": []string{a}}, nil)
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": b, "removeDependsOn": []string{pv.MaterializedTasks[1].TaskUUID}}, nil)
		var va, vb TaskView
		wg.Add(2)
		go func() {
			defer wg.Done()
			ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": a, "addDependsOn": []string{b}}, &va)
		}()
		go func() {
			defer wg.Done()
			ok(t, pm, "chorus_update_task", map[string]any{"taskUuid": b, "addDependsOn": []string{a}}, &vb)
		}()
		wg.Wait()
		require.Equal(t, 1, len(va.Warnings)+len(vb.Warnings), "one of the two edges would close a cycle")
		require.Contains(t, strings.Join(append(va.Warnings, vb.Warnings...), " "), "cycle")
		e.requireAgreement()
	})
}

// The 512 KiB budget of a call counts its JSON as written, not HTML-escaped: a character such
// as '<' takes one byte, not the six of \u003c (docs/write-path.md, "Bounded state and
// payloads"). A call of markup within the budget goes through Temporal whole (its payloads are
// not escaped either), and a call over it is refused with its true size.
func TestArgumentBudgetCountsMarkupAsWritten(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	markup := func(n int) string {
		return strings.Repeat("<", n/3) + strings.Repeat(">", n/3) + strings.Repeat("&", n-2*(n/3))
	}

	// A 100,000-character document of markup: 100 KB as written, 600 KB escaped.
	var doc DocumentView
	ok(t, admin, "chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "guide", "title": "<b>",
		"content": markup(100_000), "requestId": "doc-1"}, &doc)
	require.Equal(t, markup(100_000), *doc.Content)
	// Its retry, written with or without \u003c escapes, is the same call; the ledger hashes it
	// as it always has (the HTML-escaped form), so a requestId stays bound to its call across versions.
	args := map[string]any{"projectUuid": project, "type": "guide", "title": "<b>", "content": markup(100_000)}
	escaped, err := json.Marshal(args)
	require.NoError(t, err)
	sum := sha256.Sum256(append([]byte("chorus_pm_create_document\x00"), escaped...))
	var row store.ToolRequest
	require.NoError(t, e.st.DB.NewSelect().Model(&row).Where("request_id = ?", "doc-1").Scan(context.Background()))
	require.Equal(t, hex.EncodeToString(sum[:]), row.ArgsHash)
	for _, plain := range []bool{false, true} {
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(!plain)
		require.NoError(t, enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "chorus_pm_create_document", "arguments": map[string]any{"projectUuid": strings.ToUpper(project), "type": "guide",
				"title": "<b>", "content": markup(100_000), "requestId": "doc-1"}}}))
		require.Equal(t, !plain, strings.Contains(body.String(), `\u003c`))
		resp, answer := e.rawPost("Bearer "+e.adminKey, body.String())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, answer, doc.UUID, "the retry returns the first result")
	}

	// Five tasks of 100,000 characters of markup each: 500 KB as written (3 MB escaped, past
	// Temporal's 2 MB payload limit if it were escaped), through the batch workflow and back.
	var tasks []map[string]any
	for i := range 5 {
		tasks = append(tasks, map[string]any{"title": fmt.Sprintf("<T%d>", i), "description": markup(100_000),
			"acceptanceCriteriaItems": []map[string]any{{"description": "a < b && b > c"}}})
	}
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks, "requestId": "tasks-1"}, &created)
	require.Len(t, created.Tasks, 5)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": created.Tasks[4].UUID}, &v)
	require.Equal(t, markup(100_000), *v.Description)
	var again CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks, "requestId": "tasks-1"}, &again)
	require.Equal(t, created.Tasks, again.Tasks, "the retry is the same call")

	// Six are over the budget, counted as written.
	tasks = append(tasks, tasks[0])
	msg := fails(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": tasks})
	require.Regexp(t, `^Input validation error: the arguments take 60\d{4} bytes as JSON, and one call may carry at most 524288 \(512 KiB\)`, msg)
	e.requireAgreement()
}
