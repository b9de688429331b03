package mcp

import (
	"context"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Human gates (docs/rules.md §6.7), through the real MCP client for the agents and the app use
// cases for the people, as the console and the CLI call them.

// personRequest is a request of the user uuid, as a person in the console.
func (e *env) personRequest(uuid string) app.Request {
	e.t.Helper()
	u, err := e.st.UserByUUID(context.Background(), uuid)
	require.NoError(e.t, err)
	return app.Request{Who: app.UserPrincipal(u)}
}

// setGates sets a project's gate policy as its owner.
func (e *env) setGates(project string, in app.GatePolicyInput) {
	e.t.Helper()
	_, err := e.deps.app().SetGatePolicy(context.Background(), e.personRequest(e.owner), project, in)
	require.NoError(e.t, err)
}

func projectTaskCount(t *testing.T, e *env, project string) int {
	t.Helper()
	n, err := e.st.DB.NewSelect().Model((*store.Task)(nil)).Where("project_uuid = ?", project).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// noteActions lists the gate notifications (gate_*) of a recipient about an entity, oldest first.
func noteActions(t *testing.T, e *env, typ, recipient, entity string) []string {
	t.Helper()
	var out []string
	for _, n := range notes(t, e, typ, recipient) {
		if n.EntityUUID == entity && strings.HasPrefix(n.Action, "gate_") {
			out = append(out, n.Action)
		}
	}
	return out
}

// pendingProposal makes a submitted proposal by pm in project, with three task drafts.
func pendingProposal(t *testing.T, pm, answerer *mcpsdk.ClientSession, project string) string {
	t.Helper()
	idea := elaboratedIdea(t, pm, answerer, project, "Single sign-on")
	proposal, _ := fullProposal(t, pm, project, idea)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	return proposal
}

// An agent's approval in a gated project waits for a person and changes nothing; a repeat
// answers with the same gate; the person's approval applies it once, and the agent hears of it.
func TestGatedApprovalWaitsForAPerson(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		proposal := pendingProposal(t, pm, admin, project)
		e.setGates(project, app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal}})

		var out ApproveOut
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "Ship it"}, &out)
		require.NotNil(t, out.AwaitingHuman, "the approval waits for a person")
		require.Equal(t, "pending", out.Status, "and changed nothing")
		require.Equal(t, vocab.GateAwaiting, out.AwaitingHuman.Status)
		require.Equal(t, vocab.GateApproveProposal, out.AwaitingHuman.Command)
		require.Nil(t, out.AwaitingHuman.ExpiresAt, "the policy sets no expiry")
		require.Contains(t, out.AwaitingHuman.WhoMayDecide, "editor or admin")
		require.Empty(t, out.MaterializedTasks)
		require.Zero(t, projectTaskCount(t, e, project), "no task is made before a person approves")

		var again ApproveOut
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &again)
		require.Equal(t, out.AwaitingHuman.GateUUID, again.AwaitingHuman.GateUUID, "a repeat answers with the same gate")

		owner := e.personRequest(e.owner)
		listed, err := e.deps.app().ListGates(ctx, owner, store.GateFilter{ProjectUUID: project, Status: vocab.GateAwaiting})
		require.NoError(t, err)
		require.Len(t, listed, 1)
		require.Equal(t, e.agentID("Admin Agent"), listed[0].RequestedByUUID)
		require.Contains(t, noteActions(t, e, "user", e.owner, proposal), "gate_requested", "the people who can decide are told")

		g, err := e.deps.app().DecideGate(ctx, owner, out.AwaitingHuman.GateUUID, true, "")
		require.NoError(t, err)
		require.Equal(t, vocab.GateApplied, g.Status)
		require.Equal(t, e.owner, *g.DecidedByUUID)
		var pv ProposalView
		ok(t, admin, "chorus_get_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		require.Equal(t, "approved", pv.Status)
		require.Equal(t, 3, projectTaskCount(t, e, project))
		require.Equal(t, 1, activityCount(t, e.st, proposal, "approved"))
		require.Equal(t, []string{"gate_applied"}, noteActions(t, e, "agent", e.agentID("Admin Agent"), proposal),
			"the requesting agent hears the outcome")

		_, err = e.deps.app().DecideGate(ctx, owner, g.UUID, false, "too late")
		require.ErrorContains(t, err, "already decided")
		require.Equal(t, 3, projectTaskCount(t, e, project), "a second decision applies nothing")
		e.requireAgreement()
	})
}

