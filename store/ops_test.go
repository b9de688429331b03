package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// chorus ops repair writes a row only while it is exactly where the check saw it (store.RowGuard),
// so a change that landed after the check is never overwritten or rolled back; and a row it
// inserts must still be missing.
func TestRepairRowIsGuarded(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, p := bootProject(t, st)
		at := time.Now().UTC().Truncate(time.Microsecond)
		idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: "I", Status: "open",
			CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, CreatedAt: at, UpdatedAt: at}
		require.NoError(t, st.ApplyIdeaChange(ctx, store.IdeaChange{UUID: idea.UUID, CompanyUUID: b.Company.UUID,
			Write: store.Write{ID: "idea/x#1@run1", Expect: 0, At: at}, Insert: &idea}))
		require.NoError(t, st.ApplyIdeaChange(ctx, store.IdeaChange{UUID: idea.UUID, CompanyUUID: b.Company.UUID,
			Write: store.Write{ID: "idea/x#2@run1", Expect: 1, At: at}, Patch: store.IdeaPatch{Title: ptr("Live")}}))
		row := func() store.Idea {
			i, err := st.IdeaRow(ctx, idea.UUID)
			require.NoError(t, err)
			return i
		}
		repair := func(g store.RowGuard) error {
			m := idea
			m.Title, m.Version, m.ChangeID = "From the workflow", 1, "idea/x#1@run1"
			return st.RepairRow(ctx, store.RowRepair{Table: "ideas", UUID: idea.UUID, Model: &m, Columns: []string{"title"}, Guard: g})
		}

		// The check saw version 1, but a change has landed since: nothing is written.
		require.ErrorIs(t, repair(store.RowGuard{Version: 1, ChangeID: "idea/x#1@run1"}), store.ErrRowMoved)
		require.Equal(t, "Live", row().Title)
		require.Equal(t, int64(2), row().Version, "the newer row is not rolled back")
		// The right version under another change id is not the row the check saw either.
		require.ErrorIs(t, repair(store.RowGuard{Version: 2, ChangeID: "idea/x#2@run0"}), store.ErrRowMoved)
		// A row the check saw missing has appeared: it is not overwritten.
		require.ErrorIs(t, repair(store.RowGuard{Missing: true}), store.ErrRowMoved)
		require.Equal(t, "Live", row().Title)

		// Where the check saw it, the row follows the workflow.
		require.NoError(t, repair(store.RowGuard{Version: 2, ChangeID: "idea/x#2@run1"}))
		r := row()
		require.Equal(t, "From the workflow", r.Title)
		require.Equal(t, int64(1), r.Version)
		require.Equal(t, "idea/x#1@run1", r.ChangeID)

		// A missing row is inserted.
		_, err := st.DB.NewDelete().TableExpr("ideas").Where("uuid = ?", idea.UUID).Exec(ctx)
		require.NoError(t, err)
		require.NoError(t, repair(store.RowGuard{Missing: true}))
		require.Equal(t, "From the workflow", row().Title)

		// A workflow's projection carries no creation time: the re-inserted row takes the time of
		// its version-1 change from the change journal, not the repair's (lists order by it).
		_, err = st.DB.NewDelete().TableExpr("ideas").Where("uuid = ?", idea.UUID).Exec(ctx)
		require.NoError(t, err)
		m := idea
		m.Title, m.Version, m.ChangeID, m.CreatedAt = "Again", 2, "idea/x#2@run1", time.Time{}
		require.NoError(t, st.RepairRow(ctx, store.RowRepair{Table: "ideas", UUID: idea.UUID, Model: &m, Columns: []string{"title"},
			Guard: store.RowGuard{Missing: true}}))
		require.True(t, at.Equal(row().CreatedAt), "created_at %v, want %v", row().CreatedAt, at)
	})
}

// chorus ops check lists every lifecycle row's uuid, oldest first.
func TestAllLifecycleUUIDs(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, p := bootProject(t, st)
		at := time.Now().UTC().Truncate(time.Microsecond)
		var want []string
		for i := range 3 {
			idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: "I", Status: "open",
				CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, CreatedAt: at.Add(time.Duration(-i) * time.Second), UpdatedAt: at}
			require.NoError(t, st.ApplyIdeaChange(ctx, store.IdeaChange{UUID: idea.UUID, CompanyUUID: b.Company.UUID,
				Write: store.Write{ID: "idea/" + idea.UUID + "#1@r", At: at}, Insert: &idea}))
			want = append([]string{idea.UUID}, want...)
		}
		ids, err := st.AllLifecycleUUIDs(ctx)
		require.NoError(t, err)
		require.Equal(t, want, ids.Ideas)
		require.Empty(t, ids.Proposals)
		require.Empty(t, ids.Tasks)
	})
}
