package workflows

import (
	"context"

	"github.com/chorus-dev/chorus/vocab"
	"go.temporal.io/sdk/client"
)

// CreateProposal starts the proposal's workflow and creates the proposal (update-with-start).
func (c *Client) CreateProposal(ctx context.Context, call Call, in CreateProposalInput) (ProposalResult, error) {
	var out ProposalResult
	start := client.StartWorkflowOptions{
		StaticSummary:         "Proposal: " + in.Title,
		TypedSearchAttributes: initialAttributes(vocab.EntityProposal, in.ProjectUUID, in.Title, string(vocab.ProposalDraft), in.Actor.UUID, c.SealText),
		Memo:                  entityMemo(in.Title, in.ProjectName),
	}
	err := c.updateWithStart(ctx, vocab.EntityProposal, in.UUID, ProposalWorkflowName, ProposalRun{}, start,
		UpdateCreateProposal, call, updateID(in.Actor.UUID, UpdateCreateProposal, call), in, &out)
	return out, err
}