// A refusal needs a note and tells the agent; an expired gate tells the agent too; separation of
// duties refuses an agent approving its own proposal.
func TestGateRefusalExpiryAndSeparationOfDuties(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	reviewer := e.member("Reviewer", e.owner, perm.AdminAgent)
	project := createProject(t, admin, "Apollo")
	proposal := pendingProposal(t, admin, admin, project)
	e.setGates(project, app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal}, SeparateDuties: true})

	msg := fails(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal})
	require.Contains(t, msg, "Separation of duties: you created this proposal")

	var out ApproveOut
	ok(t, reviewer.s, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &out)
	require.NotNil(t, out.AwaitingHuman)
	owner := e.personRequest(e.owner)
	_, err := e.deps.app().DecideGate(ctx, owner, out.AwaitingHuman.GateUUID, false, " ")
	require.ErrorContains(t, err, "note is required")
	g, err := e.deps.app().DecideGate(ctx, owner, out.AwaitingHuman.GateUUID, false, "Split the API work first")
	require.NoError(t, err)
	require.Equal(t, vocab.GateRefused, g.Status)
	var pv ProposalView
	ok(t, admin, "chorus_get_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	require.Equal(t, "pending", pv.Status, "a refused gate changes nothing")
	got := notes(t, e, "agent", reviewer.uuid)
	require.Len(t, got, 1)
	require.Equal(t, "gate_refused", got[0].Action)
	require.Contains(t, got[0].Message, "Split the API work first")

	// Expiry: a policy of two seconds (below what a caller may set, written straight to the store).
	require.NoError(t, e.st.SetGatePolicy(ctx, store.GatePolicy{ProjectUUID: project, CompanyUUID: e.company,
		Commands: vocab.GateApproveProposal, ExpireAfterSeconds: 2}))
	ok(t, reviewer.s, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &out)
	require.NotNil(t, out.AwaitingHuman.ExpiresAt)
	requireEventually(t, func() bool {
		g, err := e.deps.app().GetGate(ctx, owner, out.AwaitingHuman.GateUUID)
		return err == nil && g.Status == vocab.GateExpired
	}, "the gate expires on its timer")
	require.Equal(t, []string{"gate_refused", "gate_expired"}, noteActions(t, e, "agent", reviewer.uuid, proposal))
	_, err = e.deps.app().DecideGate(ctx, owner, out.AwaitingHuman.GateUUID, true, "")
	require.ErrorContains(t, err, "already decided")
	ok(t, admin, "chorus_get_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	require.Equal(t, "pending", pv.Status)
	e.requireAgreement()
}

// verify_task and resolve_elaboration wait the same way; separation of duties refuses an agent
// verifying a task it worked on; only people with editor access decide, and a hidden project's
// gate is not found.
func TestGatedVerifyAndResolve(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	reviewer := e.member("Reviewer", e.owner, perm.AdminAgent)
	pm := e.pmWithIdeaAdmin("PM")
	var p CreatedProject
	ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Private", "visibility": "private"}, &p)
	project := p.UUID
	e.setGates(project, app.GatePolicyInput{Commands: []string{vocab.GateVerifyTask, vocab.GateResolveElaboration},
		SeparateDuties: true})
	owner := e.personRequest(e.owner)

	// resolve_elaboration
	idea := createIdea(t, admin, project, "Idea", nil)
	ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	ok(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, nil)
	ok(t, admin, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
		"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}, {"questionId": "q2", "selectedOptionId": nil, "customText": "Q3"}}}, nil)
	var res ResolveOut
	ok(t, pm, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}, &res)
	require.NotNil(t, res.AwaitingHuman)
	require.NotEqual(t, "resolved", *res.Status)
	g, err := e.deps.app().DecideGate(ctx, owner, res.AwaitingHuman.GateUUID, true, "")
	require.NoError(t, err)
	require.Equal(t, vocab.GateApplied, g.Status)
	var ev ElaborationView
	ok(t, admin, "chorus_get_elaboration", map[string]any{"ideaUuid": idea}, &ev)
	require.Equal(t, "resolved", *ev.Status)
	require.Equal(t, []string{"gate_applied"}, noteActions(t, e, "agent", e.agentID("PM"), idea))

	// verify_task, by an agent that worked on the task, then by another
	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T0", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	task := created.Tasks[0].UUID
	ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
	work(t, admin, task)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
	markAll(t, reviewer.s, task, v, "passed")
	require.Contains(t, fails(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}),
		"Separation of duties: you worked on this task")
	var vo VerifyOut
	ok(t, reviewer.s, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, &vo)
	require.NotNil(t, vo.AwaitingHuman)
	require.Equal(t, "to_verify", vo.Status)
	gate := vo.AwaitingHuman.GateUUID

	// Who decides: not an agent, not someone who cannot see the project, not a viewer.
	_, err = e.deps.app().DecideGate(ctx, app.Request{Who: app.Principal{Caller: store.Caller{CompanyUUID: e.company,
		AgentUUID: reviewer.uuid, OwnerUUID: e.owner}}}, gate, true, "")
	require.ErrorContains(t, err, "Only a person can decide a gate")
	outsider := e.personRequest(e.otherUser("outsider@example.com"))
	_, err = e.deps.app().DecideGate(ctx, outsider, gate, true, "")
	require.ErrorContains(t, err, "Gate not found")
	listed, err := e.deps.app().ListGates(ctx, outsider, store.GateFilter{})
	require.NoError(t, err)
	require.Empty(t, listed, "a hidden project's gates are not listed")
	viewerUUID := e.otherUser("viewer@example.com")
	e.grant(project, viewerUUID, "viewer")
	_, err = e.deps.app().DecideGate(ctx, e.personRequest(viewerUUID), gate, true, "")
	require.ErrorContains(t, err, "Insufficient project access")
	_, err = e.deps.app().SetGatePolicy(ctx, e.personRequest(viewerUUID), project, app.GatePolicyInput{})
	require.ErrorContains(t, err, "Only project admins can manage this project")

	g, err = e.deps.app().DecideGate(ctx, owner, gate, true, "")
	require.NoError(t, err)
	require.Equal(t, vocab.GateApplied, g.Status)
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
	require.Equal(t, "done", v.Status)
	require.Equal(t, []string{"gate_applied"}, noteActions(t, e, "agent", reviewer.uuid, task))
	e.requireAgreement()
}

