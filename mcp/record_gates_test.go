//go:build record

package mcp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// TestRecordGateHistories records the shapes of human gates (docs/rules.md §6.7): a proposal
// whose agent approval waited at a gate with an expiry timer and was approved by a person
// ("proposal-gate-approved"), and a task whose verification gate expired on its timer
// ("task-gate-expired"). Like TestRecordWorkflowHistories, append-only:
//
//	CHORUS_RECORD=proposal-gate-approved,task-gate-expired go test -tags record ./mcp -run TestRecordGateHistories
func TestRecordGateHistories(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	dev := e.client(e.agent("Dev", perm.DeveloperAgent))
	project := createProject(t, admin, "Apollo")
	proposal := pendingProposal(t, pm, dev, project)
	e.setGates(project, app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal, vocab.GateVerifyTask}, ExpireAfterSeconds: 3600})
	var out ApproveOut
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &out)
	require.NotNil(t, out.AwaitingHuman)
	_, err := e.deps.app().DecideGate(ctx, e.personRequest(e.owner), out.AwaitingHuman.GateUUID, true, "")
	require.NoError(t, err)
	var pv ProposalView
	ok(t, admin, "chorus_get_proposal", map[string]any{"proposalUuid": proposal, "section": "full"}, &pv)

	var created CreatedTasks
	ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
		{"title": "T0", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
	task := created.Tasks[0].UUID
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
	work(t, dev, task)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
	markAll(t, admin, task, v, "passed")
	require.NoError(t, e.st.SetGatePolicy(ctx, store.GatePolicy{ProjectUUID: project, CompanyUUID: e.company,
		Commands: vocab.GateVerifyTask, ExpireAfterSeconds: 2}))
	var vo VerifyOut
	ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, &vo)
	require.NotNil(t, vo.AwaitingHuman)
	requireEventually(t, func() bool {
		g, err := e.deps.app().GetGate(ctx, e.personRequest(e.owner), vo.AwaitingHuman.GateUUID)
		return err == nil && g.Status == vocab.GateExpired
	}, "the verification gate expires")

	day := time.Now().UTC().Format("2006-01-02")
	for _, h := range []struct{ name, id string }{
		{"proposal-gate-approved", vocab.ProposalID(proposal)},
		{"task-gate-expired", vocab.TaskID(task)},
	} {
		if only := os.Getenv("CHORUS_RECORD"); only != "" && !slices.Contains(strings.Split(only, ","), h.name) {
			continue
		}
		writeHistory(t, h.id, freeName(t, filepath.Join("..", "workflows", "testdata", "histories"), day+"-"+h.name))
	}
}
