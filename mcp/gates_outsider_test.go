package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// An outsider's agent (an admin agent of another owner, who has no access to the private
// project) gets "Proposal not found" from a gated approve, exactly as without a gate: no gate
// is recorded, nobody is notified, and the gates and their counts stay out of its sight.
func TestGatedApproveIsNotFoundForAnOutsidersAgent(t *testing.T) {
	e := newFlowEnv(t, "sqlite")
	ctx := context.Background()
	admin := e.client(e.adminKey)
	pm := e.pmWithIdeaAdmin("PM")
	var p CreatedProject
	ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Vault", "visibility": "private"}, &p)
	proposal := pendingProposal(t, pm, admin, p.UUID)
	e.setGates(p.UUID, app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal}})
	countGates := func() int {
		n, err := e.st.DB.NewSelect().Table("gate_requests").Count(ctx)
		require.NoError(t, err)
		return int(n)
	}

	stranger := e.otherUser("stranger@example.com")
	mallory := e.member("Mallory", stranger, perm.AdminAgent)
	hidden := fails(t, mallory.s, "chorus_get_proposal", map[string]any{"proposalUuid": proposal})
	require.Equal(t, hidden, fails(t, mallory.s, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}),
		"a gated approve answers as a missing proposal does")
	require.Contains(t, hidden, "Proposal not found")
	require.Zero(t, countGates(), "no gate is recorded for an outsider")
	require.Empty(t, noteActions(t, e, "user", stranger, proposal), "the outsider's owner hears of nothing")

	// The insider's held approve is invisible to the outsider's owner in the console's lists.
	var out ApproveOut
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &out)
	require.NotNil(t, out.AwaitingHuman)
	require.Equal(t, 1, countGates())
	listed, err := e.deps.app().ListGates(ctx, e.personRequest(stranger), store.GateFilter{})
	require.NoError(t, err)
	require.Empty(t, listed)
	require.Empty(t, noteActions(t, e, "user", stranger, proposal), "gate notifications go to the project's people only")
	e.requireAgreement()
}
