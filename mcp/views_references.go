package mcp

import (
	"context"
	"time"

	"github.com/chorus-dev/chorus/store"
)

// ReferenceView is the ReferenceArtifact JSON (docs/rules.md §1.16): what the reference tools
// return, and the references[] of ideas, proposals and tasks, oldest first.
type ReferenceView struct {
	UUID       string          `json:"uuid"`
	TargetType string          `json:"targetType" jsonschema:"idea, proposal or task"`
	TargetUUID string          `json:"targetUuid"`
	Type       string          `json:"type"`
	URL        string          `json:"url"`
	Title      string          `json:"title"`
	Notes      *string         `json:"notes"`
	CreatedBy  *store.ActorRef `json:"createdBy"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}

func referenceView(ctx context.Context, n *store.Namer, r store.Reference) ReferenceView {
	return ReferenceView{UUID: r.UUID, TargetType: r.TargetType, TargetUUID: r.TargetUUID, Type: r.Type, URL: r.URL,
		Title: r.Title, Notes: r.Notes, CreatedBy: n.Ref(ctx, r.CreatedByType, &r.CreatedByUUID),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// referenceViews is a target's references[] as read back on it: oldest first, never null.
func referenceViews(ctx context.Context, n *store.Namer, rs []store.Reference) []ReferenceView {
	out := make([]ReferenceView, len(rs))
	for i, r := range rs {
		out[i] = referenceView(ctx, n, r)
	}
	return out
}

// targetReferences reads the first store.EntityListRows of a target's references[] and how many
// it has.
func targetReferences(ctx context.Context, d *Deps, n *store.Namer, targetType, targetUUID string) ([]ReferenceView, int, error) {
	rs, total, err := d.Store.References(ctx, targetType, targetUUID, store.EntityListRows, 0)
	if err != nil {
		return nil, 0, err
	}
	n.Prefetch(ctx, referenceAuthors(rs)...)
	return referenceViews(ctx, n, rs), total, nil
}

// AttachmentView is one entry of an idea's attachments (docs/rules.md §1.6; not settable through MCP).
type AttachmentView struct {
	Type string `json:"type"`
	URL  string `json:"url"`
	Name string `json:"name"`
}

// referenceAuthors are the creators of rs, for a Namer to load in one query.
func referenceAuthors(rs []store.Reference) []store.ActorRef {
	out := make([]store.ActorRef, len(rs))
	for i, r := range rs {
		out[i] = store.ActorRef{Type: r.CreatedByType, UUID: r.CreatedByUUID}
	}
	return out
}
