package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// TestLinkOIDCUser covers how a provider identity finds its user: by subject; else, once, by a
// verified e-mail of a user not linked yet; never by an unverified e-mail, never across
// companies, never moving a link to another subject.
func TestLinkOIDCUser(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) { linkOIDCUser(t, storetest.Open(t, d)) })
	}
}

func linkOIDCUser(t *testing.T, st *store.Store) {
	ctx := context.Background()
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
	require.NoError(t, err)
	co := boot.Company.UUID
	ann, err := st.CreateUser(ctx, co, "ann@example.com", "", store.RoleMember)
	require.NoError(t, err)
	sub := store.OIDCSubject("https://login.example.com", "ann-1")
	require.Equal(t, "https://login.example.com|ann-1", sub)

	_, err = st.LinkOIDCUser(ctx, co, store.OIDCIdentity{Subject: sub, Email: "ann@example.com"})
	require.ErrorIs(t, err, store.ErrNoOIDCUser, "an unverified e-mail links nobody")
	_, err = st.LinkOIDCUser(ctx, store.NewUUID(), store.OIDCIdentity{Subject: sub, Email: "ann@example.com", EmailVerified: true})
	require.ErrorIs(t, err, store.ErrNoOIDCUser, "another company's user is nobody here")
	_, err = st.LinkOIDCUser(ctx, co, store.OIDCIdentity{Subject: "local:ann@example.com"})
	require.ErrorContains(t, err, "oidc subject:")

	got, err := st.LinkOIDCUser(ctx, co, store.OIDCIdentity{Subject: sub, Email: "ANN@example.com", EmailVerified: true})
	require.NoError(t, err)
	require.Equal(t, ann.UUID, got.UUID)
	again, err := st.UserByUUID(ctx, ann.UUID)
	require.NoError(t, err)
	require.Equal(t, sub, again.OIDCSub)

	got, err = st.LinkOIDCUser(ctx, co, store.OIDCIdentity{Subject: sub})
	require.NoError(t, err, "found by subject, no e-mail needed")
	require.Equal(t, ann.UUID, got.UUID)
	_, err = st.LinkOIDCUser(ctx, co, store.OIDCIdentity{Subject: store.OIDCSubject("https://login.example.com", "other"),
		Email: "ann@example.com", EmailVerified: true})
	require.ErrorIs(t, err, store.ErrOIDCLinkedElsewhere)
	_, err = st.LinkOIDCUser(ctx, co, store.OIDCIdentity{Subject: store.OIDCSubject("https://login.example.com", "zed"),
		Email: "zed@example.com", EmailVerified: true})
	require.ErrorIs(t, err, store.ErrNoOIDCUser)
}
