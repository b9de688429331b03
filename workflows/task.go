package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
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
	ProposalUUID string
	Row          RowMark
	At           time.Time
}

// TaskFinished is the payload of SignalTaskFinished, sent to a task's proposal when the task
// reaches done or closed.
type TaskFinished struct {
	TaskUUID string
	Status   string
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

func (s TaskState) status() TaskStatus { return TaskStatus(s.Status) }

func (s TaskState) isAssignee(a Actor) bool {
	return s.Assignee != nil && s.Assignee.UUID == a.UUID
}

// lapsedNote tells a command's actor whose claim lapsed why it is no longer the assignee
// (docs/rules.md §5.10): the fencing of a superseded holder, in words.
func (s TaskState) lapsedNote(a Actor) string {
	if s.Lapsed == nil || s.Lapsed.UUID != a.UUID || s.isAssignee(a) {
		return ""
	}
	return fmt.Sprintf("; your claim lapsed at %s after %ds without a task command or session heartbeat from you, "+
		"and the task was released", s.Lapsed.At.Format(time.RFC3339), s.Lapsed.TTLSeconds)
}

// assigneeText names the assignee for refusals.
func (s TaskState) assigneeText() string {
	if s.Assignee == nil {
		return "nobody"
	}
	if s.Assignee.Name != "" {
		return s.Assignee.Name
	}
	return s.Assignee.UUID
}

// Projection is the task's row as far as the workflow owns it (TaskColumns, with version and
// change_id).
func (s TaskState) Projection() store.Task {
	t := store.Task{UUID: s.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, ProposalUUID: nilIfBlank(s.ProposalUUID),
		Title: s.Title, Status: TaskStatus(s.Status), Priority: s.Priority, CreatedByType: s.CreatedBy.Type, CreatedByUUID: s.CreatedBy.UUID,
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

// TaskColumns are the columns of a task row its workflow owns (TaskState.row).
var TaskColumns = []string{"project_uuid", "title", "status", "priority", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid",
	"claim_ttl_seconds", "claim_expires_at"}

// leaseColumns are the columns of a claim's lease.
var leaseColumns = []string{"claim_ttl_seconds", "claim_expires_at"}

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
	State *TaskState
}

// TaskCommand is the input of commands that need only the actor. A claim carries the project's
// claim time to live (docs/rules.md §5.10).
type TaskCommand struct {
	Actor    Actor
	ClaimTTL int64 `json:",omitempty"`
	// Project is the project whose access the caller was checked on before sending a claim; a
	// claim finding the task in another project (moved meanwhile) is refused. Empty: not checked.
	Project string `json:",omitempty"`
}

// checkProject refuses a claim whose access check saw the task in another project than the
// workflow's: the task moved between the check and the claim, and the caller may not see it now.
func (s TaskState) checkProject(in TaskCommand) error {
	if in.Project != "" && in.Project != s.ProjectUUID {
		return movedRefusal(EntityTask)
	}
	return nil
}

// AssignTaskInput assigns a task to another agent (chorus_pm_assign_task).
type AssignTaskInput struct {
	Actor      Actor
	TargetUUID string
	TargetName string
	ClaimTTL   int64 `json:",omitempty"`
}

// UpdateTaskInput is chorus_update_task: field edits by anyone, criteria replacement,
// dependency edits, and a status move by the assignee.
type UpdateTaskInput struct {
	Actor          Actor
	Title          *string
	Description    *string
	Priority       *string
	StoryPoints    *float64
	SetCriteria    bool
	Criteria       []store.CriterionDraft
	AddDependsOn   []string
	RemoveDepends  []string
	Status         *string
	SessionUUID    *string
	SessionName    *string
	DescriptionSet bool
}

// ReportWorkInput is chorus_report_work.
type ReportWorkInput struct {
	Actor       Actor
	Report      string
	Status      *string
	SessionUUID *string
	SessionName *string
}

// CriterionMark is one criterion's self-check or verification.
type CriterionMark struct {
	UUID     string
	Status   string // passed | failed
	Evidence *string
}

// MarkCriteriaInput is a self-check (developer fields) or a verification mark (admin fields).
type MarkCriteriaInput struct {
	Actor Actor
	Marks []CriterionMark
}

// SubmitInput is chorus_submit_for_verify.
type SubmitInput struct {
	Actor   Actor
	Summary *string
}

// ReopenInput is chorus_admin_reopen_task.
type ReopenInput struct {
	Actor    Actor
	Force    bool
	ClaimTTL int64 `json:",omitempty"`
}

// TaskResult is what task updates return; callers read the full view from the database.
type TaskResult struct {
	UUID     string
	Status   string
	Warnings []string `json:",omitempty"`
	// Unchanged: the command was a no-op (re-claiming a task you hold).
	Unchanged bool `json:",omitempty"`
}

// current is the state, for the rules bound with on.
func (w *taskWorkflow) current() TaskState { return w.state }

type taskWorkflow struct {
	state TaskState
	mu    *commandLock
	// memo is the mark of the memo this run last published (publishShown).
	memo memoMark
	// stopping: the run is about to continue as new, so no lease expiry may start; expiring: one
	// is under way (see watchLease).
	stopping, expiring bool
}

// TaskWorkflow is the long-lived workflow of one task (id "task/<uuid>"), started by proposal
// approval or by chorus_create_tasks. It owns the task's status, assignee and acceptance marks,
// accepts one update per task tool, tells its proposal when the task is done or closed, and
// adopts the proposal's revoke. It stays open after done or closed: an admin may still delete
// the task.
func TaskWorkflow(ctx workflow.Context, in TaskRun) error {
	w := &taskWorkflow{mu: newCommandLock(ctx)}
	if in.State != nil {
		w.state = *in.State
	}
	if err := w.register(ctx); err != nil {
		return err
	}
	pendingRevokes := receiveSignals(ctx, w.mu, SignalProposalRevoked, w.followRevoke)
	pendingMoves := receiveMoves(ctx, w.mu, w.followMove)
	workflow.Go(ctx, w.watchLease)
	if w.state.Created {
		w.publish(ctx)
	}
	again, err := awaitContinueAsNew(ctx, w.mu, func() bool { return w.state.Deleted })
	if err != nil || !again {
		return err
	}
	w.stopping = true // the next run takes the lease over from the state it is given
	if err := workflow.Await(ctx, func() bool { return !w.expiring }); err != nil {
		return err
	}
	pendingRevokes(ctx) // do not lose a revoke that arrived just now
	pendingMoves(ctx)
	return workflow.NewContinueAsNewError(ctx, TaskWorkflowName, TaskRun{State: &w.state})
}

// followRevoke adopts the closed row the revoke cascade wrote, unless the workflow is already
// there (a command of its own met the revoke first and adopted it).
func (w *taskWorkflow) followRevoke(ctx workflow.Context, sig ProposalRevoked) {
	if err := w.mu.Lock(ctx); err != nil {
		return
	}
	defer w.mu.Unlock()
	if sig.Row.Version > w.state.Row.Version {
		w.state.Status, w.state.Row, w.state.Lease = string(TaskClosed), sig.Row, nil
		w.publish(ctx)
	}
}

func (w *taskWorkflow) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (TaskState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The task's workflow state: status, assignee, acceptance marks, row version."}); err != nil {
		return err
	}
	recent := func() *Recent { return &w.state.Recent }
	return firstErr(
		registerUpdate(ctx, w.mu, recent, ClaimTask, on(w.current, TaskState.checkClaim), w.claim),
		registerUpdate(ctx, w.mu, recent, ClaimNextTask, on(w.current, TaskState.checkClaimNext), w.claimNext),
		registerUpdate(ctx, w.mu, recent, ReleaseTask, on(w.current, TaskState.checkRelease), w.release),
		registerUpdate(ctx, w.mu, recent, RenewClaim, on(w.current, TaskState.checkRenew), w.renew),
		registerUpdate(ctx, w.mu, recent, AssignTask, on(w.current, TaskState.checkAssign), w.assign),
		registerUpdate(ctx, w.mu, recent, UpdateTask, on(w.current, TaskState.checkUpdate), w.update),
		registerUpdate(ctx, w.mu, recent, ReportWork, on(w.current, TaskState.checkReport), w.reportWork),
		registerUpdate(ctx, w.mu, recent, SelfCheck, on(w.current, TaskState.checkSelfCheck), w.selfCheck),
		registerUpdate(ctx, w.mu, recent, SubmitForVerify, on(w.current, TaskState.checkSubmit), w.submit),
		registerUpdate(ctx, w.mu, recent, MarkCriteria, on(w.current, TaskState.checkMark), w.mark),
		registerUpdate(ctx, w.mu, recent, VerifyTask, on(w.current, TaskState.checkVerify), w.verify),
		registerUpdate(ctx, w.mu, recent, ReopenTask, on(w.current, TaskState.checkReopen), w.reopen),
		registerUpdate(ctx, w.mu, recent, CloseTask, on(w.current, TaskState.checkClose), w.close),
		registerUpdate(ctx, w.mu, recent, DeleteTask, on(w.current, TaskState.checkDelete), w.delete),
	)
}

var notFoundTask = Refuse(KindNotFound, "Task not found")

func (s TaskState) exists() error {
	if !s.Created || s.Deleted {
		return notFoundTask
	}
	return nil
}

// next starts a change: a copy of the state, and the write that will move the row.
func (w *taskWorkflow) next(ctx workflow.Context) (TaskState, store.Write) {
	return w.state.clone(), nextWrite(ctx, w.state.Row, stamp(ctx))
}

// change is a write of the given columns of the task, from n.
func (w *taskWorkflow) change(n TaskState, cols ...string) store.TaskChange {
	return store.TaskChange{Set: n.Projection(), Columns: cols}
}

func (w *taskWorkflow) activity(n TaskState, wr store.Write, a Actor, action string, value any, session ...*string) store.Activity {
	r := store.Activity{UUID: derivedFrom(wr, "activity", action), CompanyUUID: n.CompanyUUID, ProjectUUID: n.ProjectUUID,
		TargetType: "task", TargetUUID: n.UUID, ActorType: a.Type, ActorUUID: a.UUID, Action: action,
		Value: activities.MarshalValue(value), CreatedAt: wr.At}
	if len(session) == 2 {
		r.SessionUUID, r.SessionName = session[0], session[1]
	}
	return r
}

func (w *taskWorkflow) notify(n TaskState, wr store.Write, a Actor, action, message string, to ...store.Recipient) store.NotifySpec {
	return store.NotifySpec{Seed: derivedFrom(wr, "notify", action), ProjectUUID: n.ProjectUUID, Action: action,
		EntityType: "task", EntityUUID: n.UUID, EntityTitle: n.Title, Message: message, ActorType: a.Type, ActorUUID: a.UUID,
		ActorName: a.Name, Recipients: to}
}

// mentions is the text of this change whose mentions the store records on the task
// (docs/rules.md §7.3); previousColumn names the column holding the text before an edit.
func (w *taskWorkflow) mentions(n TaskState, wr store.Write, a Actor, sourceType, sourceUUID, text, previousColumn string,
	sessionUUID, sessionName *string) *store.MentionText {
	return &store.MentionText{Seed: wr.ID + "/mentions", Text: text, PreviousColumn: previousColumn,
		SourceType: sourceType, SourceUUID: sourceUUID, TargetType: "task", TargetUUID: n.UUID, TargetTitle: n.Title,
		ProjectUUID: n.ProjectUUID, ActorType: a.Type, ActorUUID: a.UUID, ActorName: a.Name,
		SessionUUID: sessionUUID, SessionName: sessionName, At: wr.At}
}

func taskAssignee(s TaskState) store.Recipient {
	if s.Assignee == nil {
		return store.Recipient{}
	}
	return store.Recipient{Type: "agent", UUID: s.Assignee.UUID}
}

func taskCreator(s TaskState) store.Recipient {
	return store.Recipient{Type: s.CreatedBy.Type, UUID: s.CreatedBy.UUID}
}

// commit persists change c (made on n by the write wr, for the agent by, "" for none), then makes
// n the state, tells operators and, when the task just finished, its proposal. A conflict with
// its proposal's revoke is adopted and refused; any other conflict is a projection conflict
// (docs/write-path.md).
func (w *taskWorkflow) commit(ctx workflow.Context, n TaskState, wr store.Write, c store.TaskChange, by string) (store.TaskOutcome, error) {
	w.settleLease(&n, &c, by, wr.At)
	var a *activities.Activities
	var out store.TaskOutcome
	c.Write, c.UUID, c.CompanyUUID, c.ProjectUUID = wr, n.UUID, n.CompanyUUID, n.ProjectUUID
	if err := persist(ctx, a.ApplyTaskChange, c).Get(ctx, &out); err != nil {
		if conflict, ok := activities.AsProjectionConflict(err); ok && w.closedByRevoke(conflict) {
			w.state.Status, w.state.Row, w.state.Lease = string(TaskClosed), RowMark{Version: conflict.Version, ChangeID: conflict.ChangeID}, nil
			w.publish(ctx)
			return out, Refuse(KindConflict, "Task is closed (its proposal was revoked); nothing was changed")
		}
		if refusal := w.adoptMove(ctx, err); refusal != nil {
			return out, refusal
		}
		if err = diverged(ctx, EntityTask, err); isChorusError(err) {
			return out, err
		}
		return out, fmt.Errorf("could not save the task: %w", err)
	}
	before := w.state.status()
	n.Row = mark(wr)
	w.state = n
	w.publish(ctx)
	if after := n.status(); after != before && after.Resolved() && n.ProposalUUID != "" {
		// Best effort: the proposal's workflow keeps a tally for operators; the database is the truth.
		_ = workflow.SignalExternalWorkflow(ctx, ProposalID(n.ProposalUUID), "", SignalTaskFinished,
			TaskFinished{TaskUUID: n.UUID, Status: string(after)}).Get(ctx, nil)
	}
	return out, nil
}

// settleLease applies docs/rules.md §5.10 to a change: a claim's lease lives while the task is
// assigned or in_progress with its holder, and every command of the holder renews it; whatever
// the change did to the lease is written with it.
func (w *taskWorkflow) settleLease(n *TaskState, c *store.TaskChange, by string, at time.Time) {
	holding := n.Assignee != nil && (n.status() == TaskAssigned || n.status() == TaskInProgress)
	switch {
	case !holding:
		n.Lease = nil
	case n.Lease != nil && by != "" && n.Assignee.UUID == by:
		n.Lease.ExpiresAt = at.Add(n.Lease.ttl())
	}
	if sameLease(w.state.Lease, n.Lease) {
		return
	}
	p := n.Projection()
	c.Set.ClaimTTLSeconds, c.Set.ClaimExpiresAt = p.ClaimTTLSeconds, p.ClaimExpiresAt
	for _, col := range leaseColumns {
		if !slices.Contains(c.Columns, col) {
			c.Columns = append(c.Columns, col)
		}
	}
}

// closedByRevoke: the row moved past this workflow because the task's proposal was revoked (the
// one other writer of task rows): it is closed and carries a change id of the proposal.
func (w *taskWorkflow) closedByRevoke(c *store.ProjectionConflict) bool {
	return c.Found && c.Status == string(TaskClosed) && c.Version > w.state.Row.Version && w.state.ProposalUUID != "" &&
		strings.HasPrefix(c.ChangeID, ProposalID(w.state.ProposalUUID)+"#")
}

func (w *taskWorkflow) result() TaskResult {
	return TaskResult{UUID: w.state.UUID, Status: w.state.Status}
}

func (w *taskWorkflow) publish(ctx workflow.Context) {
	s := w.state
	status := s.Status
	if s.Deleted {
		status = "deleted"
	}
	assignee := ""
	if s.Assignee != nil {
		assignee = s.Assignee.UUID
	}
	assigneeName := ""
	if s.Assignee != nil {
		assigneeName = s.assigneeText()
	}
	checked, err := s.Checked()
	holds := s.Created && !s.Deleted && err == nil
	memo := withDigest(publishedMemo(s.Title, s.ProjectName), holds, checked, err, s.Row.Version)
	publishShown(ctx, shown{memo: memo, mark: newMemoMark(s.Title, s.ProjectName, s.Row.Version, holds), last: &w.memo,
		keywords: map[string]string{
			ProjectUUIDKey.GetName(): s.ProjectUUID, EntityKey.GetName(): string(EntityTask), StatusKey.GetName(): status,
			AssigneeKey.GetName(): assignee, CreatorKey.GetName(): s.CreatedBy.UUID, TitleKey.GetName(): keywordValue(s.Title),
			AssigneeNameKey.GetName(): keywordValue(assigneeName)}})
	details := fmt.Sprintf("**Task** %q is **%s** (priority %s)", s.Title, status, s.Priority)
	if s.Assignee != nil {
		details += ", assigned to " + s.assigneeText()
	}
	if s.Lease != nil {
		details += ", claim lapses at " + s.Lease.ExpiresAt.Format(time.RFC3339)
	}
	if n := len(s.Criteria); n > 0 {
		passed := 0
		for _, c := range s.Criteria {
			if c.Status == "passed" {
				passed++
			}
		}
		details += fmt.Sprintf("; %d/%d criteria passed", passed, n)
	}
	workflow.SetCurrentDetails(ctx, details+fmt.Sprintf(" (row version %d)", s.Row.Version))
}

// ---- claim / release / assign ----

func (s TaskState) checkClaim(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if err := s.checkProject(in); err != nil {
		return err
	}
	switch {
	case s.isAssignee(in.Actor):
		return nil // re-claiming your own task changes nothing (docs/rules.md §8.1)
	case s.Assignee != nil && (s.status() == TaskOpen || s.status() == TaskAssigned):
		return Refuse(KindConflict, "Task is already assigned to %s; ask an admin to reassign it", s.assigneeText())
	case s.status() != TaskOpen && s.status() != TaskAssigned:
		return Refuse(KindConflict, "Can only claim tasks with open status: this task is %s%s. Find open work with chorus_get_available_tasks.",
			s.Status, heldBy(s))
	}
	return nil
}

// checkClaimNext is a claim by chorus_claim_next_task: only a task nobody holds that is open
// (docs/rules.md §4.14). The caller tries the next candidate when this one is refused.
func (s TaskState) checkClaimNext(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if err := s.checkProject(in); err != nil {
		return err
	}
	if s.status() != TaskOpen || s.Assignee != nil {
		return Refuse(KindConflict, "Task is no longer open to claim: it is %s%s", s.Status, heldBy(s))
	}
	return nil
}

// claimNext claims the task for the caller if it is still unblocked: its dependencies are read
// under the task's lock, and an edge can only be added to it through this workflow, so the
// answer holds until the claim is written (a resolved dependency never becomes unresolved).
func (w *taskWorkflow) claimNext(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	blockers, err := w.unlessApplied(ctx)
	if err != nil {
		return TaskResult{}, err
	}
	if len(blockers) > 0 {
		return TaskResult{}, Refuse(KindConflict, "Task is blocked by %d unresolved dependency(ies)", len(blockers))
	}
	return w.assignTo(ctx, in.Actor, in.Actor.UUID, in.Actor.Name, nil, in.ClaimTTL)
}

func heldBy(s TaskState) string {
	if s.Assignee == nil {
		return ""
	}
	return " (assigned to " + s.assigneeText() + ")"
}

func (w *taskWorkflow) claim(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	if w.state.isAssignee(in.Actor) {
		if w.state.Lease != nil {
			return w.renew(ctx, in) // a task command of the holder: it renews the claim (docs/rules.md §5.10)
		}
		r := w.result()
		r.Unchanged = true
		return r, nil
	}
	return w.assignTo(ctx, in.Actor, in.Actor.UUID, in.Actor.Name, nil, in.ClaimTTL)
}

// assignTo makes agent the assignee (claim, or assign by another agent when by is set), with a
// fresh lease of ttl seconds when the project gives claims one.
func (w *taskWorkflow) assignTo(ctx workflow.Context, a Actor, agentUUID, agentName string, by *string, ttl int64) (TaskResult, error) {
	n, wr := w.next(ctx)
	n.Status = string(TaskAssigned)
	n.Assignee = &Holder{Type: "agent", UUID: agentUUID, Name: agentName, At: wr.At, By: by}
	n.Lease = leaseFrom(ttl, wr.At)
	if n.Lapsed != nil && n.Lapsed.UUID == agentUUID {
		n.Lapsed = nil
	}
	value := map[string]any{"assigneeType": "agent", "assigneeUuid": agentUUID}
	if by != nil {
		value["agentUuid"], value["assignedBy"] = agentUUID, *by
	}
	c := w.change(n, "status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid")
	c.Activities = []store.Activity{w.activity(n, wr, a, "assigned", value)}
	c.Notifications = []store.NotifySpec{w.notify(n, wr, a, "task_assigned",
		fmt.Sprintf("%s assigned you to task %q", a.Name, n.Title), taskAssignee(n))}
	if _, err := w.commit(ctx, n, wr, c, a.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (s TaskState) checkRelease(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can release a task (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	if s.status() != TaskAssigned {
		return Refuse(KindConflict, "Can only release tasks with assigned status: this task is %s. Submit it for verification or ask an admin to close it.", s.Status)
	}
	return nil
}

func (w *taskWorkflow) release(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	n.Status, n.Assignee = string(TaskOpen), nil
	c := w.change(n, "status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid")
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "released", nil)}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (s TaskState) checkAssign(in AssignTaskInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s := s.status(); s != TaskOpen && s != TaskAssigned {
		return Refuse(KindConflict, "Can only assign tasks with open or assigned status, current status: %s", s)
	}
	return nil
}

func (w *taskWorkflow) assign(ctx workflow.Context, in AssignTaskInput) (TaskResult, error) {
	return w.assignTo(ctx, in.Actor, in.TargetUUID, in.TargetName, ptr(in.Actor.UUID), in.ClaimTTL)
}

// ---- status moves shared by update_task, report_work, submit, verify, reopen, close ----

// unlessApplied reads the task's unresolved dependencies for a guard, unless the change the
// running update makes is already journaled (alreadyApplied: a reset re-applies it), when it
// returns none.
func (w *taskWorkflow) unlessApplied(ctx workflow.Context) ([]store.TaskLink, error) {
	if applied, err := alreadyApplied(ctx, w.state.UUID, w.state.Row); err != nil || applied {
		return nil, err
	}
	return w.blockers(ctx)
}

// blockers reads the task's unresolved dependencies.
func (w *taskWorkflow) blockers(ctx workflow.Context) ([]store.TaskLink, error) {
	var a *activities.Activities
	var out []store.TaskLink
	if err := read(ctx, a.Blockers, w.state.UUID).Get(ctx, &out); err != nil {
		return nil, fmt.Errorf("could not read the task's dependencies: %w", err)
	}
	return out, nil
}

// BlockedError is the refusal of a move to in_progress while dependencies are open (docs/rules.md §5.3).
func BlockedError(blockers []store.TaskLink) *Error {
	counted := "dependencies"
	if len(blockers) == 1 {
		counted = "dependency"
	}
	msg := fmt.Sprintf("Cannot move to in_progress: %d %s not resolved.\n\nBlockers:", len(blockers), counted)
	for i, x := range blockers {
		assignee := "none"
		if x.AssigneeUUID != nil {
			name := deref(x.AssigneeName)
			if name == "" {
				name = *x.AssigneeUUID
			}
			assignee = fmt.Sprintf("%s [%s]", name, deref(x.AssigneeType))
		}
		session := "no active session"
		if x.SessionName != nil {
			session = *x.SessionName
		}
		msg += fmt.Sprintf("\n%d. %q (status: %s, assignee: %s, session: %s)", i+1, x.Title, x.Status, assignee, session)
	}
	msg += "\n\nTip: Use chorus_get_unblocked_tasks to find tasks you can start now."
	return Refuse(KindConflict, "%s", msg)
}

// move applies a status change to n with the reset rule of docs/rules.md §5.2: leaving to_verify
// for anything but done resets every acceptance mark.
func move(n *TaskState, c *store.TaskChange, to TaskStatus) {
	from := n.status()
	n.Status = string(to)
	c.Set = n.Projection()
	if !slices.Contains(c.Columns, "status") {
		c.Columns = append(c.Columns, "status")
	}
	if from == TaskToVerify && to != TaskDone {
		c.ResetCriteria = true
		for i := range n.Criteria {
			n.Criteria[i].Status, n.Criteria[i].DevStatus = "pending", "pending"
		}
	}
}

func legalMoves(s TaskStatus) string {
	var names []string
	for _, m := range s.Moves() {
		names = append(names, string(m))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ---- update_task ----

func (s TaskState) checkUpdate(in UpdateTaskInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if err := CheckTitle("", "title", in.Title); err != nil {
		return err
	}
	if in.SetCriteria {
		if err := CheckCriteria("", in.Criteria); err != nil {
			return err
		}
	}
	if in.Status != nil {
		to := TaskStatus(*in.Status)
		if !s.isAssignee(in.Actor) {
			return Refuse(KindForbidden, "Only the assignee can update task status (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
		}
		if !s.status().CanMove(to) {
			return Refuse(KindConflict, "Invalid status transition: %s -> %s (from %s the task may go to: %s)",
				s.Status, to, s.Status, legalMoves(s.status()))
		}
	}
	return nil
}

func (w *taskWorkflow) update(ctx workflow.Context, in UpdateTaskInput) (TaskResult, error) {
	if in.Status != nil && TaskStatus(*in.Status) == TaskInProgress {
		blockers, err := w.unlessApplied(ctx)
		if err != nil {
			return TaskResult{}, err
		}
		if len(blockers) > 0 {
			return TaskResult{}, BlockedError(blockers)
		}
	}
	n, wr := w.next(ctx)
	c := w.change(n)
	value := map[string]any{}
	if in.Title != nil {
		n.Title = strings.TrimSpace(*in.Title)
		c.Columns, value["title"] = append(c.Columns, "title"), n.Title
	}
	if in.DescriptionSet {
		c.Set.Description = emptyToNil(in.Description)
		c.Columns, value["descriptionUpdated"] = append(c.Columns, "description"), true
		// Only mentions the old description did not have are new (docs/rules.md §7.3).
		c.Mentions = w.mentions(n, wr, in.Actor, "task", n.UUID, deref(in.Description), "description", in.SessionUUID, in.SessionName)
	}
	if in.Priority != nil {
		n.Priority = *in.Priority
		c.Columns, value["priority"] = append(c.Columns, "priority"), *in.Priority
	}
	if in.StoryPoints != nil {
		c.Set.StoryPoints = in.StoryPoints
		c.Columns, value["storyPoints"] = append(c.Columns, "story_points"), *in.StoryPoints
	}
	if in.SetCriteria {
		c.ReplacingAll, value["acceptanceCriteriaReplaced"] = true, true
		n.Criteria = nil
		for k, item := range NormalizeCriteria(in.Criteria) {
			id := derivedFrom(wr, "criterion", strconv.Itoa(k))
			c.ReplaceCriteria = append(c.ReplaceCriteria, store.AcceptanceCriterion{UUID: id, TaskUUID: n.UUID,
				Description: item.Description, Required: item.Required, DevStatus: "pending", Status: "pending", SortOrder: k,
				CreatedAt: wr.At, UpdatedAt: wr.At})
			n.Criteria = append(n.Criteria, CriterionState{UUID: id, Required: item.Required, Status: "pending", DevStatus: "pending"})
		}
	}
	c.AddDeps, c.RemoveDeps = in.AddDependsOn, in.RemoveDepends
	action := "updated"
	if in.Status != nil {
		move(&n, &c, TaskStatus(*in.Status))
		action, value["status"] = "status_changed", *in.Status
		c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_status_changed",
			fmt.Sprintf("%s changed the status of task %q", in.Actor.Name, n.Title), taskAssignee(n), taskCreator(n))}
	}
	if len(in.RemoveDepends) > 0 {
		value["removedDependencies"] = len(in.RemoveDepends)
	}
	requested := len(value) > 0 || len(in.AddDependsOn) > 0
	if requested {
		// The store adds addedDependencies: only it knows which edges passed their checks.
		c.Activities = []store.Activity{w.activity(n, wr, in.Actor, action, value, in.SessionUUID, in.SessionName)}
		c.CountAddedDepsIn = action
	}
	desc, points := c.Set.Description, c.Set.StoryPoints
	c.Set = n.Projection()
	c.Set.Description, c.Set.StoryPoints = desc, points
	out, err := w.commit(ctx, n, wr, c, in.Actor.UUID)
	if err != nil {
		return TaskResult{}, err
	}
	var warnings []string
	for _, dep := range in.AddDependsOn {
		if msg, failed := out.DepErrors[dep]; failed {
			warnings = append(warnings, fmt.Sprintf("addDependsOn %q: %s", dep, msg))
		}
	}
	r := w.result()
	r.Warnings = warnings
	return r, nil
}

// ---- report_work ----

func (s TaskState) checkReport(in ReportWorkInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can report work (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	if strings.TrimSpace(in.Report) == "" {
		return Refuse(KindInvalid, "Input validation error: report must not be blank")
	}
	if in.Status != nil && !s.status().CanMove(TaskStatus(*in.Status)) {
		// docs/rules.md §8.3: an illegal status is refused, and nothing (not even the report) is recorded.
		return Refuse(KindConflict, "Cannot report work with status %s: the task is %s, and from %s it may go to: %s. Nothing was recorded.",
			*in.Status, s.Status, s.Status, legalMoves(s.status()))
	}
	return nil
}

func (w *taskWorkflow) reportWork(ctx workflow.Context, in ReportWorkInput) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := w.change(n)
	var statusUpdated *string
	if in.Status != nil {
		move(&n, &c, TaskStatus(*in.Status))
		statusUpdated = in.Status
	}
	c.Comment = &store.Comment{UUID: derivedFrom(wr, "report"), CompanyUUID: n.CompanyUUID, TargetType: "task",
		TargetUUID: n.UUID, Content: in.Report, AuthorType: in.Actor.Type, AuthorUUID: in.Actor.UUID, CreatedAt: wr.At, UpdatedAt: wr.At}
	// The report travels once, as the comment: the store copies it into the activity's value
	// and reads its mentions from it (a report of the largest call would otherwise take three
	// quarters of a payload's 2 MB in the activity's input).
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "comment_added",
		map[string]any{"statusUpdated": statusUpdated}, in.SessionUUID, in.SessionName)}
	c.ReportIn = "comment_added"
	c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "comment_added",
		fmt.Sprintf("%s commented on %q", in.Actor.Name, n.Title), taskAssignee(n), taskCreator(n))}
	c.Mentions = w.mentions(n, wr, in.Actor, "comment", c.Comment.UUID, "", "", in.SessionUUID, in.SessionName)
	c.Mentions.FromComment = true
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

// ---- acceptance criteria ----

func (s TaskState) checkOwnership(marks []CriterionMark) error {
	for _, m := range marks {
		if !slices.ContainsFunc(s.Criteria, func(c CriterionState) bool { return c.UUID == m.UUID }) {
			return Refuse(KindInvalid, "Criterion %s does not belong to task %s", m.UUID, s.UUID)
		}
	}
	if len(marks) == 0 {
		return Refuse(KindInvalid, "Input validation error: criteria must list at least one criterion")
	}
	return nil
}

func (s TaskState) checkSelfCheck(in MarkCriteriaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can self-check acceptance criteria (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	return s.checkOwnership(in.Marks)
}

func (w *taskWorkflow) selfCheck(ctx workflow.Context, in MarkCriteriaInput) (TaskResult, error) {
	return w.applyMarks(ctx, in, true)
}

func (s TaskState) checkMark(in MarkCriteriaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	return s.checkOwnership(in.Marks)
}

func (w *taskWorkflow) mark(ctx workflow.Context, in MarkCriteriaInput) (TaskResult, error) {
	return w.applyMarks(ctx, in, false)
}

// applyMarks writes developer (dev) or admin marks; neither changes the task's status.
func (w *taskWorkflow) applyMarks(ctx workflow.Context, in MarkCriteriaInput, dev bool) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := w.change(n)
	now := wr.At
	for _, m := range in.Marks {
		i := slices.IndexFunc(n.Criteria, func(x CriterionState) bool { return x.UUID == m.UUID })
		row := store.AcceptanceCriterion{UUID: m.UUID}
		if dev {
			n.Criteria[i].DevStatus = m.Status
			row.DevStatus, row.DevEvidence, row.DevMarkedByType, row.DevMarkedBy, row.DevMarkedAt = CriterionStatus(m.Status), m.Evidence, ptr(in.Actor.Type), ptr(in.Actor.UUID), &now
		} else {
			n.Criteria[i].Status = m.Status
			row.Status, row.Evidence, row.MarkedByType, row.MarkedBy, row.MarkedAt = CriterionStatus(m.Status), m.Evidence, ptr(in.Actor.Type), ptr(in.Actor.UUID), &now
		}
		c.Marks = append(c.Marks, row)
	}
	if dev {
		c.MarkColumns = []string{"dev_status", "dev_evidence", "dev_marked_by_type", "dev_marked_by", "dev_marked_at"}
	} else {
		c.MarkColumns = []string{"status", "evidence", "marked_by_type", "marked_by", "marked_at"}
	}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

// ---- submit / verify / reopen / close / delete ----

func (s TaskState) checkSubmit(in SubmitInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can submit for verification (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	if s.status() != TaskInProgress {
		return Refuse(KindConflict, "Can only submit for verification from in_progress status: this task is %s%s",
			s.Status, nextStepForSubmit(s.status()))
	}
	return nil
}

func nextStepForSubmit(s TaskStatus) string {
	switch s {
	case TaskAssigned:
		return "; move it to in_progress with chorus_update_task first"
	case TaskToVerify:
		return "; it is already waiting for an admin to verify it"
	}
	return ""
}

func (w *taskWorkflow) submit(ctx workflow.Context, in SubmitInput) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := w.change(n)
	move(&n, &c, TaskToVerify)
	var value any
	if in.Summary != nil {
		value = map[string]string{"summary": *in.Summary}
	}
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "submitted", value)}
	c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_submitted_for_verify",
		fmt.Sprintf("%s submitted task %q for verification", in.Actor.Name, n.Title),
		store.Recipient{Type: "user", UUID: in.Actor.OwnerUUID}, taskCreator(n))}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (s TaskState) checkVerify(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.status() != TaskToVerify {
		return Refuse(KindConflict, "Can only verify Tasks in to_verify status, current status: %s%s", s.Status,
			map[TaskStatus]string{TaskInProgress: " (the assignee must submit it first)", TaskDone: " (it is already verified)"}[s.status()])
	}
	required, passed, failed, pending := 0, 0, 0, 0
	for _, c := range s.Criteria {
		if !c.Required {
			continue
		}
		required++
		switch c.Status {
		case "passed":
			passed++
		case "failed":
			failed++
		default:
			pending++
		}
	}
	if passed < required {
		return Refuse(KindConflict, "Cannot verify task: Not all required acceptance criteria are passed. Required: %d, Passed: %d, Failed: %d, Pending: %d. "+
			"Mark them with chorus_mark_acceptance_criteria, or reopen the task.", required, passed, failed, pending)
	}
	return nil
}

