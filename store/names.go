package store

import (
	"context"

	"github.com/uptrace/bun"
)

// ActorRef is a user or agent as tools show it: {type, uuid, name}.
type ActorRef struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
	Name string `json:"name"`
}

// Namer resolves display names of users and agents, one query per kind, cached per request.
type Namer struct {
	db     bun.IDB
	agents map[string]string
	users  map[string]string
}

// NewNamer returns a Namer over the store.
func (s *Store) NewNamer() *Namer {
	return &Namer{db: s.DB, agents: map[string]string{}, users: map[string]string{}}
}

// Prefetch loads the names of the given refs in two queries.
func (n *Namer) Prefetch(ctx context.Context, refs ...ActorRef) {
	var agents, users []string
	for _, r := range refs {
		switch r.Type {
		case "agent", "agent_instance":
			if _, ok := n.agents[r.UUID]; !ok && r.UUID != "" {
				agents = append(agents, r.UUID)
			}
		case "user":
			if _, ok := n.users[r.UUID]; !ok && r.UUID != "" {
				users = append(users, r.UUID)
			}
		}
	}
	if len(agents) > 0 {
		var rows []Agent
		_ = n.db.NewSelect().Model(&rows).Column("uuid", "name").Where("uuid IN (?)", bun.List(agents)).Scan(ctx)
		for _, a := range rows {
			n.agents[a.UUID] = a.Name
		}
	}
	if len(users) > 0 {
		var rows []User
		_ = n.db.NewSelect().Model(&rows).Column("uuid", "name", "email").Where("uuid IN (?)", bun.List(users)).Scan(ctx)
		for _, u := range rows {
			n.users[u.UUID] = u.DisplayName()
		}
	}
}

// Ref returns {type, uuid, name} for a user or agent, or nil when uuid is nil. An unknown
// uuid keeps its type and uuid with the name "Unknown".
func (n *Namer) Ref(ctx context.Context, typ string, uuid *string) *ActorRef {
	if uuid == nil || *uuid == "" {
		return nil
	}
	if typ == "" {
		typ = "agent"
	}
	r := ActorRef{Type: typ, UUID: *uuid}
	n.Prefetch(ctx, r)
	var ok bool
	if typ == "user" {
		r.Name, ok = n.users[*uuid]
	} else {
		r.Name, ok = n.agents[*uuid]
	}
	if !ok {
		// A column that names its actor without a type (reviewed_by_uuid, assigned_by_uuid) may
		// hold a person's uuid (a decision taken in the console): try the other table before
		// giving up, and say which it was.
		other := "user"
		if typ == "user" {
			other = "agent"
		}
		n.Prefetch(ctx, ActorRef{Type: other, UUID: *uuid})
		if other == "user" {
			r.Name, ok = n.users[*uuid]
		} else {
			r.Name, ok = n.agents[*uuid]
		}
		if ok {
			r.Type = other
		} else {
			r.Name = "Unknown"
		}
	}
	return &r
}

// Name returns the display name of a user or agent ("Unknown" when it does not exist).
func (n *Namer) Name(ctx context.Context, typ, uuid string) string {
	if r := n.Ref(ctx, typ, &uuid); r != nil {
		return r.Name
	}
	return "Unknown"
}
