package app

import (
	"context"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Drafts and review of a proposal (docs/rules.md §4.5, §4.6): each is one update on the
// proposal's workflow after the editor gate.

// DraftResult is a proposal's draft after a draft command.
type DraftResult struct {
	ProposalUUID string
	DraftUUID    string
	DraftTitle   string
}

// DocumentDraftInput adds (DraftUUID "") or changes a document draft; nil fields keep their value.
type DocumentDraftInput struct {
	ProposalUUID string
	DraftUUID    string
	Type         *string
	Title        *string
	Content      *string
}

// TaskDraftInput adds (DraftUUID "") or changes a task draft; nil fields keep their value, and the
// lists replace the old ones only when their Set flag is true.
type TaskDraftInput struct {
	ProposalUUID string
	DraftUUID    string
	Title        *string
	Description  *string
	StoryPoints  *float64
	Priority     *string
	Kind         *string
	SetCriteria  bool
	Criteria     []store.CriterionDraft
	SetDependsOn bool
	DependsOn    []string
}

// draftCommand gates the proposal and sends one draft update.
func draftCommand[In any](ctx context.Context, a *App, r Request, proposalUUID string,
	cmd workflows.Command[In, workflows.ProposalResult], in In) (DraftResult, error) {
	if _, err := a.proposalAccess(ctx, r, proposalUUID); err != nil {
		return DraftResult{}, err
	}
	res, err := workflows.Send(ctx, a.Flows, cmd, proposalUUID, r.Flow(), r.Who.Caller.AgentUUID, in)
	if err != nil {
		return DraftResult{}, err
	}
	return DraftResult{ProposalUUID: res.UUID, DraftUUID: res.DraftUUID, DraftTitle: res.DraftTitle}, nil
}

func (in DocumentDraftInput) command(r Request) workflows.DocumentDraftInput {
	return workflows.DocumentDraftInput{Actor: r.Who.Actor(), DraftUUID: in.DraftUUID, Type: in.Type, Title: in.Title, Content: in.Content}
}

func (in TaskDraftInput) command(r Request) workflows.TaskDraftInput {
	return workflows.TaskDraftInput{Actor: r.Who.Actor(), DraftUUID: in.DraftUUID, Title: in.Title, Description: in.Description,
		StoryPoints: in.StoryPoints, Priority: in.Priority, Kind: in.Kind, SetCriteria: in.SetCriteria, Criteria: in.Criteria,
		SetDependsOn: in.SetDependsOn, DependsOn: in.DependsOn}
}

// AddDocumentDraft adds a document draft to a draft proposal.
func (a *App) AddDocumentDraft(ctx context.Context, r Request, in DocumentDraftInput) (DraftResult, error) {
	return draftCommand(ctx, a, r, in.ProposalUUID, workflows.AddDocumentDraft, in.command(r))
}

// UpdateDocumentDraft changes a document draft of a draft proposal.
func (a *App) UpdateDocumentDraft(ctx context.Context, r Request, in DocumentDraftInput) (DraftResult, error) {
	return draftCommand(ctx, a, r, in.ProposalUUID, workflows.UpdateDocumentDraft, in.command(r))
}

// AddTaskDraft adds a task draft to a draft proposal.
func (a *App) AddTaskDraft(ctx context.Context, r Request, in TaskDraftInput) (DraftResult, error) {
	return draftCommand(ctx, a, r, in.ProposalUUID, workflows.AddTaskDraft, in.command(r))
}

// UpdateTaskDraft changes a task draft of a draft proposal.
func (a *App) UpdateTaskDraft(ctx context.Context, r Request, in TaskDraftInput) (DraftResult, error) {
	return draftCommand(ctx, a, r, in.ProposalUUID, workflows.UpdateTaskDraft, in.command(r))
}

// RemoveDocumentDraft removes a document draft from a draft proposal.
func (a *App) RemoveDocumentDraft(ctx context.Context, r Request, proposalUUID, draftUUID string) (DraftResult, error) {
	return draftCommand(ctx, a, r, proposalUUID, workflows.RemoveDocumentDraft,
		workflows.RemoveDraftInput{Actor: r.Who.Actor(), DraftUUID: draftUUID})
}

// RemoveTaskDraft removes a task draft from a draft proposal and from other drafts' dependencies.
func (a *App) RemoveTaskDraft(ctx context.Context, r Request, proposalUUID, draftUUID string) (DraftResult, error) {
	return draftCommand(ctx, a, r, proposalUUID, workflows.RemoveTaskDraft,
		workflows.RemoveDraftInput{Actor: r.Who.Actor(), DraftUUID: draftUUID})
}

// reviewCommand gates the proposal and sends one review update; the actor carries whether the
// caller holds proposal:admin, which the workflow's rules ask.
func (a *App) reviewCommand(ctx context.Context, r Request, proposalUUID string,
	cmd workflows.Command[workflows.ProposalCommand, workflows.ProposalResult], note *string) (workflows.ProposalResult, error) {
	if _, err := a.proposalAccess(ctx, r, proposalUUID); err != nil {
		return workflows.ProposalResult{}, err
	}
	act := r.Who.Actor()
	act.ProposalAdmin = r.Who.Perms.Has(perm.ProposalAdmin)
	return workflows.Send(ctx, a.Flows, cmd, proposalUUID, r.Flow(), act.UUID, workflows.ProposalCommand{Actor: act, ReviewNote: note})
}

// RejectProposal sends a pending proposal back to draft with a review note.
func (a *App) RejectProposal(ctx context.Context, r Request, proposalUUID, note string) (ProposalStatus, error) {
	res, err := a.reviewCommand(ctx, r, proposalUUID, workflows.RejectProposal, &note)
	return ProposalStatus{UUID: res.UUID, Status: res.Status}, err
}

// CloseProposal closes a pending proposal for good, with a review note.
func (a *App) CloseProposal(ctx context.Context, r Request, proposalUUID, note string) (ProposalStatus, error) {
	res, err := a.reviewCommand(ctx, r, proposalUUID, workflows.CloseProposal, &note)
	return ProposalStatus{UUID: res.UUID, Status: res.Status}, err
}

// ApprovedProposal is a proposal just approved, read back, with what approval made of its drafts.
type ApprovedProposal struct {
	ProposalRecord
	// Tasks and Documents pair each draft with the entity made from it, in draft order.
	Tasks     []workflows.MaterializedItem
	Documents []workflows.MaterializedItem
	// Gate, when set, is the gate the approval waits at: the project's policy holds an agent's
	// approval for a person (docs/rules.md §6.7), and nothing changed yet.
	Gate *Gate
}

// ApproveProposal approves a pending proposal: its drafts become documents and open tasks. In a
// project whose gate policy holds approvals, an agent's approval waits for a person instead
// (the result's Gate), and separation of duties may refuse it (docs/rules.md §6.7).
func (a *App) ApproveProposal(ctx context.Context, r Request, proposalUUID string, note *string) (ApprovedProposal, error) {
	p, err := a.proposalAccess(ctx, r, proposalUUID)
	if err != nil {
		return ApprovedProposal{}, err
	}
	act := r.Who.Actor()
	act.ProposalAdmin = r.Who.Perms.Has(perm.ProposalAdmin)
	gate, err := a.holdForPerson(ctx, r, gated{Entity: vocab.EntityProposal, UUID: p.UUID, ProjectUUID: p.ProjectUUID,
		Command: vocab.GateApproveProposal, Creator: p.CreatedByUUID, Input: workflows.ProposalCommand{Actor: act, ReviewNote: note}})
	if err != nil {
		return ApprovedProposal{}, err
	}
	if gate != nil {
		rec, err := a.GetProposal(ctx, r, proposalUUID)
		return ApprovedProposal{ProposalRecord: rec, Gate: gate}, err
	}
	res, err := a.reviewCommand(ctx, r, proposalUUID, workflows.ApproveProposal, note)
	if err != nil {
		return ApprovedProposal{}, err
	}
	rec, err := a.GetProposal(ctx, r, proposalUUID)
	if err != nil {
		return ApprovedProposal{}, err
	}
	out := ApprovedProposal{ProposalRecord: rec}
	if m := res.Materialized; m != nil {
		out.Tasks, out.Documents = m.Tasks, m.Documents
	}
	return out, nil
}

// RevokedProposal is a proposal just revoked, with the tasks it closed and the documents it deleted.
type RevokedProposal struct {
	ProposalStatus
	Revoked *store.Revoked
}

// RevokeProposal takes back an approved proposal: its tasks close, its documents go, it returns
// to draft.
func (a *App) RevokeProposal(ctx context.Context, r Request, proposalUUID string, note *string) (RevokedProposal, error) {
	res, err := a.reviewCommand(ctx, r, proposalUUID, workflows.RevokeProposal, note)
	if err != nil {
		return RevokedProposal{}, err
	}
	return RevokedProposal{ProposalStatus: ProposalStatus{UUID: res.UUID, Status: res.Status}, Revoked: res.Revoked}, nil
}
