package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A person's inbox in the console (docs/rules.md §4.16 with the person as the caller): the
// notifications addressed to them as a user, never an agent's, nor those of a project they no
// longer see; and what waits for them: pending proposals and tasks to verify only in the
// projects where they are editor or better (§6.3).
func TestPersonInboxAndWaiting(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b, err := st.EnsureBootstrap(ctx, boot)
		require.NoError(t, err)
		co := b.Company.UUID
		owner := store.Caller{CompanyUUID: co, AgentUUID: b.Agent.UUID, OwnerUUID: b.Owner.UUID}
		pat, err := st.EnsureUser(ctx, co, "pat@example.com", "Pat")
		require.NoError(t, err)
		person := store.Caller{CompanyUUID: co, AgentUUID: pat.UUID, AgentName: "Pat", OwnerUUID: pat.UUID, ActorType: "user"}

		public, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Public"})
		require.NoError(t, err)
		admin, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Admin", Visibility: "private"})
		require.NoError(t, err)
		viewer, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Viewer", Visibility: "private"})
		require.NoError(t, err)
		hidden, err := st.CreateProject(ctx, owner, store.NewProject{Name: "Hidden", Visibility: "private"})
		require.NoError(t, err)
		require.NoError(t, insertMember(ctx, st, co, admin.UUID, pat.UUID, "admin"))
		require.NoError(t, insertMember(ctx, st, co, viewer.UUID, pat.UUID, "viewer"))

		for _, p := range []*store.Project{public, admin, viewer, hidden} {
			for _, s := range []vocab.ProposalStatus{vocab.ProposalPending, "draft"} {
				insertProposal(t, st, co, p.UUID, s)
			}
			for _, s := range []vocab.TaskStatus{vocab.TaskToVerify, vocab.TaskToVerify, "open"} {
				insertTask(t, st, co, p.UUID, s)
			}
		}

		mine := insertNotification(t, st, co, "user", pat.UUID, public.UUID)
		insertNotification(t, st, co, "agent", pat.UUID, public.UUID)               // an agent's (type differs)
		insertNotification(t, st, co, "user", b.Owner.UUID, public.UUID)            // someone else's
		insertNotification(t, st, co, "user", pat.UUID, hidden.UUID)                // of a project Pat cannot see
		agents := insertNotification(t, st, co, "agent", b.Agent.UUID, public.UUID) // the agent's own

		w, err := st.WaitingFor(ctx, person)
		require.NoError(t, err)
		require.Equal(t, store.Waiting{Mentions: 1, Proposals: 2, Tasks: 4, Projects: 2}, w,
			"Pat's own mention; the public and the admin project only")

		n, err := st.UnreadNotifications(ctx, person)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		pg, err := st.ListNotifications(ctx, person, store.NotificationFilter{Status: "all", Limit: 20})
		require.NoError(t, err)
		require.Len(t, pg.Rows, 1)
		require.Equal(t, mine, pg.Rows[0].UUID)
		_, err = st.MarkNotificationRead(ctx, person, agents)
		require.ErrorIs(t, err, store.ErrNotFound, "an agent's notification is not the person's")
		k, err := st.MarkAllNotificationsRead(ctx, person)
		require.NoError(t, err)
		require.Equal(t, 1, k)
		n, err = st.UnreadNotifications(ctx, owner)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the agent's inbox is its own, untouched")
	})
}

func insertProposal(t *testing.T, st *store.Store, company, project string, status vocab.ProposalStatus) {
	t.Helper()
	now := store.Now()
	_, err := st.DB.NewInsert().Model(&store.Proposal{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project,
		Title: "P", InputType: "idea", InputUUIDs: []string{}, DocumentDrafts: []store.DocumentDraft{}, TaskDrafts: []store.TaskDraft{},
		Status: status, CreatedByUUID: store.NewUUID(), CreatedByType: "agent", CreatedAt: now, UpdatedAt: now}).Exec(context.Background())
	require.NoError(t, err)
}

func insertTask(t *testing.T, st *store.Store, company, project string, status vocab.TaskStatus) {
	t.Helper()
	now := store.Now()
	_, err := st.DB.NewInsert().Model(&store.Task{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: project,
		Title: "T", Status: status, Priority: "medium", CreatedByUUID: store.NewUUID(), CreatedByType: "agent",
		CreatedAt: now, UpdatedAt: now}).Exec(context.Background())
	require.NoError(t, err)
}

func insertNotification(t *testing.T, st *store.Store, company, typ, recipient, project string) string {
	t.Helper()
	now := store.Now()
	n := store.Notification{UUID: store.NewUUID(), CompanyUUID: company, ProjectUUID: &project, RecipientType: typ,
		RecipientUUID: recipient, EntityType: "idea", EntityUUID: store.NewUUID(), EntityTitle: "I", Action: "mentioned",
		Message: "m", ActorType: "agent", ActorUUID: store.NewUUID(), ActorName: "A", CreatedAt: now, UpdatedAt: now}
	_, err := st.DB.NewInsert().Model(&n).Exec(context.Background())
	require.NoError(t, err)
	return n.UUID
}
