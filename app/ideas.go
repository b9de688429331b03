package app

import (
	"context"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Idea use cases (docs/rules.md §4.3, §4.4, §2.1, §2.2). Reads come from the store; every change
// is an update on the idea's workflow.

// ListIdeas is a page of a project's ideas, newest first, and how many there are. A status word
// other than open, elaborating and elaborated is accepted and matches nothing (docs/rules.md §8.9).
func (a *App) ListIdeas(ctx context.Context, r Request, projectUUID, status string, size, offset int) ([]store.IdeaRow, int, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	switch vocab.IdeaStatus(status) {
	case "", vocab.IdeaOpen, vocab.IdeaElaborating, vocab.IdeaElaborated:
	default:
		status = "legacy"
	}
	return a.Store.ListIdeas(ctx, projectUUID, status, size, offset)
}

// GetIdea reads an idea the caller can see, with what its view shows (progress, children, reports).
func (a *App) GetIdea(ctx context.Context, r Request, ideaUUID string) (*store.IdeaDetail, error) {
	i, p, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessViewer)
	if err != nil {
		return nil, err
	}
	return a.Store.GetIdeaDetail(ctx, i, p)
}

// AvailableIdeas lists up to 50 open ideas of a project that the caller can claim.
func (a *App) AvailableIdeas(ctx context.Context, r Request, projectUUID string) ([]store.Idea, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, err
	}
	return a.Store.AvailableIdeas(ctx, projectUUID)
}

// IdeaElaboration is an idea with its elaboration rounds.
type IdeaElaboration struct {
	Idea   *store.Idea
	Rounds []store.ElaborationRound
	// Gate, when set, is the gate resolving waits at for a person (docs/rules.md §6.7).
	Gate *Gate
}

// Elaboration reads an idea's elaboration rounds with their questions and answers.
func (a *App) Elaboration(ctx context.Context, r Request, ideaUUID string) (IdeaElaboration, error) {
	i, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessViewer)
	if err != nil {
		return IdeaElaboration{}, err
	}
	rounds, err := a.Store.Elaboration(ctx, i.UUID)
	if err != nil {
		return IdeaElaboration{}, err
	}
	return IdeaElaboration{Idea: i, Rounds: rounds}, nil
}

// CreateIdeaInput is a new open idea.
type CreateIdeaInput struct {
	ProjectUUID string
	Title       string
	Content     *string
	ParentUUID  *string
	// IsContainer makes a theme, which groups child ideas and cannot be a proposal input.
	IsContainer bool
	References  []ReferenceInput
}

// CreatedIdea is an idea just created.
type CreatedIdea struct {
	UUID       string
	Title      string
	ParentUUID *string
	Status     string
	// ReferenceErrors lists the inline references that were not added.
	ReferenceErrors []ReferenceError
}

// CreateIdea creates an open idea in a project, optionally under a parent of the same project, and
// attaches its inline references.
func (a *App) CreateIdea(ctx context.Context, r Request, in CreateIdeaInput) (CreatedIdea, error) {
	if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
		return CreatedIdea{}, err
	}
	project, err := a.Store.RequireProject(ctx, r.Who.Caller, in.ProjectUUID, store.AccessEditor)
	if err != nil {
		return CreatedIdea{}, err
	}
	if in.ParentUUID != nil {
		parent, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, *in.ParentUUID, store.AccessViewer)
		if err != nil {
			return CreatedIdea{}, err
		}
		if parent.ProjectUUID != in.ProjectUUID {
			return CreatedIdea{}, store.NotFound("Idea")
		}
	}
	res, err := a.Flows.CreateIdea(ctx, r.Flow(), workflows.CreateIdeaInput{Actor: r.Who.Actor(), UUID: r.NewID("idea"),
		ProjectUUID: in.ProjectUUID, ProjectName: project.Name, Title: in.Title, Content: in.Content,
		ParentUUID: in.ParentUUID, IsContainer: in.IsContainer})
	if err != nil {
		return CreatedIdea{}, err
	}
	target := store.Target{Type: "idea", UUID: res.UUID, ProjectUUID: in.ProjectUUID}
	refErrs, err := a.AddInlineReferences(ctx, r, target, in.References, nil)
	if err != nil {
		return CreatedIdea{}, err
	}
	return CreatedIdea{UUID: res.UUID, Title: strings.TrimSpace(in.Title), ParentUUID: in.ParentUUID, Status: res.Status,
		ReferenceErrors: refErrs}, nil
}

// ideaUpdate gates an idea (editor on its project, docs/rules.md §6.3) and sends one update to
// its workflow.
func ideaUpdate[In any](ctx context.Context, a *App, r Request, ideaUUID string, cmd workflows.Command[In, workflows.IdeaResult],
	in In) (workflows.IdeaResult, error) {
	if _, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessEditor); err != nil {
		return workflows.IdeaResult{}, err
	}
	return workflows.Send(ctx, a.Flows, cmd, ideaUUID, r.Flow(), r.Who.Caller.AgentUUID, in)
}

// ideaCommand sends one actor-only update and reads the idea back.
func (a *App) ideaCommand(ctx context.Context, r Request, ideaUUID string,
	cmd workflows.Command[workflows.IdeaCommand, workflows.IdeaResult]) (*store.IdeaDetail, error) {
	if _, err := ideaUpdate(ctx, a, r, ideaUUID, cmd, workflows.IdeaCommand{Actor: r.Who.Actor()}); err != nil {
		return nil, err
	}
	return a.GetIdea(ctx, r, ideaUUID)
}

// ClaimIdea claims an open idea for the caller; it moves to elaborating.
func (a *App) ClaimIdea(ctx context.Context, r Request, ideaUUID string) (*store.IdeaDetail, error) {
	return a.ideaCommand(ctx, r, ideaUUID, workflows.ClaimIdea)
}

// ReleaseIdea gives up an idea the caller holds.
func (a *App) ReleaseIdea(ctx context.Context, r Request, ideaUUID string) (*store.IdeaDetail, error) {
	return a.ideaCommand(ctx, r, ideaUUID, workflows.ReleaseIdea)
}

// DeleteIdea deletes an idea and its elaboration; its children become top-level.
func (a *App) DeleteIdea(ctx context.Context, r Request, ideaUUID string) error {
	_, err := ideaUpdate(ctx, a, r, ideaUUID, workflows.DeleteIdea, workflows.IdeaCommand{Actor: r.Who.Actor()})
	return err
}
