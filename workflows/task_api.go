// The API of TaskWorkflow: its names, its state, the inputs and results of its commands.

package workflows

import (
	"slices"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// TaskWorkflowName is the registered type of TaskWorkflow.
const TaskWorkflowName = "TaskWorkflow"

// Update names of TaskWorkflow, one per tool (docs/rules.md §4.9, §2.4).
const (
	UpdateClaimTask       = "chorus_claim_task"
	UpdateClaimNextTask   = "chorus_claim_next_task"
	UpdateReleaseTask     = "chorus_release_task"
	UpdateAssignTask      = "chorus_pm_assign_task"
	UpdateUpdateTask      = "chorus_update_task"
	UpdateReportWork      = "chorus_report_work"
	UpdateSelfCheck       = "chorus_report_criteria_self_check"
	UpdateSubmitForVerify = "chorus_submit_for_verify"
	UpdateMarkCriteria    = "chorus_mark_acceptance_criteria"
	UpdateVerifyTask      = "chorus_admin_verify_task"
	UpdateReopenTask      = "chorus_admin_reopen_task"
	UpdateCloseTask       = "chorus_admin_close_task"
	UpdateDeleteTask      = "chorus_admin_delete_task"
	SignalProposalRevoked = "proposal_revoked"
	SignalTaskFinished    = "task_finished"
)

// ProposalRevoked is the payload of SignalProposalRevoked: the revoke cascade has closed the
// task's row and moved it to Row, and the task's workflow adopts it.
type ProposalRevoked struct {
	ProposalUUID string    `json:"proposalUuid"`
	Row          RowMark   `json:"row"`
	At           time.Time `json:"at"`
}

// TaskFinished is the payload of SignalTaskFinished, sent to a task's proposal when the task
// reaches done or closed.
type TaskFinished struct {
	TaskUUID string `json:"taskUuid"`
	Status   string `json:"status"`
}

// TaskState is everything TaskWorkflow knows; it is what continue-as-new carries. Text lives in
// the database, but for the title (docs/write-path.md, "Bounded state and payloads").
type TaskState struct {
	Created      bool             `json:"created"`
	Deleted      bool             `json:"deleted,omitempty"`
	UUID         string           `json:"uuid"`
	CompanyUUID  string           `json:"companyUuid"`
	ProjectUUID  string           `json:"projectUuid"`
	ProjectName  string           `json:"projectName,omitempty"` // for the memo; "" in older histories
	ProposalUUID string           `json:"proposalUuid,omitempty"`
	Title        string           `json:"title"`
	Status       string           `json:"status"`
	Priority     string           `json:"priority"`
	Assignee     *Holder          `json:"assignee,omitempty"`
	CreatedBy    Party            `json:"createdBy"`
	Criteria     []CriterionState `json:"criteria,omitempty"`
	// Lease is the current claim's time to live (docs/rules.md §5.10); nil when it does not lapse.
	Lease *Lease `json:"lease,omitempty"`
	// Lapsed is the latest claim that lapsed, so its holder's later commands are told why they
	// are refused.
	Lapsed *Lapse  `json:"lapsed,omitempty"`
	Row    RowMark `json:"row"`
	Recent Recent  `json:"recent,omitempty"`
	// Gates are the task's gates awaiting a person, and the latest decided (docs/rules.md §6.7).
	Gates []GateState `json:"gates,omitempty"`
}

// Lease is a claim's time to live: it lapses at ExpiresAt unless the holder renews it.
type Lease struct {
	TTLSeconds int64     `json:"ttlSeconds"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

func (l *Lease) ttl() time.Duration { return time.Duration(l.TTLSeconds) * time.Second }

// leaseFrom is a fresh lease of ttlSeconds from at, or nil for none.
func leaseFrom(ttlSeconds int64, at time.Time) *Lease {
	if ttlSeconds <= 0 {
		return nil
	}
	return &Lease{TTLSeconds: ttlSeconds, ExpiresAt: at.Add(time.Duration(ttlSeconds) * time.Second)}
}

func sameLease(a, b *Lease) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Lapse is a claim that lapsed: whose it was, its time to live, and when it lapsed.
type Lapse struct {
	UUID       string    `json:"uuid"`
	TTLSeconds int64     `json:"ttlSeconds"`
	At         time.Time `json:"at"`
}

// CriterionState is what the workflow keeps of an acceptance criterion.
type CriterionState struct {
	UUID      string `json:"uuid"`
	Required  bool   `json:"required"`
	Status    string `json:"status"`    // admin verification: pending | passed | failed
	DevStatus string `json:"devStatus"` // developer self-check: pending | passed | failed
}

func (s TaskState) clone() TaskState {
	c := s
	if s.Assignee != nil {
		h := *s.Assignee
		c.Assignee = &h
	}
	if s.Lease != nil {
		l := *s.Lease
		c.Lease = &l
	}
	if s.Lapsed != nil {
		l := *s.Lapsed
		c.Lapsed = &l
	}
	c.Criteria = slices.Clone(s.Criteria)
	c.Recent = slices.Clone(s.Recent)
	return c
}

func (s TaskState) status() vocab.TaskStatus { return vocab.TaskStatus(s.Status) }

// Projection is the task's row as far as the workflow owns it (TaskColumns, with version and
// change_id).
func (s TaskState) Projection() store.Task {
	t := store.Task{UUID: s.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, ProposalUUID: nilIfBlank(s.ProposalUUID),
		Title: s.Title, Status: vocab.TaskStatus(s.Status), Priority: s.Priority, CreatedByType: s.CreatedBy.Type, CreatedByUUID: s.CreatedBy.UUID,
		Version: s.Row.Version, ChangeID: s.Row.ChangeID}
	if h := s.Assignee; h != nil {
		at := h.At
		t.AssigneeType, t.AssigneeUUID, t.AssignedAt, t.AssignedByUUID = &h.Type, &h.UUID, &at, h.By
	}
	if l := s.Lease; l != nil {
		ttl, until := l.TTLSeconds, l.ExpiresAt
		t.ClaimTTLSeconds, t.ClaimExpiresAt = &ttl, &until
	}
	return t
}

// TaskColumns are the columns of a task row its workflow owns, as the store names them (chorus
// ops compares and repairs them).
var TaskColumns = store.TaskWorkflowColumns

// assignmentOf is a patch of a row's assignee to h (nil: nobody).
func assignmentOf(h *Holder) *store.Nullable[store.Assignment] {
	if h != nil {
		return store.SetTo(&store.Assignment{Type: h.Type, UUID: h.UUID, At: h.At, By: h.By})
	}
	return store.SetTo[store.Assignment](nil)
}

// lease is the claim's lease as the state has it: a patch of the lease columns.
func (s TaskState) lease() *store.Nullable[store.ClaimLease] {
	if l := s.Lease; l != nil {
		return store.SetTo(&store.ClaimLease{TTLSeconds: l.TTLSeconds, ExpiresAt: l.ExpiresAt})
	}
	return store.SetTo[store.ClaimLease](nil)
}

// NewTaskState is the state a task's workflow starts from: the row as approval or
// chorus_create_tasks inserted it (or as ops repair finds it), with its criteria.
func NewTaskState(t store.Task, criteria []store.AcceptanceCriterion) TaskState {
	s := TaskState{Created: true, UUID: t.UUID, CompanyUUID: t.CompanyUUID, ProjectUUID: t.ProjectUUID,
		ProposalUUID: deref(t.ProposalUUID), Title: t.Title, Status: string(t.Status), Priority: t.Priority,
		CreatedBy: Party{Type: t.CreatedByType, UUID: t.CreatedByUUID}, Row: RowMark{Version: t.Version, ChangeID: t.ChangeID}}
	if t.AssigneeUUID != nil {
		s.Assignee = &Holder{Type: deref(t.AssigneeType), UUID: *t.AssigneeUUID, By: t.AssignedByUUID}
		if t.AssignedAt != nil {
			s.Assignee.At = *t.AssignedAt
		}
		if t.ClaimTTLSeconds != nil && t.ClaimExpiresAt != nil {
			s.Lease = &Lease{TTLSeconds: *t.ClaimTTLSeconds, ExpiresAt: *t.ClaimExpiresAt}
		}
	}
	for _, c := range criteria {
		if c.TaskUUID == t.UUID {
			s.Criteria = append(s.Criteria, CriterionState{UUID: c.UUID, Required: c.Required, Status: string(c.Status), DevStatus: string(c.DevStatus)})
		}
	}
	return s
}

// TaskRun is TaskWorkflow's input: the task's state (approval and chorus_create_tasks pass the
// new task, continue-as-new the current state).
type TaskRun struct {
	State *TaskState `json:"state"`
}

// TaskCommand is the input of commands that need only the actor. A claim carries the project's
// claim time to live (docs/rules.md §5.10).
type TaskCommand struct {
	Actor    Actor `json:"actor"`
	ClaimTTL int64 `json:"claimTtl,omitempty"`
	// Project is the project whose access the caller was checked on before sending a claim; a
	// claim finding the task in another project (moved meanwhile) is refused. Empty: not checked.
	Project string `json:"project,omitempty"`
}

// AssignTaskInput assigns a task to another agent (chorus_pm_assign_task).
type AssignTaskInput struct {
	Actor      Actor  `json:"actor"`
	TargetUUID string `json:"targetUuid"`
	TargetName string `json:"targetName"`
	ClaimTTL   int64  `json:"claimTtl,omitempty"`
}

// UpdateTaskInput is chorus_update_task: field edits by anyone, criteria replacement,
// dependency edits, and a status move by the assignee.
type UpdateTaskInput struct {
	Actor          Actor                  `json:"actor"`
	Title          *string                `json:"title"`
	Description    *string                `json:"description"`
	Priority       *string                `json:"priority"`
	StoryPoints    *float64               `json:"storyPoints"`
	SetCriteria    bool                   `json:"setCriteria"`
	Criteria       []store.CriterionDraft `json:"criteria"`
	AddDependsOn   []string               `json:"addDependsOn"`
	RemoveDepends  []string               `json:"removeDepends"`
	Status         *string                `json:"status"`
	SessionUUID    *string                `json:"sessionUuid"`
	SessionName    *string                `json:"sessionName"`
	DescriptionSet bool                   `json:"descriptionSet"`
}

// ReportWorkInput is chorus_report_work.
type ReportWorkInput struct {
	Actor       Actor   `json:"actor"`
	Report      string  `json:"report"`
	Status      *string `json:"status"`
	SessionUUID *string `json:"sessionUuid"`
	SessionName *string `json:"sessionName"`
}

// CriterionMark is one criterion's self-check or verification.
type CriterionMark struct {
	UUID     string  `json:"uuid"`
	Status   string  `json:"status"` // passed | failed
	Evidence *string `json:"evidence"`
}

// MarkCriteriaInput is a self-check (developer fields) or a verification mark (admin fields).
type MarkCriteriaInput struct {
	Actor Actor           `json:"actor"`
	Marks []CriterionMark `json:"marks"`
}

// SubmitInput is chorus_submit_for_verify.
type SubmitInput struct {
	Actor   Actor   `json:"actor"`
	Summary *string `json:"summary"`
}

// ReopenInput is chorus_admin_reopen_task.
type ReopenInput struct {
	Actor    Actor `json:"actor"`
	Force    bool  `json:"force"`
	ClaimTTL int64 `json:"claimTtl,omitempty"`
}

// TaskResult is what task updates return; callers read the full view from the database.
type TaskResult struct {
	UUID     string   `json:"uuid"`
	Status   string   `json:"status"`
	Warnings []string `json:"warnings,omitempty"`
	// Unchanged: the command was a no-op (re-claiming a task you hold).
	Unchanged bool `json:"unchanged,omitempty"`
}

// BlockedByDependencies is the JSON text of a refused reopen (docs/rules.md §2.4, §5.3).
type BlockedByDependencies struct {
	Error    string        `json:"error"`
	Message  string        `json:"message"`
	Blockers []BlockerView `json:"blockers"`
}

// BlockerView is one unresolved dependency as docs/rules.md §5.3 reports it.
type BlockerView struct {
	UUID           string          `json:"uuid"`
	Title          string          `json:"title"`
	Status         string          `json:"status"`
	Assignee       *store.ActorRef `json:"assignee"`
	SessionCheckin *SessionRef     `json:"sessionCheckin"`
}

// SessionRef names the session working on a blocker: the active session with an open check-in
// on it (docs/rules.md §5.3).
type SessionRef struct {
	SessionUUID string `json:"sessionUuid"`
	SessionName string `json:"sessionName"`
}
