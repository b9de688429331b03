package app

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The review queue and a proposal's review page for people (issue 22; docs/rules.md §2.3, §5.4,
// §6.3): only pending proposals, newest first, with project, creator, idea and validation
// counts; hidden projects' proposals are neither listed nor readable ("Proposal not found"); a
// viewer reads without validation or decisions, an editor gets chorus_pm_validate_proposal's issues.
func TestProposalReviewReads(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "chorus.db"))
	require.NoError(t, err)
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	boot, err := s.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Ada", OwnerEmail: "ada@example.com", AgentName: "Bot"})
	require.NoError(t, err)
	a := &App{Store: s}
	company := boot.Company.UUID
	owner := Request{Who: UserPrincipal(&boot.Owner)}
	viewerUser, err := s.CreateUser(ctx, company, "vic@example.com", "", store.RoleMember)
	require.NoError(t, err)
	outsiderUser, err := s.CreateUser(ctx, company, "olga@example.com", "", store.RoleMember)
	require.NoError(t, err)
	viewer, outsider := Request{Who: UserPrincipal(viewerUser)}, Request{Who: UserPrincipal(outsiderUser)}

	project, err := s.CreateProject(ctx, owner.Who.Caller, store.NewProject{Name: "Secret", Visibility: "private"})
	require.NoError(t, err)
	_, err = s.SetProjectMember(ctx, company, project.UUID, viewerUser.UUID, "viewer")
	require.NoError(t, err)
	now := store.Now()
	idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project.UUID, Title: "One-page checkout",
		Status: vocab.IdeaElaborated, CreatedByType: "agent", CreatedByUUID: boot.Agent.UUID, Version: 1, CreatedAt: now, UpdatedAt: now}
	_, err = s.DB.NewInsert().Model(&idea).Exec(ctx)
	require.NoError(t, err)
	proposal := func(title string, status vocab.ProposalStatus, age time.Duration) string {
		p := store.Proposal{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project.UUID, Title: title,
			InputType: "idea", InputUUIDs: []string{idea.UUID}, Status: status, CreatedByType: "agent",
			CreatedByUUID: boot.Agent.UUID, Version: 1, CreatedAt: now.Add(-age), UpdatedAt: now.Add(-age)}
		_, err := s.DB.NewInsert().Model(&p).Exec(ctx)
		require.NoError(t, err)
		return p.UUID
	}
	older := proposal("Older", vocab.ProposalPending, time.Hour)
	newer := proposal("Newer", vocab.ProposalPending, time.Minute)
	proposal("Still a draft", vocab.ProposalDraft, 0)

	items, total, err := a.ProposalsToReview(ctx, owner, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{newer, older}, []string{items[0].Proposal.UUID, items[1].Proposal.UUID}, "pending only, newest first")
	it := items[0]
	require.Equal(t, "Secret", it.ProjectName)
	require.Equal(t, "Bot", it.Creator.Name)
	require.Equal(t, []string{"One-page checkout"}, it.Ideas)
	require.Equal(t, 3, it.Errors, "no PRD, no task draft, the idea's elaboration unresolved (E1, E3, E5)")
	v, err := a.ValidateProposal(ctx, owner, newer)
	require.NoError(t, err)
	levels := map[string]int{}
	for _, is := range v.Issues {
		levels[is.Level]++
	}
	require.Equal(t, levels["error"], it.Errors, "the counts are the tool's")
	require.Equal(t, levels["warning"], it.Warnings)
	page, total, err := a.ProposalsToReview(ctx, owner, 1, 1)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, older, page[0].Proposal.UUID, "the second page")

	items, total, err = a.ProposalsToReview(ctx, outsider, 10, 0)
	require.NoError(t, err)
	require.Zero(t, total, "a hidden project's proposals are not listed")
	require.Empty(t, items)
	_, err = a.ReviewProposal(ctx, outsider, newer)
	require.Equal(t, "Proposal not found", Classify(err).Msg)
	require.Equal(t, string(vocab.RefusedNotFound), Classify(err).Kind)

	rv, err := a.ReviewProposal(ctx, viewer, newer)
	require.NoError(t, err)
	require.False(t, rv.CanAct)
	require.Nil(t, rv.Validation, "validation needs editor, as chorus_pm_validate_proposal")
	require.Equal(t, []ReviewInput{{Type: "idea", UUID: idea.UUID, Title: "One-page checkout"}}, rv.Inputs)

	rv, err = a.ReviewProposal(ctx, owner, newer)
	require.NoError(t, err)
	require.True(t, rv.CanAct)
	require.NotNil(t, rv.Validation)
	want, err := a.ValidateProposal(ctx, owner, newer)
	require.NoError(t, err)
	require.Equal(t, want, *rv.Validation, "the tool's validation")
	require.False(t, rv.Validation.Valid)
	require.Equal(t, "Bot", rv.Creator.Name)
	require.Empty(t, rv.Tasks, "not approved: no tasks")
}
