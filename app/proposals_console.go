package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Proposal review for a person (issue 22; docs/rules.md §2.3, §4.5, §5.4): the queue of
// proposals waiting for review across the projects the caller can see, and one proposal with
// what a reviewer needs to decide. The decisions themselves are ApproveProposal, RejectProposal
// and CloseProposal, as for the tools.

// ReviewItem is a pending proposal in the review queue.
type ReviewItem struct {
	Proposal    store.Proposal
	ProjectName string
	Creator     *store.ActorRef
	// Ideas are the titles of its input ideas in its own project (the caller sees that project);
	// OtherInputs counts the inputs not named (documents, ideas of other projects).
	Ideas       []string
	OtherInputs int
	// Errors and Warnings count the issues docs/rules.md §5.4 finds on the drafts as they are now.
	Errors, Warnings int
}

// ProposalsToReview is a page of the pending proposals (docs/rules.md §2.3) of every project the
// caller can see, newest first, and how many there are. size is at most 100.
func (a *App) ProposalsToReview(ctx context.Context, r Request, size, offset int) ([]ReviewItem, int, error) {
	size, offset = min(max(size, 1), 100), max(offset, 0)
	rows, names, total, err := a.Store.PendingProposals(ctx, r.Who.Caller, size, offset)
	if err != nil {
		return nil, 0, err
	}
	var ideaIDs []string
	namer := a.Store.NewNamer()
	for _, p := range rows {
		if p.InputType == "idea" {
			ideaIDs = append(ideaIDs, p.InputUUIDs...)
		}
		namer.Prefetch(ctx, store.ActorRef{Type: p.CreatedByType, UUID: p.CreatedByUUID})
	}
	facts, err := a.Store.LoadIdeaFacts(ctx, r.Who.Caller.CompanyUUID, ideaIDs)
	if err != nil {
		return nil, 0, err
	}
	byID := map[string]store.IdeaFacts{}
	for _, f := range facts {
		byID[f.UUID] = f
	}
	out := make([]ReviewItem, len(rows))
	for i, p := range rows {
		it := ReviewItem{Proposal: p, ProjectName: names[p.ProjectUUID], Creator: namer.Ref(ctx, p.CreatedByType, &p.CreatedByUUID)}
		var mine []store.IdeaFacts
		for _, u := range p.InputUUIDs {
			f, ok := byID[u]
			if p.InputType == "idea" && ok {
				mine = append(mine, f)
			}
			if ok && f.Found && f.ProjectUUID == p.ProjectUUID {
				it.Ideas = append(it.Ideas, f.Title)
			} else {
				it.OtherInputs++
			}
		}
		for _, is := range workflows.ValidateProposal(p, mine).Issues {
			switch is.Level {
			case "error":
				it.Errors++
			case "warning":
				it.Warnings++
			}
		}
		out[i] = it
	}
	return out, total, nil
}

// ReviewInput is one input of a proposal: an idea or a document, with its title when the caller
// can see it (Title "" otherwise).
type ReviewInput struct {
	Type, UUID, Title string
}

// ProposalReview is a proposal as a reviewer sees it.
type ProposalReview struct {
	ProposalRecord
	Creator, Reviewer *store.ActorRef
	Inputs            []ReviewInput
	// CanAct: the caller is an editor of the project, so approve, reject and close are theirs to
	// try (the use cases still decide). A viewer reads only.
	CanAct bool
	// Validation is chorus_pm_validate_proposal's answer (docs/rules.md §5.4), nil when the caller
	// may not validate (a viewer); ValidationRefusal is its refusal, if any (a hidden input).
	Validation        *workflows.Validation
	ValidationRefusal string
	// Tasks (the first 50 of TaskTotal) and Documents are what approval made of the drafts.
	Tasks     []store.Task
	TaskTotal int
	Documents []store.Document
}

// ReviewProposal reads a proposal the caller can see with its inputs, creator and reviewer, its
// validation issues and, once approved, its tasks and documents. A hidden or unknown proposal is
// "Proposal not found" (docs/rules.md §6.3).
func (a *App) ReviewProposal(ctx context.Context, r Request, proposalUUID string) (ProposalReview, error) {
	p, pv, err := a.Store.ProposalAccess(ctx, r.Who.Caller, proposalUUID, store.AccessViewer)
	if err != nil {
		return ProposalReview{}, err
	}
	out := ProposalReview{ProposalRecord: ProposalRecord{Proposal: p, ProjectName: pv.Name}, CanAct: pv.Level() >= store.AccessEditor}
	namer := a.Store.NewNamer()
	out.Creator = namer.Ref(ctx, p.CreatedByType, &p.CreatedByUUID)
	if p.ReviewedByUUID != nil {
		if out.Reviewer = namer.Ref(ctx, "user", p.ReviewedByUUID); out.Reviewer.Name == "Unknown" {
			out.Reviewer = namer.Ref(ctx, "agent", p.ReviewedByUUID)
		}
	}
	for _, u := range p.InputUUIDs {
		in := ReviewInput{Type: p.InputType, UUID: u}
		if p.InputType == "document" {
			if d, _, err := a.Store.DocumentAccess(ctx, r.Who.Caller, u, store.AccessViewer); err == nil {
				in.Title = d.Title
			}
		} else if idea, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, u, store.AccessViewer); err == nil {
			in.Title = idea.Title
		}
		out.Inputs = append(out.Inputs, in)
	}
	if out.CanAct {
		v, err := a.ValidateProposal(ctx, r, proposalUUID)
		switch verdict := Classify(err); {
		case err == nil:
			out.Validation = &v
		case verdict.Outcome == vocab.OutcomeRefused:
			out.ValidationRefusal = verdict.Msg
		default:
			return ProposalReview{}, err
		}
	}
	if p.Status == vocab.ProposalApproved {
		f := store.TaskFilter{ProposalUUIDs: []string{p.UUID}}
		if out.Tasks, out.TaskTotal, err = a.Store.ListTasks(ctx, p.ProjectUUID, f, 50, 0); err != nil {
			return ProposalReview{}, err
		}
		if out.Documents, err = a.Store.ProposalDocuments(ctx, p.UUID); err != nil {
			return ProposalReview{}, err
		}
	}
	return out, nil
}
