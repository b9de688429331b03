package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// TestConsoleSignInRows covers the rows behind console sign-in: a link signs in once, an expired
// link never, a session ends everywhere at sign-out, and an expired one is gone.
func TestConsoleSignInRows(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { consoleSignInRows(t, storetest.Open(t, d)) })
	}
}

func consoleSignInRows(t *testing.T, st *store.Store) {
	{
		ctx := context.Background()
		boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
			OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
		require.NoError(t, err)
		require.Equal(t, store.RoleAdmin, boot.Owner.Role, "the bootstrapped owner is the company's admin")

		u, err := st.CreateUser(ctx, boot.Company.UUID, "Ann@Example.com", "", store.RoleMember)
		require.NoError(t, err)
		require.Equal(t, "Ann@Example.com", u.DisplayName())
		_, err = st.CreateUser(ctx, boot.Company.UUID, "ann@example.com", "Ann", store.RoleMember)
		require.ErrorIs(t, err, store.ErrConflict, "e-mails are unique per company, whatever their case")
		_, err = st.CreateUser(ctx, boot.Company.UUID, "not-an-email", "", store.RoleMember)
		require.ErrorContains(t, err, "email:")
		_, err = st.CreateUser(ctx, boot.Company.UUID, "bob@example.com", "", "owner")
		require.ErrorContains(t, err, "role:")

		link, err := st.CreateLoginLink(ctx, u, time.Hour)
		require.NoError(t, err)
		got, err := st.ConsumeLoginLink(ctx, link)
		require.NoError(t, err)
		require.Equal(t, u.UUID, got.UUID)
		_, err = st.ConsumeLoginLink(ctx, link)
		require.ErrorIs(t, err, store.ErrLinkUnusable, "a link signs in once")
		stale, err := st.CreateLoginLink(ctx, u, -time.Second)
		require.NoError(t, err)
		_, err = st.ConsumeLoginLink(ctx, stale)
		require.ErrorIs(t, err, store.ErrLinkUnusable, "an expired link never signs in")

		tok, err := st.StartConsoleSession(ctx, u, time.Hour)
		require.NoError(t, err)
		who, _, err := st.ConsoleSessionUser(ctx, tok)
		require.NoError(t, err)
		require.Equal(t, u.UUID, who.UUID)
		require.NoError(t, st.EndConsoleSession(ctx, tok))
		_, _, err = st.ConsoleSessionUser(ctx, tok)
		require.ErrorIs(t, err, store.ErrNoSession, "a session ends at sign-out")

		old, err := st.StartConsoleSession(ctx, u, -time.Second)
		require.NoError(t, err)
		_, _, err = st.ConsoleSessionUser(ctx, old)
		require.ErrorIs(t, err, store.ErrNoSession, "an expired session does not sign in")
	}
}

// A column that names its actor without a type may hold a person's uuid: the namer finds them
// as a user instead of an unknown agent (an approval taken in the console, read over MCP).
func TestNamerFindsAPersonWhereAnAgentWasExpected(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			st := storetest.Open(t, d)
			ctx := context.Background()
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Ada Admin",
				OwnerEmail: "ada@example.com", AgentName: "Admin Agent"})
			require.NoError(t, err)
			ref := st.NewNamer().Ref(ctx, "agent", &boot.Owner.UUID)
			require.Equal(t, &store.ActorRef{Type: "user", UUID: boot.Owner.UUID, Name: "Ada Admin"}, ref)
			ref = st.NewNamer().Ref(ctx, "agent", &boot.Agent.UUID)
			require.Equal(t, &store.ActorRef{Type: "agent", UUID: boot.Agent.UUID, Name: "Admin Agent"}, ref)
			missing := store.NewUUID()
			require.Equal(t, "Unknown", st.NewNamer().Ref(ctx, "agent", &missing).Name)
		})
	}
}
