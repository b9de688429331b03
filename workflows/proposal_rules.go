// The rules of ProposalWorkflow's commands: pure checks on ProposalState, used by the update validators
// and again by the handlers; no Temporal calls.

package workflows

import (
	"github.com/chorus-dev/chorus/vocab"
	"slices"
	"strings"
)

// Draft limits (docs/write-path.md): the drafts' text is bounded by store.MaxDraftBytes.
const (
	maxTaskDrafts     = 100
	maxDocumentDrafts = 50
)

var notFoundProposal = Refuse(KindNotFound, "Proposal not found")

func (s ProposalState) exists() error {
	if !s.Created {
		return notFoundProposal
	}
	return nil
}

// ---- create ----

func (s ProposalState) checkCreate(in CreateProposalInput) error {
	if s.Created {
		return nil
	}
	return CheckTitle("", "title", &in.Title)
}

// ---- drafts ----

// inDraft refuses draft edits unless the proposal is a draft (docs/rules.md §2.3).
func (s ProposalState) inDraft(verb, kind string) error {
	if err := s.exists(); err != nil {
		return Refuse(KindNotFound, "Failed to %s %s draft: Proposal not found or not in draft status", verb, kind)
	}
	if _, err := s.status().Next(vocab.ProposalEditDrafts); err != nil {
		return Refuse(KindConflict, "Failed to %s %s draft: Proposal not found or not in draft status (it is %s; %s)",
			verb, kind, s.Status, backToDraftHint(s.status()))
	}
	return nil
}

func backToDraftHint(s vocab.ProposalStatus) string {
	switch s {
	case vocab.ProposalPending:
		return "a reviewer can reject it back to draft"
	case vocab.ProposalApproved:
		return "revoke it with chorus_pm_revoke_proposal to edit its drafts again"
	case vocab.ProposalClosed:
		return "a closed proposal cannot change; create a new proposal"
	}
	return "only draft proposals can be edited"
}

func (s ProposalState) checkDocumentDraft(verb string, existing bool, in DocumentDraftInput) error {
	if err := s.inDraft(verb, "document"); err != nil {
		return err
	}
	if existing {
		if !slices.Contains(s.Documents, in.DraftUUID) {
			return Refuse(KindNotFound, "Failed to update document draft: Document draft not found")
		}
	} else {
		if in.Type == nil || in.Title == nil || in.Content == nil {
			return Refuse(KindInvalid, "Failed to add document draft: type, title and content are required")
		}
		if len(s.Documents) >= maxDocumentDrafts {
			return Refuse(KindConflict, "Failed to add document draft: a proposal holds at most %d document drafts", maxDocumentDrafts)
		}
	}
	return CheckTitle("Failed to "+verb+" document draft", "title", in.Title)
}

func (s ProposalState) checkAddTaskDraft(in TaskDraftInput) error {
	if err := s.inDraft("add", "task"); err != nil {
		return err
	}
	title := "" // required: an absent title is a blank one
	if in.Title != nil {
		title = *in.Title
	}
	if err := CheckTitle("Failed to add task draft", "title", &title); err != nil {
		return err
	}
	if err := CheckCriteria("Failed to add task draft", in.Criteria); err != nil {
		return err
	}
	if len(s.Tasks) >= maxTaskDrafts {
		return Refuse(KindConflict, "Failed to add task draft: a proposal holds at most %d task drafts", maxTaskDrafts)
	}
	return nil
}

func (s ProposalState) checkUpdateTaskDraft(in TaskDraftInput) error {
	if err := s.inDraft("update", "task"); err != nil {
		return err
	}
	if !slices.Contains(s.Tasks, in.DraftUUID) {
		return Refuse(KindNotFound, "Failed to update task draft: Task draft not found")
	}
	if err := CheckTitle("Failed to update task draft", "title", in.Title); err != nil {
		return err
	}
	if in.SetCriteria {
		if err := CheckCriteria("Failed to update task draft", in.Criteria); err != nil {
			return err
		}
	}
	return nil
}

func (s ProposalState) checkRemove(kind string) error { return s.inDraft("remove", kind) }

// ---- submit / reject / close ----

func (s ProposalState) checkSubmit(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return Refuse(KindNotFound, "Failed to submit Proposal: Proposal not found")
	}
	if _, err := s.status().Next(vocab.ProposalSubmit); err != nil {
		return Refuse(KindConflict, "Failed to submit Proposal: Only draft proposals can be submitted for review (it is %s)", s.Status)
	}
	return nil
}

func (s ProposalState) ownOrAdmin(a Actor, verb string) error {
	if a.ProposalAdmin || a.UUID == s.CreatedBy.UUID {
		return nil
	}
	return Refuse(KindForbidden, "You can only %s your own proposals (this one was created by %s %s)", verb,
		s.CreatedBy.Type, s.CreatedBy.UUID)
}

func (s ProposalState) checkReject(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.ReviewNote == nil || strings.TrimSpace(*in.ReviewNote) == "" {
		return Refuse(KindInvalid, "Input validation error: reviewNote is required to reject a proposal")
	}
	if err := s.ownOrAdmin(in.Actor, "reject"); err != nil {
		return err
	}
	if _, err := s.status().Next(vocab.ProposalReject); err != nil {
		return Refuse(KindConflict, "Can only reject pending Proposals, current status: %s", s.Status)
	}
	return nil
}

func (s ProposalState) checkClose(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.ReviewNote == nil || strings.TrimSpace(*in.ReviewNote) == "" {
		return Refuse(KindInvalid, "Input validation error: reviewNote is required to close a proposal")
	}
	if _, err := s.status().Next(vocab.ProposalClose); err != nil {
		return Refuse(KindConflict, "Can only close pending Proposals, current status: %s", s.Status)
	}
	return nil
}

// ---- approve ----

func (s ProposalState) checkApprove(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if _, err := s.status().Next(vocab.ProposalApprove); err != nil {
		hint := ""
		if s.status() == vocab.ProposalApproved {
			hint = " (it was already approved)"
		} else if s.status() == vocab.ProposalDraft {
			hint = " (its author must submit it first)"
		}
		return Refuse(KindConflict, "Can only approve pending Proposals, current status: %s%s", s.Status, hint)
	}
	return nil
}

// ---- revoke ----

func (s ProposalState) checkRevoke(in ProposalCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if err := s.ownOrAdmin(in.Actor, "revoke"); err != nil {
		return err
	}
	if _, err := s.status().Next(vocab.ProposalRevoke); err != nil {
		return Refuse(KindConflict, "Can only revoke approved Proposals, current status: %s", s.Status)
	}
	return nil
}
