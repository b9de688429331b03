package workflows

import (
	"context"

	"github.com/chorus-dev/chorus/vocab"
	"go.temporal.io/sdk/client"
)

// CreateIdea starts the idea's workflow and creates the idea (update-with-start).
func (c *Client) CreateIdea(ctx context.Context, call Call, in CreateIdeaInput) (IdeaResult, error) {
	var out IdeaResult
	start := client.StartWorkflowOptions{
		StaticSummary:         "Idea: " + in.Title,
		TypedSearchAttributes: initialAttributes(vocab.EntityIdea, in.ProjectUUID, in.Title, string(vocab.IdeaOpen), in.Actor.UUID, c.SealText),
		Memo:                  entityMemo(in.Title, in.ProjectName),
	}
	err := c.updateWithStart(ctx, vocab.EntityIdea, in.UUID, IdeaWorkflowName, IdeaRun{}, start,
		UpdateCreateIdea, call, updateID(in.Actor.UUID, UpdateCreateIdea, call), in, &out)
	return out, err
}
