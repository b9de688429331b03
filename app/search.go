package app

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Search (docs/rules.md §4.12): full-text search with the database's own engine
// (store/search.go), and the people a caller can mention.

// SearchInput is a search: words (all must match) or a uuid, in a scope, over some kinds.
type SearchInput struct {
	Query string
	// Scope is "global" (or ""), "group" or "project"; ScopeUUID names the group or project.
	Scope       string
	ScopeUUID   *string
	EntityTypes []string
	// Limit is how many hits to return, and how many to take of each kind.
	Limit int
}

// SearchResult is what a search found: at most Limit hits, newest first, the full match count
// per kind, and the search terms a snippet looks for (none when a uuid was found).
type SearchResult struct {
	Hits   []store.SearchHit
	Counts map[string]int
	Terms  []string
}

// Search finds what the caller can see. A query that is a uuid is looked up first, and only when
// nothing has that uuid are its words searched.
func (a *App) Search(ctx context.Context, r Request, in SearchInput) (SearchResult, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return SearchResult{}, Refuse(vocab.RefusedInvalid, "Input validation error: query must not be blank: give words to find, or an entity's uuid")
	}
	req := store.SearchRequest{Text: q, Entities: in.EntityTypes, PerKind: in.Limit}
	if in.ScopeUUID != nil && in.Scope != "group" && in.Scope != "project" {
		return SearchResult{}, Refuse(vocab.RefusedInvalid, "Input validation error: scopeUuid only applies to scope \"group\" or \"project\": set scope to the kind of %s, or leave scopeUuid out to search everything you can see", *in.ScopeUUID)
	}
	switch in.Scope {
	case "group", "project":
		if in.ScopeUUID == nil {
			return SearchResult{}, Refuse(vocab.RefusedPrecondition, "scopeUuid is required for scope %q", in.Scope)
		}
		if in.Scope == "group" {
			req.GroupUUID = *in.ScopeUUID
		} else {
			req.ProjectUUID = *in.ScopeUUID
		}
	}
	out := SearchResult{Counts: map[string]int{}, Terms: store.SearchTerms(q)}
	if id, err := uuid.Parse(q); err == nil && len(q) == 36 { // docs/rules.md §4.12: a uuid is looked up first
		hit, err := a.Store.SearchUUID(ctx, r.Who.Caller, req, id.String())
		if err != nil {
			return SearchResult{}, err
		}
		if hit != nil {
			out.Hits, out.Counts[hit.EntityType] = []store.SearchHit{*hit}, 1
			out.Terms = nil
		}
	}
	if out.Hits == nil {
		res, err := a.Store.Search(ctx, r.Who.Caller, req)
		if err != nil {
			return SearchResult{}, err
		}
		out.Hits, out.Counts = res.Hits, res.Counts
	}
	slices.SortStableFunc(out.Hits, func(a, b store.SearchHit) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(b.UUID, a.UUID))
	})
	if len(out.Hits) > in.Limit {
		out.Hits = out.Hits[:in.Limit]
	}
	return out, nil
}

// Mentionables are the users and agents the caller can @-mention whose name or email holds
// query; with an entity (an idea, proposal, task or document the caller can see), only those
// who can see its project.
func (a *App) Mentionables(ctx context.Context, r Request, query, entityType string, entityUUID *string) ([]store.Mentionable, error) {
	if (entityType == "") != (entityUUID == nil) {
		return nil, Refuse(vocab.RefusedInvalid, "Input validation error: entityType and entityUuid go together: give both to see who can access an entity, or neither")
	}
	var project *store.ProjectView
	if entityUUID != nil {
		projectUUID, err := a.entityProject(ctx, r, entityType, *entityUUID)
		if err != nil {
			return nil, err
		}
		if project, err = a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
			return nil, err
		}
	}
	return a.Store.Mentionables(ctx, r.Who.Caller, query, project)
}

// entityProject gates an idea, proposal, task or document for reading and returns its project.
func (a *App) entityProject(ctx context.Context, r Request, typ, id string) (string, error) {
	if typ == "document" {
		doc, _, err := a.Store.DocumentAccess(ctx, r.Who.Caller, id, store.AccessViewer)
		if err != nil {
			return "", err
		}
		return doc.ProjectUUID, nil
	}
	t, err := a.Store.TargetAccess(ctx, r.Who.Caller, typ, id, store.AccessViewer)
	if err != nil {
		return "", err
	}
	return t.ProjectUUID, nil
}
