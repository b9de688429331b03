package app

import (
	"context"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Edits of an idea that read more than the idea: its new parent (edit) or its new project (move).

// stepRefusal words a refused step of a use case under the use case's own words: prefix, then
// the refusal's sentence ("Failed to move Idea: Project not found"); a sentence that already
// starts with prefix is not prefixed twice, unless always. Any other error (an outage, a call
// still running, an internal error) is returned as it is, so it reads as what it is and never
// shows its raw text.
func stepRefusal(prefix string, err error, always bool) error {
	v := Classify(err)
	if v.Outcome == vocab.OutcomeRefused && (always || !strings.HasPrefix(v.Msg, prefix)) {
		return Refuse(vocab.RefusedPrecondition, "%s%s", prefix, v.Msg)
	}
	return err
}

// EditIdeaInput changes an idea; nil fields keep their value.
type EditIdeaInput struct {
	IdeaUUID   string
	Title      *string
	Content    *string
	ParentUUID *string
	// DetachParent makes the idea top-level; it excludes ParentUUID.
	DetachParent bool
	IsContainer  *bool
}

// EditIdea changes an idea's title, content, parent or theme flag and reads it back. The parent
// must be in the same project (the workflow refuses a descendant).
func (a *App) EditIdea(ctx context.Context, r Request, in EditIdeaInput) (*store.Idea, error) {
	i, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, in.IdeaUUID, store.AccessEditor)
	if err != nil {
		return nil, err
	}
	if in.ParentUUID != nil && in.DetachParent {
		return nil, Refuse(vocab.RefusedInvalid,
			"Input validation error: give parentUuid (a new parent) or detachParent (no parent), not both")
	}
	if in.ParentUUID != nil {
		parent, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, *in.ParentUUID, store.AccessViewer)
		if err != nil {
			return nil, stepRefusal("Failed to edit Idea: ", err, true)
		}
		if parent.ProjectUUID != i.ProjectUUID {
			return nil, Refuse(vocab.RefusedPrecondition, "Failed to edit Idea: Parent idea must be in the same project")
		}
	}
	act := r.Who.Actor()
	_, err = workflows.Send(ctx, a.Flows, workflows.EditIdea, in.IdeaUUID, r.Flow(), act.UUID, workflows.EditIdeaInput{
		Actor: act, Title: in.Title, Content: in.Content, SetParent: in.ParentUUID != nil || in.DetachParent,
		ParentUUID: in.ParentUUID, IsContainer: in.IsContainer})
	if err != nil {
		return nil, err
	}
	i, _, err = a.Store.IdeaAccess(ctx, r.Who.Caller, in.IdeaUUID, store.AccessViewer)
	return i, err
}

// MovedIdea is an idea after a move, with the project it is in now and the rows that moved.
type MovedIdea struct {
	UUID        string
	ProjectUUID string
	ProjectName string
	Moved       store.MoveCounts
}

// MoveIdea moves an idea with its descendants and their proposals, documents and tasks of its
// project to another project the caller edits (docs/rules.md §4.4, §5.9). A failed access check
// is refused under "Failed to move Idea: ".
func (a *App) MoveIdea(ctx context.Context, r Request, ideaUUID, targetProjectUUID string) (MovedIdea, error) {
	const prefix = "Failed to move Idea: "
	if _, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessEditor); err != nil {
		return MovedIdea{}, stepRefusal(prefix, err, false)
	}
	target, err := a.Store.RequireProject(ctx, r.Who.Caller, targetProjectUUID, store.AccessEditor)
	if err != nil {
		return MovedIdea{}, stepRefusal(prefix, err, false)
	}
	act := r.Who.Actor()
	res, err := workflows.Send(ctx, a.Flows, workflows.MoveIdea, ideaUUID, r.Flow(), act.UUID,
		workflows.MoveIdeaInput{Actor: act, TargetProjectUUID: target.UUID, TargetProjectName: target.Name})
	if err != nil {
		return MovedIdea{}, err
	}
	out := MovedIdea{UUID: res.UUID, ProjectUUID: target.UUID, ProjectName: target.Name}
	if res.Moved != nil {
		out.Moved = *res.Moved
	}
	return out, nil
}
