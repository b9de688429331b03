package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Proposal use cases (docs/rules.md §4.5, §4.6, §2.3, §5.4). Reads come from the store; every
// change is an update on the proposal's workflow.

// ProposalRecord is a proposal as read back, with its project's name.
type ProposalRecord struct {
	Proposal    *store.Proposal
	ProjectName string
}

// ListProposals is a page of a project's proposals, newest first, and how many there are. A
// legacy status word (rejected, revised) is accepted and matches nothing (docs/rules.md §8.10).
func (a *App) ListProposals(ctx context.Context, r Request, projectUUID, status string, size, offset int) ([]store.Proposal, int, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	if status == "rejected" || status == "revised" {
		status = "legacy"
	}
	return a.Store.ListProposals(ctx, projectUUID, status, size, offset)
}

// GetProposal reads a proposal the caller can see.
func (a *App) GetProposal(ctx context.Context, r Request, proposalUUID string) (ProposalRecord, error) {
	p, pv, err := a.Store.ProposalAccess(ctx, r.Who.Caller, proposalUUID, store.AccessViewer)
	if err != nil {
		return ProposalRecord{}, err
	}
	return ProposalRecord{Proposal: p, ProjectName: pv.Name}, nil
}

// proposalAccess gates a proposal for a use case that changes it (editor).
func (a *App) proposalAccess(ctx context.Context, r Request, proposalUUID string) (*store.Proposal, error) {
	p, _, err := a.Store.ProposalAccess(ctx, r.Who.Caller, proposalUUID, store.AccessEditor)
	return p, err
}

// CreateProposalInput is a new draft proposal.
type CreateProposalInput struct {
	ProjectUUID string
	Title       string
	Description *string
	// InputType is "idea" or "document"; InputUUIDs name the inputs.
	InputType  string
	InputUUIDs []string
	// References are inline references to attach, fail-soft.
	References []ReferenceInput
}

// CreatedProposal is a proposal just created.
type CreatedProposal struct {
	UUID   string
	Title  string
	Status string
	// ReferenceErrors lists the inline references that were not added.
	ReferenceErrors []ReferenceError
	// Note names the other proposals already using an input idea (docs/rules.md §8.11), or "".
	Note string
}

// CreateProposal creates an empty draft proposal from ideas the caller holds, or from documents,
// attaches its inline references and notes the other proposals using its input ideas.
func (a *App) CreateProposal(ctx context.Context, r Request, in CreateProposalInput) (CreatedProposal, error) {
	if err := workflows.CheckTitle("", "title", &in.Title); err != nil {
		return CreatedProposal{}, err
	}
	project, err := a.Store.RequireProject(ctx, r.Who.Caller, in.ProjectUUID, store.AccessEditor)
	if err != nil {
		return CreatedProposal{}, err
	}
	if err := a.CheckProposalInputs(ctx, r, in.InputType, in.InputUUIDs); err != nil {
		return CreatedProposal{}, err
	}
	res, err := a.Flows.CreateProposal(ctx, r.Flow(), workflows.CreateProposalInput{Actor: r.Who.Actor(),
		UUID: r.NewID("proposal"), ProjectUUID: in.ProjectUUID, ProjectName: project.Name, Title: in.Title,
		Description: in.Description, InputType: in.InputType, InputUUIDs: in.InputUUIDs})
	if err != nil {
		return CreatedProposal{}, err
	}
	out := CreatedProposal{UUID: res.UUID, Title: strings.TrimSpace(in.Title), Status: res.Status}
	target := store.Target{Type: "proposal", UUID: res.UUID, ProjectUUID: in.ProjectUUID}
	if out.ReferenceErrors, err = a.AddInlineReferences(ctx, r, target, in.References, nil); err != nil {
		return CreatedProposal{}, err
	}
	if in.InputType == "idea" && len(in.InputUUIDs) > 0 {
		titles, err := a.Store.ProposalsUsingIdeas(ctx, r.Who.Caller, in.InputUUIDs, res.UUID)
		if err != nil {
			return CreatedProposal{}, err
		}
		if len(titles) > 0 {
			quoted := make([]string, len(titles))
			for i, t := range titles {
				quoted[i] = fmt.Sprintf("%q", t)
			}
			out.Note = "Idea is also referenced by existing Proposal(s): " + strings.Join(quoted, ", ")
		}
	}
	return out, nil
}

