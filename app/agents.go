package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Agents and their API keys (docs/rules.md §1.3, §1.4, "People in the console"): who manages
// them, creating an agent, issuing and revoking keys. The console and the operator commands
// (chorus agent create, chorus key) call these.

// errAgentsForPeople: an agent asked to manage agents; only people and operators do.
func errAgentsForPeople() error {
	return Refuse(vocab.RefusedForbidden, "Only people and operators manage agents and keys: sign in to the console, "+
		"or use chorus agent and chorus key on the server")
}

// agentScope is whose agents m manages: "" for every agent of the company (an operator, or a
// person whose company role is admin), the person's uuid for a member (the agents they own).
// An agent is refused.
func agentScope(m Manager) (string, error) {
	switch {
	case m.Operator:
		return "", nil
	case m.Person == nil:
		return "", errAgentsForPeople()
	case m.Person.Role == store.RoleAdmin:
		return "", nil
	}
	return m.Person.UUID, nil
}

// manageableAgent is an agent of m's company that m manages; any other (another company's,
// another member's, a uuid of nothing) is "Agent not found".
func (a *App) manageableAgent(ctx context.Context, m Manager, agentUUID string) (*store.Agent, error) {
	scope, err := agentScope(m)
	if err != nil {
		return nil, err
	}
	ag, err := a.Store.GetAgent(ctx, m.Caller.CompanyUUID, strings.TrimSpace(agentUUID))
	if err != nil {
		return nil, err
	}
	if scope != "" && (ag.OwnerUUID == nil || *ag.OwnerUUID != scope) {
		return nil, store.NotFound("Agent")
	}
	return ag, nil
}

// ListAgents returns one page of the agents m manages (an admin or an operator: the company's;
// a member: their own), oldest first, with their owner's e-mail, live key count and last
// activity, and their total.
func (a *App) ListAgents(ctx context.Context, m Manager, limit, offset int) ([]store.AgentListing, int, error) {
	scope, err := agentScope(m)
	if err != nil {
		return nil, 0, err
	}
	return a.Store.ListAgentsOf(ctx, m.Caller.CompanyUUID, scope, limit, offset)
}

// AgentDetail is one agent as its manager sees it: the agent, its owner (nil: none) and its
// keys, newest first (prefixes only: a key itself is never stored).
type AgentDetail struct {
	Agent store.Agent
	Owner *store.User
	Keys  []store.KeyListing
}

