// The gateable commands of each entity (docs/rules.md §6.7): chorus_admin_approve_proposal,
// chorus_admin_verify_task and chorus_pm_validate_elaboration, as the gate keeper checks and
// applies them.

package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/vocab"
)

// decodeGated decodes a gated command's input.
func decodeGated[In any](input json.RawMessage) (In, error) {
	var in In
	//workflowcheck:ignore (decoding recorded JSON into a struct is deterministic)
	if err := json.Unmarshal(input, &in); err != nil {
		return in, Refuse(KindInvalid, "Input validation error: the gated command's input does not decode: %v", err)
	}
	return in, nil
}

func (w *proposalWorkflow) gateKeeper() *gateKeeper {
	return &gateKeeper{mu: w.mu, commands: []string{vocab.GateApproveProposal},
		gates: func() *[]GateState { return &w.state.Gates },
		subject: func() gateSubject {
			return gateSubject{CompanyUUID: w.state.CompanyUUID, ProjectUUID: w.state.ProjectUUID, UUID: w.state.UUID,
				Title: w.state.Title, Entity: vocab.EntityProposal}
		},
		check: func(_ string, input json.RawMessage) error {
			in, err := decodeGated[ProposalCommand](input)
			if err != nil {
				return err
			}
			return w.state.checkApprove(in)
		},
		apply: func(ctx workflow.Context, _ string, input json.RawMessage, decider Actor) error {
			in, err := decodeGated[ProposalCommand](input)
			if err != nil {
				return err
			}
			in.Actor = decider
			_, err = w.approve(ctx, in)
			return err
		},
	}
}

func (w *taskWorkflow) gateKeeper() *gateKeeper {
	return &gateKeeper{mu: w.mu, commands: []string{vocab.GateVerifyTask},
		gates: func() *[]GateState { return &w.state.Gates },
		subject: func() gateSubject {
			return gateSubject{CompanyUUID: w.state.CompanyUUID, ProjectUUID: w.state.ProjectUUID, UUID: w.state.UUID,
				Title: w.state.Title, Entity: vocab.EntityTask}
		},
		check: func(_ string, input json.RawMessage) error {
			in, err := decodeGated[TaskCommand](input)
			if err != nil {
				return err
			}
			return w.state.checkVerify(in)
		},
		apply: func(ctx workflow.Context, _ string, input json.RawMessage, decider Actor) error {
			in, err := decodeGated[TaskCommand](input)
			if err != nil {
				return err
			}
			in.Actor = decider
			_, err = w.verify(ctx, in)
			return err
		},
	}
}

// The idea's gate checks resolve_elaboration's rules for the requester (who must hold the idea)
// and resolves it in the person's name.
func (w *ideaWorkflow) gateKeeper() *gateKeeper {
	return &gateKeeper{mu: w.mu, commands: []string{vocab.GateResolveElaboration},
		gates: func() *[]GateState { return &w.state.Gates },
		subject: func() gateSubject {
			return gateSubject{CompanyUUID: w.state.CompanyUUID, ProjectUUID: w.state.ProjectUUID, UUID: w.state.UUID,
				Title: w.state.Title, Entity: vocab.EntityIdea}
		},
		check: func(_ string, input json.RawMessage) error {
			in, err := decodeGated[IdeaCommand](input)
			if err != nil {
				return err
			}
			return w.state.checkValidate(in)
		},
		apply: func(ctx workflow.Context, _ string, input json.RawMessage, decider Actor) error {
			in, err := decodeGated[IdeaCommand](input)
			if err != nil {
				return err
			}
			in.Actor = decider
			_, err = w.validateElaboration(ctx, in)
			return err
		},
	}
}
