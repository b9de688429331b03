package vocab

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// This file is the pure state machines of docs/rules.md §2.1, §2.3 and §2.4: statuses as small
// types and a table of which command may start from which status. Tested on its own with an
// exhaustive status x command matrix.

// ErrInvalidTransition is wrapped by every refusal of a command in the current status.
var ErrInvalidTransition = errors.New("invalid transition")

// TransitionError says which command was refused in which status.
type TransitionError struct {
	Entity  Entity
	Command string
	From    string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s: cannot %s from status %s", e.Entity, e.Command, e.From)
}

func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// IdeaStatus is an idea's stored status (docs/rules.md §1.6).
type IdeaStatus string

// Idea statuses.
const (
	IdeaOpen        IdeaStatus = "open"
	IdeaElaborating IdeaStatus = "elaborating"
	IdeaElaborated  IdeaStatus = "elaborated"
)

// IdeaStatuses lists every idea status.
var IdeaStatuses = []IdeaStatus{IdeaOpen, IdeaElaborating, IdeaElaborated}

// ParseIdeaStatus reads a stored status, normalising the legacy values of docs/rules.md §1.6.
func ParseIdeaStatus(s string) (IdeaStatus, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "open":
		return IdeaOpen, nil
	case "elaborating", "assigned", "in_progress":
		return IdeaElaborating, nil
	case "elaborated", "proposal_created", "completed", "closed", "pending_review":
		return IdeaElaborated, nil
	}
	return "", fmt.Errorf("unknown idea status %q", s)
}

func (s IdeaStatus) String() string { return string(s) }

// Idea commands that depend on the status (docs/rules.md §2.1, §2.2).
const (
	IdeaClaim            = "claim"
	IdeaRelease          = "release"
	IdeaStartElaboration = "start_elaboration"
	IdeaSkipElaboration  = "skip_elaboration"
	IdeaValidate         = "validate_elaboration"
)

// ideaTable maps each command to the statuses it may start from and the status it leads to
// ("" = unchanged).
var ideaTable = map[string]struct {
	from []IdeaStatus
	to   IdeaStatus
}{
	IdeaClaim:            {from: []IdeaStatus{IdeaOpen}, to: IdeaElaborating},
	IdeaRelease:          {from: []IdeaStatus{IdeaOpen, IdeaElaborating}, to: IdeaOpen},
	IdeaStartElaboration: {from: []IdeaStatus{IdeaElaborating, IdeaElaborated}},
	IdeaSkipElaboration:  {from: []IdeaStatus{IdeaElaborating}, to: IdeaElaborated},
	IdeaValidate:         {from: IdeaStatuses, to: IdeaElaborated},
}

// Next returns the status an idea command leads to from s, or a *TransitionError.
func (s IdeaStatus) Next(command string) (IdeaStatus, error) {
	t, ok := ideaTable[command]
	if !ok {
		return "", fmt.Errorf("unknown idea command %q", command)
	}
	if !slices.Contains(t.from, s) {
		return "", &TransitionError{Entity: EntityIdea, Command: command, From: string(s)}
	}
	if t.to == "" {
		return s, nil
	}
	return t.to, nil
}

// ProposalStatus is a proposal's status (docs/rules.md §2.3).
type ProposalStatus string

// Proposal statuses.
const (
	ProposalDraft    ProposalStatus = "draft"
	ProposalPending  ProposalStatus = "pending"
	ProposalApproved ProposalStatus = "approved"
	ProposalClosed   ProposalStatus = "closed"
)

// ProposalStatuses lists every proposal status.
var ProposalStatuses = []ProposalStatus{ProposalDraft, ProposalPending, ProposalApproved, ProposalClosed}

func (s ProposalStatus) String() string { return string(s) }

// Proposal commands (docs/rules.md §2.3).
const (
	ProposalEditDrafts = "edit_drafts"
	ProposalSubmit     = "submit"
	ProposalApprove    = "approve"
	ProposalReject     = "reject"
	ProposalClose      = "close"
	ProposalRevoke     = "revoke"
)

var proposalTable = map[string]struct {
	from ProposalStatus
	to   ProposalStatus
}{
	ProposalEditDrafts: {from: ProposalDraft, to: ProposalDraft},
	ProposalSubmit:     {from: ProposalDraft, to: ProposalPending},
	ProposalApprove:    {from: ProposalPending, to: ProposalApproved},
	ProposalReject:     {from: ProposalPending, to: ProposalDraft},
	ProposalClose:      {from: ProposalPending, to: ProposalClosed},
	ProposalRevoke:     {from: ProposalApproved, to: ProposalDraft},
}

