package workflows

import (
	"context"

	"go.temporal.io/sdk/client"
)

// CreateIdea starts the idea's workflow and creates the idea (update-with-start).
func (c *Client) CreateIdea(ctx context.Context, call Call, in CreateIdeaInput) (IdeaResult, error) {
	var out IdeaResult
	start := client.StartWorkflowOptions{
		StaticSummary:         "Idea: " + in.Title,
		TypedSearchAttributes: initialAttributes(EntityIdea, in.ProjectUUID, in.Title, string(IdeaOpen), in.Actor.UUID, c.SealText),
		Memo:                  entityMemo(in.Title, in.ProjectName),
	}
	err := c.updateWithStart(ctx, EntityIdea, in.UUID, IdeaWorkflowName, IdeaRun{}, start,
		UpdateCreateIdea, call, updateID(in.Actor.UUID, UpdateCreateIdea, call), in, &out)
	return out, err
}
