package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Visibility needs admin on the project; a viewer is refused, an outsider of a private project
// finds nothing; the claim time to live needs manage_project and a value in range.
func TestProjectSettingsRights(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	proj, err := p.app.Store.CreateProject(ctx, p.admin.Caller, store.NewProject{Name: "Apollo"})
	require.NoError(t, err)

	_, _, err = p.app.SetProjectVisibility(ctx, p.ann, proj.UUID, "private")
	assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg,
		"an editor of a public project cannot close it to everyone else")
	_, _, err = p.app.SetProjectVisibility(ctx, p.admin, proj.UUID, "secret")
	assert.Contains(t, refused(t, err).Msg, "visibility: must be public or private")

	got, changed, err := p.app.SetProjectVisibility(ctx, p.admin, proj.UUID, "private")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, "private", got.Visibility)
	_, changed, err = p.app.SetProjectVisibility(ctx, p.admin, proj.UUID, "private")
	require.NoError(t, err)
	assert.False(t, changed, "setting the same visibility changes nothing")

	_, _, err = p.app.SetProjectVisibility(ctx, p.ann, proj.UUID, "public")
	assert.Equal(t, "Project not found", refused(t, err).Msg, "an outsider of a private project finds nothing")
	_, err = p.app.SetProjectClaimTTL(ctx, p.ann, proj.UUID, 60)
	assert.Equal(t, "Project not found", refused(t, err).Msg)

	_, _, _, err = p.app.GrantProjectRole(ctx, p.admin, proj.UUID, p.ann.Person.UUID, "viewer")
	require.NoError(t, err)
	_, err = p.app.SetProjectClaimTTL(ctx, p.ann, proj.UUID, 60)
	assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg, "a viewer reads, never acts")
	_, _, err = p.app.SetProjectVisibility(ctx, p.ann, proj.UUID, "public")
	assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg)

	_, err = p.app.SetProjectClaimTTL(ctx, p.admin, proj.UUID, -1)
	r := refused(t, err)
	assert.Equal(t, vocab.RefusedInvalid, r.Kind)
	assert.Contains(t, r.Msg, "claimTtlSeconds: must be between 0")
	got, err = p.app.SetProjectClaimTTL(ctx, p.admin, proj.UUID, 1800)
	require.NoError(t, err)
	require.NotNil(t, got.ClaimTTLSeconds)
	pv, err := p.app.Store.GetProject(ctx, p.admin.Caller, proj.UUID)
	require.NoError(t, err)
	require.NotNil(t, pv.ClaimTTLSeconds)
	assert.EqualValues(t, 1800, *pv.ClaimTTLSeconds)
	assert.Equal(t, "private", pv.Visibility)

	_, err = p.app.SetProjectClaimTTL(ctx, Operator(p.company), proj.UUID, 0)
	require.NoError(t, err)
	pv, err = p.app.Store.GetProject(ctx, p.admin.Caller, proj.UUID)
	require.NoError(t, err)
	assert.Nil(t, pv.ClaimTTLSeconds, "0 turns leases off")

	_, err = p.app.CompanyUserByEmail(ctx, p.admin, "nobody@example.com")
	assert.Contains(t, refused(t, err).Msg, "email: no person of this company")
	u, err := p.app.CompanyUserByEmail(ctx, p.admin, " ANN@example.com ")
	require.NoError(t, err)
	assert.Equal(t, p.ann.Person.UUID, u.UUID)
}

// A project in a private group stays private.
func TestProjectInPrivateGroupStaysPrivate(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	g, err := p.app.CreateGroup(ctx, Request{Who: UserPrincipal(p.admin.Person)}, NewGroup{Name: "Secret", Visibility: "private"})
	require.NoError(t, err)
	proj, err := p.app.Store.CreateProject(ctx, p.admin.Caller, store.NewProject{Name: "Hidden", GroupUUID: &g.UUID})
	require.NoError(t, err)
	require.Equal(t, "private", proj.Visibility)
	_, _, err = p.app.SetProjectVisibility(ctx, Operator(p.company), proj.UUID, "public")
	assert.Contains(t, refused(t, err).Msg, "visibility: the project is in a private group")
}
