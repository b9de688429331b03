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
		idea := func(title string) string {
			i := &store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: title,
				Status: vocab.IdeaElaborated, CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, ChangeID: store.NewUUID(),
				Attachments: []byte("[]"), CreatedAt: now, UpdatedAt: now}
			_, err := st.DB.NewInsert().Model(i).Exec(ctx)
			require.NoError(t, err)
			return i.UUID
		}
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
