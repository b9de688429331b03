package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
)

// PendingProposals (the console's review queue): pending proposals only, of the projects the
// caller sees (docs/rules.md §6.3: a private project's only for its members), newest first,
// paged, with the page's project names; on both dialects.
func TestPendingProposals(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { pendingProposals(t, storetest.Open(t, d)) })
	}
}

func pendingProposals(t *testing.T, st *store.Store) {
	ctx := context.Background()
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
	require.NoError(t, err)
	company := boot.Company.UUID
	owner := store.Caller{CompanyUUID: company, AgentUUID: boot.Agent.UUID, OwnerUUID: boot.Owner.UUID}
	other, err := st.CreateUser(ctx, company, "olga@example.com", "", store.RoleMember)
	require.NoError(t, err)
	outsider := store.Caller{CompanyUUID: company, AgentUUID: other.UUID, OwnerUUID: other.UUID, ActorType: "user"}
	public, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Open"})
	require.NoError(t, err)
	private, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Secret", Visibility: "private"})
	require.NoError(t, err)
	now := store.Now()
	add := func(project, title string, status vocab.ProposalStatus, age time.Duration) string {
		p := store.Proposal{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project, Title: title, InputType: "idea",
			Status: status, CreatedByType: "agent", CreatedByUUID: boot.Agent.UUID, Version: 1,
			CreatedAt: now.Add(-age), UpdatedAt: now.Add(-age)}
		_, err := st.DB.NewInsert().Model(&p).Exec(ctx)
		require.NoError(t, err)
		return p.UUID
	}
	a := add(public.UUID, "A", vocab.ProposalPending, 3*time.Minute)
	b := add(private.UUID, "B", vocab.ProposalPending, 2*time.Minute)
	add(public.UUID, "Draft", vocab.ProposalDraft, time.Minute)
	add(public.UUID, "Approved", vocab.ProposalApproved, time.Minute)

	rows, names, total, err := st.PendingProposals(ctx, owner, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{b, a}, []string{rows[0].UUID, rows[1].UUID})
	require.Equal(t, map[string]string{public.UUID: "Open", private.UUID: "Secret"}, names)

	rows, names, total, err = st.PendingProposals(ctx, owner, 1, 1)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, rows, 1)
	require.Equal(t, a, rows[0].UUID)
	require.Equal(t, map[string]string{public.UUID: "Open"}, names)

	rows, _, total, err = st.PendingProposals(ctx, outsider, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total, "the private project's proposal is hidden")
	require.Equal(t, a, rows[0].UUID)
}
