package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// people is a company with its admin (the bootstrapped owner) and two members, as managers.
type people struct {
	app            *App
	company        string
	admin, ann, bo Manager
}

func newPeople(t *testing.T) people {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "chorus.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	boot, err := s.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Olga", OwnerEmail: "olga@example.com",
		AgentName: "ops"})
	require.NoError(t, err)
	person := func(u *store.User) Manager { return Request{Who: UserPrincipal(u)}.Agent() }
	ann, err := s.CreateUser(ctx, boot.Company.UUID, "ann@example.com", "Ann", store.RoleMember)
	require.NoError(t, err)
	bo, err := s.CreateUser(ctx, boot.Company.UUID, "bo@example.com", "Bo", store.RoleMember)
	require.NoError(t, err)
	return people{app: &App{Store: s}, company: boot.Company.UUID, admin: person(&boot.Owner), ann: person(ann), bo: person(bo)}
}

func refused(t *testing.T, err error) *Refusal {
	t.Helper()
	v := Classify(err)
	require.Equal(t, vocab.OutcomeRefused, v.Outcome, "a refusal, got %v", err)
	return &Refusal{Kind: vocab.RefusalKind(v.Kind), Msg: v.Msg}
}

// A member creates agents they own, sees and manages only those; an admin manages all of the
// company's; an agent manages none (docs/rules.md "People in the console").
func TestAgentRights(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)

	ag, key, created, err := p.app.CreateAgent(ctx, p.ann, NewAgent{Name: " planner ", Presets: []string{"pm"},
		Permissions: []string{"Idea:Admin", "idea:admin"}, Persona: "plans"})
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotEmpty(t, key)
	assert.Equal(t, "planner", ag.Name)
	assert.Equal(t, []string{"pm_agent"}, ag.Roles)
	assert.Equal(t, []string{"idea:admin"}, ag.Permissions)
	require.NotNil(t, ag.OwnerUUID)
	assert.Equal(t, p.ann.Person.UUID, *ag.OwnerUUID, "a person's agent is their own")

	_, err = p.app.GetAgent(ctx, p.bo, ag.UUID)
	assert.Equal(t, "Agent not found", refused(t, err).Msg, "another member's agent is hidden")
	list, total, err := p.app.ListAgents(ctx, p.bo, 50, 0)
	require.NoError(t, err)
	assert.Zero(t, total)
	assert.Empty(t, list)
	_, _, err = p.app.IssueKey(ctx, p.bo, ag.UUID, store.NewKey{})
	assert.Equal(t, "Agent not found", refused(t, err).Msg)
	k0, err := p.app.Store.KeyByRef(ctx, p.company, key)
	require.NoError(t, err)
	_, err = p.app.RevokeKey(ctx, p.bo, k0.UUID)
	assert.Equal(t, "API key not found", refused(t, err).Msg, "another member's key is hidden")

	list, total, err = p.app.ListAgents(ctx, p.admin, 50, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, total, "the admin sees the bootstrap agent and Ann's")
	assert.Len(t, list, 2)
	k, plain, err := p.app.IssueKey(ctx, p.admin, ag.UUID, store.NewKey{Name: "ci"})
	require.NoError(t, err)
	assert.NotEmpty(t, plain)
	_, err = p.app.Store.Authenticate(ctx, plain)
	require.NoError(t, err)
	revoked, err := p.app.RevokeKey(ctx, p.ann, k.UUID)
	require.NoError(t, err)
	assert.NotNil(t, revoked.RevokedAt)
	_, err = p.app.Store.Authenticate(ctx, plain)
	assert.ErrorIs(t, err, store.ErrKeyRevoked)

	other := Manager{Caller: store.Caller{CompanyUUID: store.NewUUID()}, Operator: true}
	_, err = p.app.GetAgent(ctx, other, ag.UUID)
	assert.Equal(t, "Agent not found", refused(t, err).Msg, "another company's operator finds nothing")

	agentCaller := Manager{Caller: store.Caller{CompanyUUID: p.company, AgentUUID: ag.UUID, OwnerUUID: *ag.OwnerUUID}}
	_, _, err = p.app.ListAgents(ctx, agentCaller, 50, 0)
	assert.Equal(t, vocab.RefusedForbidden, refused(t, err).Kind, "an agent manages no agents")
}

// Bad input names its field and creates nothing; a retried create (same uuid) creates one agent
// and shows no second key; a retried key issue issues one key.
func TestCreateAgentInputAndRetry(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	for _, c := range []struct {
		n     NewAgent
		field string
	}{
		{NewAgent{Name: "  "}, "name: "},
		{NewAgent{Name: "x", Presets: []string{"boss"}}, "presets: unknown preset \"boss\""},
		{NewAgent{Name: "x", Permissions: []string{"task:fly"}}, "permissions: permission \"task:fly\""},
	} {
		_, _, _, err := p.app.CreateAgent(ctx, p.ann, c.n)
		r := refused(t, err)
		assert.Equal(t, vocab.RefusedInvalid, r.Kind)
		assert.Contains(t, r.Msg, c.field)
	}
	_, total, err := p.app.ListAgents(ctx, p.ann, 50, 0)
	require.NoError(t, err)
	assert.Zero(t, total, "refused creates made nothing")

	id := store.NewUUID()
	a1, k1, created, err := p.app.CreateAgent(ctx, p.ann, NewAgent{UUID: id, Name: "dev"})
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotEmpty(t, k1)
	assert.Equal(t, []string{"developer_agent"}, a1.Roles, "no preset and no bit: a developer")
	a2, k2, created, err := p.app.CreateAgent(ctx, p.ann, NewAgent{UUID: id, Name: "dev"})
	require.NoError(t, err)
	assert.False(t, created)
	assert.Empty(t, k2, "the key is shown to the first call only")
	assert.Equal(t, a1.UUID, a2.UUID)
	_, total, err = p.app.ListAgents(ctx, p.ann, 50, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, total)

	kid := store.NewUUID()
	_, plain, err := p.app.IssueKey(ctx, p.ann, id, store.NewKey{UUID: kid})
	require.NoError(t, err)
	assert.NotEmpty(t, plain)
	again, plain, err := p.app.IssueKey(ctx, p.ann, id, store.NewKey{UUID: kid})
	require.NoError(t, err)
	assert.Empty(t, plain)
	assert.Equal(t, kid, again.UUID)
	keys, err := p.app.Store.ListKeys(ctx, p.company, id)
	require.NoError(t, err)
	assert.Len(t, keys, 2, "the first key and one issued key")
}