// GetAgent returns an agent m manages, its owner and its keys; another is "Agent not found".
func (a *App) GetAgent(ctx context.Context, m Manager, agentUUID string) (*AgentDetail, error) {
	ag, err := a.manageableAgent(ctx, m, agentUUID)
	if err != nil {
		return nil, err
	}
	d := &AgentDetail{Agent: *ag}
	if ag.OwnerUUID != nil {
		if d.Owner, err = a.Store.UserByUUID(ctx, *ag.OwnerUUID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if d.Keys, err = a.Store.ListKeys(ctx, m.Caller.CompanyUUID, ag.UUID); err != nil {
		return nil, err
	}
	return d, nil
}

// NewAgent is an agent to create.
type NewAgent struct {
	// UUID names the agent; "" a random one. A front end derives it from the request
	// (Request.NewID("agent")), so a retried create finds the agent the first one made.
	UUID string
	Name string
	// Presets are preset names or their old aliases (perm.PresetNames); Permissions extra bits
	// "resource:action". With neither, a developer_agent.
	Presets     []string
	Permissions []string
	Persona     string
	// OwnerUUID is the owner an operator chooses (nil: none). A person's agent is always their
	// own.
	OwnerUUID *string
}

// CreateAgent creates an agent and its first API key, and returns both; the key exists only in
// this answer (its SHA-256 is stored). A member or an admin creates agents they own; an
// operator picks the owner. A retried create (the same UUID) returns the agent the first one
// made, created false and no key: that key was shown to the first call only. Bad input is a
// refusal naming the field (name, presets, permissions) and creates nothing.
func (a *App) CreateAgent(ctx context.Context, m Manager, n NewAgent) (ag *store.Agent, key string, created bool, err error) {
	if _, err := agentScope(m); err != nil {
		return nil, "", false, err
	}
	in, err := checkNewAgent(m, n)
	if err != nil {
		return nil, "", false, err
	}
	if n.UUID != "" {
		if ag, err := a.manageableAgent(ctx, m, n.UUID); err == nil {
			return ag, "", false, nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, "", false, err
		}
	}
	ag, key, err = a.Store.CreateAgent(ctx, in)
	if errors.Is(err, store.ErrConflict) && n.UUID != "" {
		// A twin of this call won the race: answer as its retry.
		ag, err = a.manageableAgent(ctx, m, n.UUID)
		return ag, "", false, err
	}
	if err != nil {
		return nil, "", false, err
	}
	return ag, key, true, nil
}

// checkNewAgent validates n and makes it the store's input: canonical presets (each once) and
// bits (sorted, each once), the owner m may give it.
func checkNewAgent(m Manager, n NewAgent) (store.NewAgent, error) {
	out := store.NewAgent{UUID: n.UUID, CompanyUUID: m.Caller.CompanyUUID, Name: strings.TrimSpace(n.Name), Roles: []string{}}
	if out.Name == "" {
		return out, Refuse(vocab.RefusedInvalid, "name: an agent needs a name (what people will call it, e.g. \"backend-dev\")")
	}
	for _, p := range n.Presets {
		if strings.TrimSpace(p) == "" {
			continue
		}
		r, err := perm.ParsePreset(p)
		if err != nil {
			return out, Refuse(vocab.RefusedInvalid, "presets: %s", err.Error())
		}
		if !slices.Contains(out.Roles, r) {
			out.Roles = append(out.Roles, r)
		}
	}
	var bits []string
	for _, b := range n.Permissions {
		if strings.TrimSpace(b) != "" {
			bits = append(bits, b)
		}
	}
	custom, err := perm.Sorted(bits)
	if err != nil {
		return out, Refuse(vocab.RefusedInvalid, "permissions: %s", err.Error())
	}
	out.Permissions = custom
	if len(out.Roles) == 0 && len(out.Permissions) == 0 {
		out.Roles = []string{perm.DeveloperAgent}
	}
	if p := strings.TrimSpace(n.Persona); p != "" {
		out.Persona = &p
	}
	switch {
	case m.Person != nil:
		out.OwnerUUID = &m.Person.UUID
	case m.Operator:
		out.OwnerUUID = n.OwnerUUID
	}
	return out, nil
}

// IssueKey gives an agent m manages another API key and returns it with its plaintext, shown
// this once. With k.UUID set (derived from the request), a retry finds the key the first call
// issued and returns it without a plaintext.
func (a *App) IssueKey(ctx context.Context, m Manager, agentUUID string, k store.NewKey) (*store.APIKey, string, error) {
	ag, err := a.manageableAgent(ctx, m, agentUUID)
	if err != nil {
		return nil, "", err
	}
	if k.UUID != "" {
		if old, err := a.Store.KeyByRef(ctx, m.Caller.CompanyUUID, k.UUID); err == nil && old.AgentUUID == ag.UUID {
			return old, "", nil
		}
	}
	return a.Store.CreateKeyWith(ctx, m.Caller.CompanyUUID, ag.UUID, k)
}

// RevokeKey revokes a key of an agent m manages, named by its uuid, prefix or plaintext (see
// store.KeyByRef); the key's next call is refused (HTTP 401). A key of an agent m does not
// manage is "API key not found"; revoking a revoked key changes nothing.
func (a *App) RevokeKey(ctx context.Context, m Manager, ref string) (*store.APIKey, error) {
	if _, err := agentScope(m); err != nil {
		return nil, err
	}
	k, err := a.Store.KeyByRef(ctx, m.Caller.CompanyUUID, ref)
	if err != nil {
		return nil, err
	}
	if _, err := a.manageableAgent(ctx, m, k.AgentUUID); errors.Is(err, store.ErrNotFound) {
		return nil, store.NotFound("API key")
	} else if err != nil {
		return nil, err
	}
	return a.Store.RevokeKey(ctx, m.Caller.CompanyUUID, k.UUID)
}
