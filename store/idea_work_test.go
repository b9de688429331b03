package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// IdeasWork counts the idea-input proposals that list each idea (newest first) and the tasks of
// its newest approved proposal, done or closed of all (docs/rules.md §5.1); IdeaTitles names only
// ideas of the project.
func TestIdeasWork(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, p := bootProject(t, st)
		now := store.Now()
		idea := func(title string) string { return insertIdea(t, st, b, p, title, vocab.IdeaElaborated, nil, false) }
		proposal := func(title string, status vocab.ProposalStatus, age time.Duration, inputs ...string) string {
			pr := &store.Proposal{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: title,
				InputType: "idea", InputUUIDs: inputs, DocumentDrafts: []store.DocumentDraft{}, TaskDrafts: []store.TaskDraft{},
				Status: status, CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, ChangeID: store.NewUUID(),
				CreatedAt: now.Add(-age), UpdatedAt: now}
			_, err := st.DB.NewInsert().Model(pr).Exec(ctx)
			require.NoError(t, err)
			return pr.UUID
		}
		task := func(proposal string, status vocab.TaskStatus) {
			tk := &store.Task{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: "T",
				Status: status, Priority: "medium", ProposalUUID: &proposal, CreatedByType: "agent", CreatedByUUID: b.Agent.UUID,
				ChangeID: store.NewUUID(), CreatedAt: now, UpdatedAt: now}
			_, err := st.DB.NewInsert().Model(tk).Exec(ctx)
			require.NoError(t, err)
		}
		a, lone := idea("A"), idea("Lone")
		old := proposal("Old plan", vocab.ProposalApproved, 2*time.Hour, a)
		task(old, vocab.TaskDone)
		newer := proposal("New plan", vocab.ProposalApproved, time.Hour, a, lone)
		task(newer, vocab.TaskDone)
		task(newer, vocab.TaskClosed)
		task(newer, vocab.TaskInProgress)
		draft := proposal("Draft", vocab.ProposalDraft, 0, a)

		work, err := st.IdeasWork(ctx, p.UUID, []string{a, lone})
		require.NoError(t, err)
		require.Equal(t, 3, work[a].ProposalCount)
		require.Equal(t, []string{draft, newer, old}, []string{work[a].Proposals[0].UUID, work[a].Proposals[1].UUID, work[a].Proposals[2].UUID})
		require.Equal(t, [2]int{2, 3}, [2]int{work[a].TasksDone, work[a].TasksTotal}, "the newest approved proposal's tasks")
		require.Equal(t, 1, work[lone].ProposalCount)
		require.Equal(t, 3, work[lone].TasksTotal)

		titles, err := st.IdeaTitles(ctx, p.UUID, []string{a, store.NewUUID()})
		require.NoError(t, err)
		require.Equal(t, map[string]string{a: "A"}, titles)
		titles, err = st.IdeaTitles(ctx, store.NewUUID(), []string{a})
		require.NoError(t, err)
		require.Empty(t, titles, "an idea of another project is not named")
	})
}

// insertIdea writes an idea row as its workflow would, under parent (nil: top-level).
func insertIdea(t *testing.T, st *store.Store, b *store.BootstrapResult, p *store.Project, title string, status vocab.IdeaStatus,
	parent *string, theme bool) string {
	t.Helper()
	now := store.Now()
	i := &store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: title, Status: status,
		ParentUUID: parent, IsContainer: theme, CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, ChangeID: store.NewUUID(),
		Attachments: []byte("[]"), CreatedAt: now, UpdatedAt: now}
	_, err := st.DB.NewInsert().Model(i).Exec(context.Background())
	require.NoError(t, err)
	return i.UUID
}

// DeriveStatusesOf, which reads only the ideas asked for and their descendants, gives them the
// statuses DeriveStatuses gives them over the whole project, themes' roll-ups included, also
// when an idea and one of its descendants are both asked for.
func TestDeriveStatusesOfMatchesTheWholeProject(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, p := bootProject(t, st)
		theme := insertIdea(t, st, b, p, "Theme", vocab.IdeaOpen, nil, true)
		sub := insertIdea(t, st, b, p, "Sub-theme", vocab.IdeaOpen, &theme, true)
		leaf := insertIdea(t, st, b, p, "Leaf", vocab.IdeaElaborated, &sub, false)
		insertIdea(t, st, b, p, "Open", vocab.IdeaOpen, &theme, false)
		other := insertIdea(t, st, b, p, "Other", vocab.IdeaElaborating, nil, false)

		all, err := st.DeriveStatuses(ctx, []string{p.UUID})
		require.NoError(t, err)
		require.Equal(t, store.DerivedInProgress, all[theme].Status)
		require.Equal(t, &store.ChildProgress{Done: 0, Total: 2}, all[theme].ChildProgress)
		some, err := st.DeriveStatusesOf(ctx, p.UUID, []string{theme, leaf, other})
		require.NoError(t, err)
		require.Len(t, some, 5, "the ideas asked for and their descendants, each once")
		for id, d := range some {
			require.Equal(t, all[id], d, "idea %s", id)
		}
		none, err := st.DeriveStatusesOf(ctx, store.NewUUID(), []string{theme})
		require.NoError(t, err)
		require.Empty(t, none, "ideas of another project are not read")
	})
}