// Next returns the status a proposal command leads to from s, or a *TransitionError.
func (s ProposalStatus) Next(command string) (ProposalStatus, error) {
	t, ok := proposalTable[command]
	if !ok {
		return "", fmt.Errorf("unknown proposal command %q", command)
	}
	if t.from != s {
		return "", &TransitionError{Entity: EntityProposal, Command: command, From: string(s)}
	}
	return t.to, nil
}

// TaskStatus is a task's status (docs/rules.md §2.4).
type TaskStatus string

// Task statuses.
const (
	TaskOpen       TaskStatus = "open"
	TaskAssigned   TaskStatus = "assigned"
	TaskInProgress TaskStatus = "in_progress"
	TaskToVerify   TaskStatus = "to_verify"
	TaskDone       TaskStatus = "done"
	TaskClosed     TaskStatus = "closed"
)

// TaskStatuses lists every task status.
var TaskStatuses = []TaskStatus{TaskOpen, TaskAssigned, TaskInProgress, TaskToVerify, TaskDone, TaskClosed}

func (s TaskStatus) String() string { return string(s) }

// taskMoves is the legal transition table of docs/rules.md §2.4, used by chorus_update_task's and
// chorus_report_work's status argument.
var taskMoves = map[TaskStatus][]TaskStatus{
	TaskOpen:       {TaskAssigned, TaskClosed},
	TaskAssigned:   {TaskOpen, TaskInProgress, TaskClosed},
	TaskInProgress: {TaskToVerify, TaskClosed},
	TaskToVerify:   {TaskDone, TaskInProgress, TaskClosed},
	TaskDone:       {TaskClosed},
	TaskClosed:     nil,
}

// CanMove reports whether the table of docs/rules.md §2.4 allows from -> to.
func (s TaskStatus) CanMove(to TaskStatus) bool { return slices.Contains(taskMoves[s], to) }

// Moves lists the statuses s may move to.
func (s TaskStatus) Moves() []TaskStatus { return slices.Clone(taskMoves[s]) }

// ResolvedTaskStatuses are the statuses of a task that no longer blocks the tasks depending on
// it (docs/rules.md §5.3: done and closed; to_verify still blocks). It is the one statement of
// "resolved": TaskStatus.Resolved and the store's SQL (store's resolvedSQL) are derived from it.
var ResolvedTaskStatuses = []TaskStatus{TaskDone, TaskClosed}

// Resolved reports whether a dependency on a task in status s no longer blocks (docs/rules.md §5.3).
func (s TaskStatus) Resolved() bool { return slices.Contains(ResolvedTaskStatuses, s) }

// CriterionStatus is an acceptance criterion's mark, both the developer's self-check
// (dev_status) and the admin's verification (status) (docs/rules.md §1.11).
type CriterionStatus string

// Criterion statuses.
const (
	CriterionPending CriterionStatus = "pending"
	CriterionPassed  CriterionStatus = "passed"
	CriterionFailed  CriterionStatus = "failed"
)

// CriterionStatuses lists every criterion status.
var CriterionStatuses = []CriterionStatus{CriterionPending, CriterionPassed, CriterionFailed}

func (s CriterionStatus) String() string { return string(s) }

// ElaborationStatus is an idea's elaboration status (docs/rules.md §1.6, §2.2): null, then
// pending_answers, validating, resolved.
type ElaborationStatus string

// Elaboration statuses.
const (
	ElaborationPendingAnswers ElaborationStatus = "pending_answers"
	ElaborationValidating     ElaborationStatus = "validating"
	ElaborationResolved       ElaborationStatus = "resolved"
)

// RoundStatus is an elaboration round's status (docs/rules.md §1.7): pending_answers, then answered.
type RoundStatus string

// Round statuses.
const (
	RoundPendingAnswers RoundStatus = "pending_answers"
	RoundAnswered       RoundStatus = "answered"
)

// DerivedStatus is an idea's derived status (docs/rules.md §5.1): computed from the database
// at read time, never stored.
type DerivedStatus string

// Derived idea statuses.
const (
	DerivedTodo                 DerivedStatus = "todo"
	DerivedInProgress           DerivedStatus = "in_progress"
	DerivedHumanConductRequired DerivedStatus = "human_conduct_required"
	DerivedDone                 DerivedStatus = "done"
)