func (w *taskWorkflow) verify(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := w.change(n)
	move(&n, &c, TaskDone)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "verified", nil)}
	c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_verified",
		fmt.Sprintf("Task %q has been verified", n.Title), taskAssignee(n))}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (s TaskState) checkReopen(in ReopenInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.status() != TaskToVerify {
		return Refuse(KindConflict, "Can only reopen Tasks in to_verify status, current status: %s", s.Status)
	}
	return nil
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

func blockerViews(ls []store.TaskLink) []BlockerView {
	out := make([]BlockerView, len(ls))
	for i, l := range ls {
		out[i] = BlockerView{UUID: l.UUID, Title: l.Title, Status: l.Status}
		if l.AssigneeUUID != nil {
			out[i].Assignee = &store.ActorRef{Type: deref(l.AssigneeType), UUID: *l.AssigneeUUID, Name: deref(l.AssigneeName)}
		}
		if l.SessionUUID != nil {
			out[i].SessionCheckin = &SessionRef{SessionUUID: *l.SessionUUID, SessionName: deref(l.SessionName)}
		}
	}
	return out
}

func (w *taskWorkflow) reopen(ctx workflow.Context, in ReopenInput) (TaskResult, error) {
	if !in.Force {
		blockers, err := w.unlessApplied(ctx)
		if err != nil {
			return TaskResult{}, err
		}
		if len(blockers) > 0 {
			// Struct fields marshal in declaration order: deterministic.
			//workflowcheck:ignore
			b, _ := json.Marshal(BlockedByDependencies{Error: "blocked_by_dependencies",
				Message:  fmt.Sprintf("Task is blocked by %d unresolved dependency(ies). Use force=true to bypass.", len(blockers)),
				Blockers: blockerViews(blockers)})
			return TaskResult{}, Refuse(KindConflict, "%s", b)
		}
	}
	n, wr := w.next(ctx)
	c := w.change(n)
	move(&n, &c, TaskInProgress)
	if n.Assignee != nil {
		n.Lease = leaseFrom(in.ClaimTTL, wr.At) // the holder is back at work: a fresh lease (docs/rules.md §5.10)
	}
	if in.Force {
		c.Activities = append(c.Activities, w.activity(n, wr, in.Actor, "force_status_change", map[string]any{"status": "in_progress", "force": true}))
	}
	c.Activities = append(c.Activities, w.activity(n, wr, in.Actor, "reopened", nil))
	c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_reopened",
		fmt.Sprintf("Task %q has been reopened", n.Title), taskAssignee(n))}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (s TaskState) checkClose(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.status() == TaskClosed {
		return Refuse(KindConflict, "Task is already in closed status")
	}
	return nil
}

func (w *taskWorkflow) close(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := w.change(n)
	move(&n, &c, TaskClosed)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "closed", nil)}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (s TaskState) checkDelete(in TaskCommand) error { return s.exists() }

func (w *taskWorkflow) delete(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	n.Deleted = true
	c := w.change(n)
	c.Delete = true
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return TaskResult{UUID: n.UUID, Status: "deleted"}, nil
}