// A policy's every field is validated, naming the field.
func TestGatePolicyValidationNamesTheField(t *testing.T) {
	e := newEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	project := createProject(t, admin, "Apollo")
	ctx := context.Background()
	owner := e.personRequest(e.owner)
	for _, c := range []struct {
		in   app.GatePolicyInput
		want string
	}{
		{app.GatePolicyInput{Commands: []string{"approve"}}, `commands: "approve" is not a gateable command`},
		{app.GatePolicyInput{ExpireAfterSeconds: 5}, "expireAfterSeconds: 5 is out of range"},
		{app.GatePolicyInput{ExpireAfterSeconds: -1}, "expireAfterSeconds: -1 is out of range"},
	} {
		_, err := e.deps.app().SetGatePolicy(ctx, owner, project, c.in)
		require.ErrorContains(t, err, c.want)
	}
	p, err := e.deps.app().SetGatePolicy(ctx, owner, project, app.GatePolicyInput{
		Commands: []string{vocab.GateVerifyTask, vocab.GateApproveProposal, vocab.GateVerifyTask}, ExpireAfterSeconds: 3600})
	require.NoError(t, err)
	require.Equal(t, []string{vocab.GateApproveProposal, vocab.GateVerifyTask}, p.GatedCommands())
	require.Equal(t, 3600, p.ExpireAfterSeconds)
	_, err = e.deps.app().ListGates(ctx, owner, store.GateFilter{Status: "open"})
	require.ErrorContains(t, err, `status: "open" is not a gate status`)
}

// Every write of a gate loses its acknowledgement the first times (so its activity runs again),
// and the decision is retried with its requestId: the approval applies once, each notification
// is written once, and the retried decision answers the first outcome.
func TestGateDecisionAppliesOnce(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	for _, k := range []string{"RecordGate", "SettleGate", "ApplyApproval"} {
		e.faults.FailAfterCommit(k, 2)
	}
	ctx := context.Background()
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	project := createProject(t, admin, "Apollo")
	proposal := pendingProposal(t, pm, admin, project)
	e.setGates(project, app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal}})
	var out ApproveOut
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal, "requestId": "approve-1"}, &out)
	require.NotNil(t, out.AwaitingHuman)

	owner := e.personRequest(e.owner)
	owner.RequestID = "decide-1"
	g, err := e.deps.app().DecideGate(ctx, owner, out.AwaitingHuman.GateUUID, true, "")
	require.NoError(t, err)
	require.Equal(t, vocab.GateApplied, g.Status)
	owner.Retry = true
	again, err := e.deps.app().DecideGate(ctx, owner, out.AwaitingHuman.GateUUID, true, "")
	require.NoError(t, err, "the retried decision answers its first outcome")
	require.Equal(t, vocab.GateApplied, again.Status)
	for _, k := range []string{"RecordGate", "SettleGate", "ApplyApproval"} {
		require.Equal(t, 2, e.faults.Injected(k), "%s lost its acknowledgement twice", k)
	}
	require.Equal(t, 3, projectTaskCount(t, e, project))
	require.Equal(t, 1, activityCount(t, e.st, proposal, "approved"))
	require.Equal(t, []string{"gate_applied"}, noteActions(t, e, "agent", e.agentID("Admin Agent"), proposal))
	require.Equal(t, 1, strings.Count(strings.Join(noteActions(t, e, "user", e.owner, proposal), ","), "gate_requested"))
	e.requireAgreement()
}
