package app

import (
	"log/slog"
	"strconv"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/webhook"
	"github.com/chorus-dev/chorus/workflows"
)

// MaxChangeBytes bounds what one change may carry, measured by its front end as JSON without
// HTML escaping (a '<' is one byte, a control character the six of \u0001): a mutating MCP
// call's arguments, a console form's values. 512 KiB keeps every update and activity payload far
// below Temporal's 2 MB limit, over which a workflow task fails on every attempt
// (docs/write-path.md, "Bounded state and payloads"; docs/rules.md §3.5).
const MaxChangeBytes = 512 << 10

// App is what the use cases run on: the store for reads and records, the lifecycle client for
// workflow commands, and the logger. Store is always needed; a use case that sends no workflow
// command (the operator's access changes of `chorus project`) runs without Flows, and a nil Log
// logs nothing.
type App struct {
	Store *store.Store
	Flows *workflows.Client
	Log   *slog.Logger
	// Events wakes event streams (OpenEvents); nil in a process that serves none.
	Events *store.EventHub
	// WebhookPolicy is where a project's webhooks may point (checked by AddWebhook); the zero
	// policy allows public addresses only (docs/security.md "Webhooks").
	WebhookPolicy webhook.Policy
}

// Principal is an authenticated caller: the agent an API key belongs to, with the key's
// permissions (docs/rules.md §3.2, §6).
type Principal struct {
	Caller  store.Caller
	Perms   perm.Set
	KeyUUID string
	// ReadOnlyKey: the key may call only tools that change nothing (docs/rules.md §3.3).
	ReadOnlyKey bool
	Agent       store.Agent
	Owner       *store.User
}

// Actor is the principal as workflow commands record it.
func (p Principal) Actor() workflows.Actor {
	return workflows.Actor{Type: p.Caller.Kind(), UUID: p.Caller.AgentUUID, Name: p.Caller.AgentName,
		CompanyUUID: p.Caller.CompanyUUID, OwnerUUID: p.Caller.OwnerUUID}
}

// Request is one call of a use case: who calls, and the caller's optional idempotency key
// (docs/rules.md §8.5).
type Request struct {
	Who Principal
	// RequestID is the caller's idempotency key, "" when absent. Lifecycle commands use it as
	// the Temporal update id.
	RequestID string
	// Generation is the requestId's generation; 0 without a requestId.
	Generation int
	// Retry: an earlier call with this requestId and generation started and its outcome is not
	// recorded, so its command may have been applied already (see workflows.Call).
	Retry bool
}

// NewID is the uuid of an entity of the given kind this request creates: random without a
// requestId, and derived from the caller, requestId and generation with one, so a retried call
// names the same entity (docs/rules.md §8.5).
func (r Request) NewID(kind string) string {
	if r.RequestID == "" {
		return store.NewUUID()
	}
	return workflows.DerivedUUID(kind, r.Who.Caller.AgentUUID, r.RequestID, strconv.Itoa(r.Generation))
}

// Flow is the request's idempotency key as the workflow client takes it.
func (r Request) Flow() workflows.Call {
	return workflows.Call{RequestID: r.RequestID, Generation: r.Generation, Retry: r.Retry}
}

// UserPrincipal is a person signed in to the console (or named on the command line) as a caller
// of the use cases. A person holds every permission bit: what they may do in a project is their
// project access level alone, so a viewer reads and is refused every change ("Insufficient
// project access"), and an editor or admin acts (docs/rules.md §6.3, "People in the console").
// Their actor in activity, notifications and workflow histories is {type "user", their uuid,
// their display name}.
func UserPrincipal(u *store.User) Principal {
	return Principal{
		Caller: store.Caller{CompanyUUID: u.CompanyUUID, AgentUUID: u.UUID, AgentName: u.DisplayName(),
			OwnerUUID: u.UUID, ActorType: "user"},
		Perms: perm.All,
		Owner: u,
	}
}

// IsUser reports whether the principal is a person rather than an agent.
func (p Principal) IsUser() bool { return p.Caller.Kind() == "user" }
