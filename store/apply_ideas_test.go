package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// legacyIdeaChange is the shape IdeaChange had before IdeaPatch, as an older worker wrote it.
type legacyIdeaChange struct {
	store.Write
	UUID, CompanyUUID, ProjectUUID string
	Set                            store.Idea
	Columns                        []string
}

// TestApplyIdeaChangeAcceptsTheOldShape: an idea change an older worker scheduled decodes and
// writes what it wrote then, the same as the typed change that replaced it.
func TestApplyIdeaChangeAcceptsTheOldShape(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		c := store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: b.Agent.UUID, OwnerUUID: b.Owner.UUID}
		p, err := st.CreateProject(ctx, c, store.NewProject{Name: "Main"})
		require.NoError(t, err)
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		newIdea := func() store.Idea {
			idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: c.CompanyUUID, ProjectUUID: p.UUID, Title: "I", Status: "elaborating",
				ElaborationDepth: ptr("standard"), ElaborationStatus: ptr("pending_answers"),
				CreatedByType: "agent", CreatedByUUID: c.AgentUUID, Version: 1, CreatedAt: at, UpdatedAt: at}
			_, err := st.DB.NewInsert().Model(&idea).Exec(ctx)
			require.NoError(t, err)
			return idea
		}
		write := func(uuid string) store.Write {
			return store.Write{ID: "idea/" + uuid + "#2@0123456789abcdef", Expect: 1, At: at.Add(time.Minute)}
		}
		// A release: status open, no assignee, no elaboration.
		old := newIdea()
		set := old
		set.Status, set.ElaborationDepth, set.ElaborationStatus = "open", nil, nil
		payload, err := json.Marshal(legacyIdeaChange{Write: write(old.UUID), UUID: old.UUID, CompanyUUID: c.CompanyUUID,
			ProjectUUID: p.UUID, Set: set, Columns: []string{"status", "assignee_type", "assignee_uuid", "assigned_at",
				"assigned_by_uuid", "elaboration_depth", "elaboration_status"}})
		require.NoError(t, err)
		var decoded store.IdeaChange
		require.NoError(t, json.Unmarshal(payload, &decoded))
		require.Equal(t, vocab.IdeaOpen, decoded.NewStatus())
		require.True(t, decoded.SetsProgress())
		require.NoError(t, st.ApplyIdeaChange(ctx, decoded))

		typed := newIdea()
		require.NoError(t, st.ApplyIdeaChange(ctx, store.IdeaChange{Write: write(typed.UUID), UUID: typed.UUID,
			CompanyUUID: c.CompanyUUID, ProjectUUID: p.UUID, Patch: store.IdeaPatch{Status: ptr(vocab.IdeaOpen),
				Assignee: store.SetTo[store.Assignment](nil), ElaborationDepth: store.SetTo[string](nil),
				ElaborationStatus: store.SetTo[string](nil)}}))

		rows := map[string]store.Idea{}
		for _, uuid := range []string{old.UUID, typed.UUID} {
			row, err := st.IdeaRow(ctx, uuid)
			require.NoError(t, err)
			require.Equal(t, int64(2), row.Version)
			require.Equal(t, vocab.IdeaOpen, row.Status)
			require.Nil(t, row.ElaborationStatus)
			row.UUID, row.ChangeID, row.CreatedAt, row.UpdatedAt = "", "", time.Time{}, time.Time{}
			rows[uuid] = row
		}
		require.Equal(t, rows[old.UUID], rows[typed.UUID])
	})
}
