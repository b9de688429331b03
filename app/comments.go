package app

import (
	"context"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Comments (docs/rules.md §4.15) are records: plain store transactions, no workflow.

// AddCommentInput is a comment on an idea, proposal, task or document.
type AddCommentInput struct {
	TargetType string
	TargetUUID string
	// Content is markdown; @-mentions in it are notified.
	Content string
}

// AddComment comments on an entity of a project the caller edits; the store notifies the people
// it concerns and the @-mentioned.
func (a *App) AddComment(ctx context.Context, r Request, in AddCommentInput) (*store.Comment, error) {
	if strings.TrimSpace(in.Content) == "" {
		return nil, Refuse(vocab.RefusedInvalid, "Input validation error: content must not be blank: write the comment's text")
	}
	t, _, err := a.Store.EntityAccess(ctx, r.Who.Caller, in.TargetType, in.TargetUUID, store.AccessEditor)
	if err != nil {
		return nil, err
	}
	return a.Store.AddComment(ctx, store.NewComment{UUID: r.NewID("comment"), Target: *t, Content: in.Content, Caller: r.Who.Caller})
}

// ListComments is a page of the comments on an entity the caller can see, newest first, and how
// many there are.
func (a *App) ListComments(ctx context.Context, r Request, targetType, targetUUID string, size, offset int) ([]store.Comment, int, error) {
	if _, _, err := a.Store.EntityAccess(ctx, r.Who.Caller, targetType, targetUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	return a.Store.ListComments(ctx, r.Who.Caller.CompanyUUID, targetType, targetUUID, size, offset)
}
