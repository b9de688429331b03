package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The write protocol (docs/write-path.md, "One write protocol"), on both databases: a change
// applies only from the version it expects, its retry is recognised by its change id, and any
// other change at that version is a conflict that writes nothing.
func TestWriteProtocol(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, p := bootProject(t, st)
		at := time.Now().UTC().Truncate(time.Microsecond)
		write := func(id string, expect int64) store.Write { return store.Write{ID: id, Expect: expect, At: at} }
		idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: "I", Status: "open",
			CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, CreatedAt: at, UpdatedAt: at}
		apply := func(c store.IdeaChange) error {
			c.UUID, c.CompanyUUID = idea.UUID, b.Company.UUID
			return st.ApplyIdeaChange(ctx, c)
		}
		row := func() store.Idea {
			i, err := st.IdeaRow(ctx, idea.UUID)
			require.NoError(t, err)
			return i
		}
		claimed := func(by string) store.IdeaChange {
			return store.IdeaChange{Patch: store.IdeaPatch{Status: ptr(vocab.IdeaElaborating),
				Assignee: store.SetTo(&store.Assignment{Type: "agent", UUID: by, At: at})},
				Activities: []store.Activity{{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID,
					TargetType: "idea", TargetUUID: idea.UUID, ActorType: "agent", ActorUUID: by, Action: "assigned", CreatedAt: at}}}
		}

		// A create, and its retry.
		create := store.IdeaChange{Write: write("idea/x#1@run1", 0), Insert: &idea}
		require.NoError(t, apply(create))
		require.NoError(t, apply(create), "a retried create finds its own row")
		require.Equal(t, int64(1), row().Version)

		// A change from the expected version, its retry (the acknowledgement was lost) writing
		// nothing more, then a different change at the same version: a conflict, never success.
		first := claimed("agent-a")
		first.Write = write("idea/x#2@run1", 1)
		require.NoError(t, apply(first))
		again := first
		again.Activities = []store.Activity{{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID,
			TargetType: "idea", TargetUUID: idea.UUID, ActorType: "agent", ActorUUID: "agent-a", Action: "assigned", CreatedAt: at}}
		require.NoError(t, apply(again), "the retry is recognised by its change id")
		other := claimed("agent-b")
		other.Write = write("idea/x#2@run2", 1)
		err := apply(other)
		var conflict *store.ProjectionConflict
		require.ErrorAs(t, err, &conflict)
		require.ErrorIs(t, err, store.ErrProjectionConflict)
		require.Equal(t, int64(2), conflict.Version)
		require.Equal(t, "idea/x#2@run1", conflict.ChangeID)
		require.Equal(t, "elaborating", conflict.Status)
		r := row()
		require.Equal(t, "agent-a", *r.AssigneeUUID, "the conflicting change wrote nothing")
		require.Equal(t, "idea/x#2@run1", r.ChangeID)
		var acts int
		require.NoError(t, st.DB.NewRaw("SELECT count(*) FROM activities WHERE target_uuid = ?", idea.UUID).Scan(ctx, &acts))
		require.Equal(t, 1, acts, "nothing the retry or the conflict carried was written")

		// A change from a version the row has not reached is a conflict too.
		ahead := claimed("agent-c")
		ahead.Write = write("idea/x#5@run1", 4)
		require.ErrorIs(t, apply(ahead), store.ErrProjectionConflict)

		// A change applied, then overtaken by the next one before its retry: the change journal
		// proves it applied, so the retry succeeds and writes nothing. The journal also answers
		// for its update.
		edit := store.IdeaChange{Write: write("idea/x#3@u1", 2), Patch: store.IdeaPatch{Title: ptr("J")}}
		edit.Update = store.UpdateKey("idea/x", "update-1")
		require.NoError(t, apply(edit))
		next := store.IdeaChange{Write: write("idea/x#4@u2", 3), Patch: store.IdeaPatch{Title: ptr("K")}}
		require.NoError(t, apply(next))
		require.NoError(t, apply(edit), "the journal knows the overtaken change applied")
		require.Equal(t, "K", row().Title, "the retry wrote nothing")
		applied, err := st.UpdateOutcome(ctx, store.UpdateKey("idea/x", "update-1"))
		require.NoError(t, err)
		require.Equal(t, store.UpdateApplied, applied)
		applied, err = st.UpdateOutcome(ctx, store.UpdateKey("idea/x", "update-2"))
		require.NoError(t, err)
		require.Equal(t, store.UpdateNotApplied, applied, "an update that never wrote")
		stranger := store.IdeaChange{Write: write("idea/x#4@u3", 3), Patch: store.IdeaPatch{Title: ptr("L")}}
		require.ErrorIs(t, apply(stranger), store.ErrProjectionConflict, "a change never applied is still a conflict")

		// A delete from the expected version, its retry, and a change after it.
		del := store.IdeaChange{Write: write("idea/x#5@run1", 4), Delete: true}
		require.NoError(t, apply(del))
		require.NoError(t, apply(del), "a row already gone counts as deleted")
		late := claimed("agent-d")
		late.Write = write("idea/x#6@run1", 5)
		err = apply(late)
		require.ErrorAs(t, err, &conflict)
		require.False(t, conflict.Found)
	})
}
