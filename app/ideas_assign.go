package app

import (
	"context"
	"errors"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// AssignIdeaInput gives an idea to an agent or a user.
type AssignIdeaInput struct {
	IdeaUUID string
	// AssigneeType is "agent" or "user".
	AssigneeType string
	AssigneeUUID string
}

// AssignIdea gives an idea to an agent (with idea:write) or a user of the caller's company who
// can edit its project (docs/rules.md §4.4); an open idea moves to elaborating and the assignee
// is notified. It reads the idea back.
func (a *App) AssignIdea(ctx context.Context, r Request, in AssignIdeaInput) (*store.IdeaDetail, error) {
	idea, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, in.IdeaUUID, store.AccessEditor)
	if err != nil {
		return nil, err
	}
	cmd := workflows.AssignIdeaInput{Actor: r.Who.Actor(), TargetType: in.AssigneeType, TargetUUID: in.AssigneeUUID}
	if in.AssigneeType == "agent" {
		agent, err := a.AssignableAgent(ctx, r, in.AssigneeUUID, perm.IdeaWrite, idea.ProjectUUID, "idea")
		if err != nil {
			return nil, err
		}
		cmd.TargetName = agent.Name
	} else {
		u, err := a.Store.UserRef(ctx, r.Who.Caller.CompanyUUID, in.AssigneeUUID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, Refuse(vocab.RefusedNotFound, "Target User not found")
		} else if err != nil {
			return nil, err // an outage is not "not found"
		}
		if _, err := a.Store.RequireProject(ctx, store.Caller{CompanyUUID: u.CompanyUUID, OwnerUUID: u.UUID},
			idea.ProjectUUID, store.AccessEditor); err != nil {
			return nil, Refuse(vocab.RefusedPrecondition, "User %q cannot work in this idea's project (they need editor "+
				"access there); add them to the project or pick someone else", u.DisplayName())
		}
		cmd.TargetName = u.DisplayName()
	}
	if _, err := workflows.Send(ctx, a.Flows, workflows.AssignIdea, in.IdeaUUID, r.Flow(), r.Who.Caller.AgentUUID, cmd); err != nil {
		return nil, err
	}
	return a.GetIdea(ctx, r, in.IdeaUUID)
}
