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

	vis := func(m Manager, to string, preview bool, token string) (*store.Project, *VisibilityImpact, error) {
		return p.app.SetProjectVisibility(ctx, m, VisibilityChange{ProjectUUID: proj.UUID, Visibility: to, Preview: preview, Token: token})
	}
	_, _, err = vis(p.ann, "private", true, "")
	assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg,
		"an editor of a public project cannot close it to everyone else")
	_, _, err = vis(p.admin, "secret", true, "")
	assert.Contains(t, refused(t, err).Msg, "visibility: must be public or private")

	_, impact, err := vis(p.admin, "private", true, "")
	require.NoError(t, err)
	assert.True(t, impact.RequiresConfirmation)
	lost := map[string]bool{}
	for _, ch := range impact.Changes {
		lost[ch.UserUUID] = ch.After == store.AccessNone
	}
	assert.Equal(t, map[string]bool{p.ann.Person.UUID: true, p.bo.Person.UUID: true}, lost,
		"the members without a role lose access; the admin keeps it")
	_, _, err = vis(p.admin, "private", false, "")
	assert.Contains(t, refused(t, err).Msg, "Confirmation required")
	_, _, _, err = p.app.GrantProjectRole(ctx, p.admin, proj.UUID, p.bo.Person.UUID, "editor")
	require.NoError(t, err)
	_, _, err = vis(p.admin, "private", false, impact.Token)
	assert.Contains(t, refused(t, err).Msg, "stale", "a member added since the preview makes its token stale")
	pv, err := p.app.Store.GetProject(ctx, p.admin.Caller, proj.UUID)
	require.NoError(t, err)
	assert.Equal(t, "public", pv.Visibility, "refused changes changed nothing")

	_, impact, err = vis(p.admin, "private", true, "")
	require.NoError(t, err)
	got, _, err := vis(p.admin, "private", false, impact.Token)
	require.NoError(t, err)
	assert.Equal(t, "private", got.Visibility)
	got, impact, err = vis(p.admin, "private", false, "")
	require.NoError(t, err)
	assert.False(t, impact.RequiresConfirmation, "the same visibility again changes nothing and needs no token")
	assert.Equal(t, "private", got.Visibility)
	_, _, _, err = p.app.RevokeProjectRole(ctx, p.admin, proj.UUID, p.bo.Person.UUID)
	require.NoError(t, err)

	_, _, err = vis(p.ann, "public", true, "")
	assert.Equal(t, "Project not found", refused(t, err).Msg, "an outsider of a private project finds nothing")
	_, err = p.app.SetProjectClaimTTL(ctx, p.ann, proj.UUID, 60)
	assert.Equal(t, "Project not found", refused(t, err).Msg)

	_, _, _, err = p.app.GrantProjectRole(ctx, p.admin, proj.UUID, p.ann.Person.UUID, "viewer")
	require.NoError(t, err)
	_, err = p.app.SetProjectClaimTTL(ctx, p.ann, proj.UUID, 60)
	assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg, "a viewer reads, never acts")
	_, _, err = vis(p.ann, "public", true, "")
	assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg)

	_, err = p.app.SetProjectClaimTTL(ctx, p.admin, proj.UUID, -1)
	r := refused(t, err)
	assert.Equal(t, vocab.RefusedInvalid, r.Kind)
	assert.Contains(t, r.Msg, "claimTtlSeconds: must be between 0")
	got, err = p.app.SetProjectClaimTTL(ctx, p.admin, proj.UUID, 1800)
	require.NoError(t, err)
	require.NotNil(t, got.ClaimTTLSeconds)
	pv, err = p.app.Store.GetProject(ctx, p.admin.Caller, proj.UUID)
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
	_, _, err = p.app.SetProjectVisibility(ctx, Operator(p.company), VisibilityChange{ProjectUUID: proj.UUID, Visibility: "public"})
	assert.Contains(t, refused(t, err).Msg, "visibility: the project is in a private group")
}

// Adding a member by e-mail checks the project and the right to manage it before the e-mail: an
// editor who may not manage the project is refused the same way for a person of the company and
// for an unknown address (nothing tells them who is in the company); an outsider of a private
// project finds no project; the admin adds the person, and an unknown address names the field.
func TestGrantProjectRoleByEmailChecksTheRightFirst(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	proj, err := p.app.Store.CreateProject(ctx, p.admin.Caller, store.NewProject{Name: "Apollo"})
	require.NoError(t, err)
	for _, email := range []string{"bo@example.com", "nobody@example.com"} {
		_, _, _, err = p.app.GrantProjectRoleByEmail(ctx, p.ann, proj.UUID, email, "admin")
		assert.Equal(t, "Only project admins can manage this project", refused(t, err).Msg, email)
	}
	secret, err := p.app.Store.CreateProject(ctx, p.admin.Caller, store.NewProject{Name: "Vault", Visibility: "private"})
	require.NoError(t, err)
	_, _, _, err = p.app.GrantProjectRoleByEmail(ctx, p.ann, secret.UUID, "nobody@example.com", "viewer")
	assert.Equal(t, "Project not found", refused(t, err).Msg)

	_, _, _, err = p.app.GrantProjectRoleByEmail(ctx, p.admin, proj.UUID, "nobody@example.com", "viewer")
	assert.Contains(t, refused(t, err).Msg, `email: no person of this company has the e-mail "nobody@example.com"`)
	_, u, changed, err := p.app.GrantProjectRoleByEmail(ctx, p.admin, proj.UUID, " BO@example.com ", "admin")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, p.bo.Person.UUID, u.UUID)
}
