package workflows

import "github.com/chorus-dev/chorus/vocab"

// The statuses, their transition tables and the criterion statuses live in package vocab
// (docs/rules.md §2.1, §2.3, §2.4). The names below are the transitional names, kept so that
// code written against workflows still builds while issue 21's branches merge; new code names
// vocab directly. They are removed once the merges are done.

// ErrInvalidTransition is vocab.ErrInvalidTransition (transitional name).
var ErrInvalidTransition = vocab.ErrInvalidTransition

// Transitional type names.
type (
	TransitionError = vocab.TransitionError
	IdeaStatus      = vocab.IdeaStatus
	ProposalStatus  = vocab.ProposalStatus
	TaskStatus      = vocab.TaskStatus
	CriterionStatus = vocab.CriterionStatus
)

// Transitional idea names.
const (
	IdeaOpen             = vocab.IdeaOpen
	IdeaElaborating      = vocab.IdeaElaborating
	IdeaElaborated       = vocab.IdeaElaborated
	IdeaClaim            = vocab.IdeaClaim
	IdeaRelease          = vocab.IdeaRelease
	IdeaStartElaboration = vocab.IdeaStartElaboration
	IdeaSkipElaboration  = vocab.IdeaSkipElaboration
	IdeaValidate         = vocab.IdeaValidate
)

// Transitional proposal names.
const (
	ProposalDraft      = vocab.ProposalDraft
	ProposalPending    = vocab.ProposalPending
	ProposalApproved   = vocab.ProposalApproved
	ProposalClosed     = vocab.ProposalClosed
	ProposalEditDrafts = vocab.ProposalEditDrafts
	ProposalSubmit     = vocab.ProposalSubmit
	ProposalApprove    = vocab.ProposalApprove
	ProposalReject     = vocab.ProposalReject
	ProposalClose      = vocab.ProposalClose
	ProposalRevoke     = vocab.ProposalRevoke
)

// Transitional task names.
const (
	TaskOpen       = vocab.TaskOpen
	TaskAssigned   = vocab.TaskAssigned
	TaskInProgress = vocab.TaskInProgress
	TaskToVerify   = vocab.TaskToVerify
	TaskDone       = vocab.TaskDone
	TaskClosed     = vocab.TaskClosed
)

// Transitional lists.
var (
	IdeaStatuses     = vocab.IdeaStatuses
	ProposalStatuses = vocab.ProposalStatuses
	TaskStatuses     = vocab.TaskStatuses
)

// ParseIdeaStatus is vocab.ParseIdeaStatus (transitional name).
func ParseIdeaStatus(s string) (IdeaStatus, error) { return vocab.ParseIdeaStatus(s) }