// CheckProposalInputs gates a proposal's inputs (docs/rules.md §2.3): each resolves to an idea or
// document the caller can see; idea inputs must be claimed by the caller and not be themes.
func (a *App) CheckProposalInputs(ctx context.Context, r Request, inputType string, uuids []string) error {
	who := r.Who.Caller
	for i, u := range uuids {
		if slices.Contains(uuids[:i], u) {
			return Refuse(vocab.RefusedInvalid, "Input validation error: inputUuids lists %s twice", u)
		}
		if inputType == "document" {
			if _, _, err := a.Store.DocumentAccess(ctx, who, u, store.AccessViewer); err != nil {
				return err
			}
			continue
		}
		idea, _, err := a.Store.IdeaAccess(ctx, who, u, store.AccessViewer)
		if err != nil {
			return err
		}
		holder := ""
		if idea.AssigneeUUID != nil {
			holder = *idea.AssigneeUUID
		}
		if idea.AssigneeType == nil || *idea.AssigneeType != "agent" || holder != who.AgentUUID {
			return Refuse(vocab.RefusedPrecondition, "Can only create Proposals based on Ideas you have claimed (idea %q is not "+
				"held by you; claim it with chorus_claim_idea)", idea.Title)
		}
		if idea.IsContainer {
			return Refuse(vocab.RefusedPrecondition, "Cannot create a proposal from a theme (container) idea; derive a child "+
				"idea and propose on it (idea %q)", idea.Title)
		}
	}
	return nil
}

// ValidateProposal gates a proposal and its inputs and runs docs/rules.md §5.4 on its current
// drafts, changing nothing.
func (a *App) ValidateProposal(ctx context.Context, r Request, proposalUUID string) (workflows.Validation, error) {
	p, err := a.proposalAccess(ctx, r, proposalUUID)
	if err != nil {
		return workflows.Validation{}, err
	}
	var facts []store.IdeaFacts
	for _, u := range p.InputUUIDs { // docs/rules.md §5.4: a missing or hidden input fails at the gate
		if p.InputType == "document" {
			if _, _, err := a.Store.DocumentAccess(ctx, r.Who.Caller, u, store.AccessViewer); err != nil {
				return workflows.Validation{}, err
			}
		} else if _, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, u, store.AccessViewer); err != nil {
			return workflows.Validation{}, err
		}
	}
	if p.InputType == "idea" {
		if facts, err = a.Store.LoadIdeaFacts(ctx, p.CompanyUUID, p.InputUUIDs); err != nil {
			return workflows.Validation{}, err
		}
	}
	return workflows.ValidateProposal(*p, facts), nil
}

// ProposalStatus is a proposal's uuid and status after a command.
type ProposalStatus struct {
	UUID   string
	Status string
}

// SubmitProposal submits a draft proposal for review; the workflow refuses it, listing every
// issue, when validation finds an error.
func (a *App) SubmitProposal(ctx context.Context, r Request, proposalUUID string) (ProposalStatus, error) {
	if _, err := a.ValidateProposal(ctx, r, proposalUUID); err != nil {
		return ProposalStatus{}, err
	}
	act := r.Who.Actor()
	res, err := workflows.Send(ctx, a.Flows, workflows.SubmitProposal, proposalUUID, r.Flow(), act.UUID,
		workflows.ProposalCommand{Actor: act})
	if err != nil {
		return ProposalStatus{}, err
	}
	return ProposalStatus{UUID: res.UUID, Status: res.Status}, nil
}
