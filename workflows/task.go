// The run loop of TaskWorkflow: its start, its handlers and the commit step that writes each
// change and adopts it (docs/write-path.md).

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
	"github.com/chorus-dev/chorus/vocab"
)

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
		w.state.Status, w.state.Row, w.state.Lease = string(vocab.TaskClosed), sig.Row, nil
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
		w.gateKeeper().register(ctx, recent, RequestTaskGate, DecideTaskGate),
	)
}

// next starts a change: a copy of the state, and the write that will move the row.
func (w *taskWorkflow) next(ctx workflow.Context) (TaskState, store.Write) {
	return w.state.clone(), nextWrite(ctx, w.state.Row, stamp(ctx))
}

// taskAssignmentChange is the change that sets the task's status and assignee to n's.
func taskAssignmentChange(n TaskState) store.TaskChange {
	return store.TaskChange{Patch: store.TaskPatch{Status: ptr(n.status()), Assignee: assignmentOf(n.Assignee)}}
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
	c.Write, c.UUID, c.CompanyUUID, c.ProjectUUID, c.ProposalUUID = wr, n.UUID, n.CompanyUUID, n.ProjectUUID, nilIfBlank(n.ProposalUUID)
	if err := persist(ctx, a.ApplyTaskChange, c).Get(ctx, &out); err != nil {
		if conflict, ok := activities.AsProjectionConflict(err); ok && w.closedByRevoke(conflict) {
			w.state.Status, w.state.Row, w.state.Lease = string(vocab.TaskClosed), RowMark{Version: conflict.Version, ChangeID: conflict.ChangeID}, nil
			w.publish(ctx)
			return out, Refuse(KindConflict, "Task is closed (its proposal was revoked); nothing was changed")
		}
		if refusal := w.adoptMove(ctx, err); refusal != nil {
			return out, refusal
		}
		if err = diverged(ctx, vocab.EntityTask, err); isChorusError(err) {
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
		_ = workflow.SignalExternalWorkflow(ctx, vocab.ProposalID(n.ProposalUUID), "", SignalTaskFinished,
			TaskFinished{TaskUUID: n.UUID, Status: string(after)}).Get(ctx, nil)
	}
	return out, nil
}

// settleLease applies docs/rules.md §5.10 to a change: a claim's lease lives while the task is
// assigned or in_progress with its holder, and every command of the holder renews it; whatever
// the change did to the lease is written with it.
func (w *taskWorkflow) settleLease(n *TaskState, c *store.TaskChange, by string, at time.Time) {
	holding := n.Assignee != nil && (n.status() == vocab.TaskAssigned || n.status() == vocab.TaskInProgress)
	switch {
	case !holding:
		n.Lease = nil
	case n.Lease != nil && by != "" && n.Assignee.UUID == by:
		n.Lease.ExpiresAt = at.Add(n.Lease.ttl())
	}
	if sameLease(w.state.Lease, n.Lease) {
		return
	}
	c.Patch.Lease = n.lease()
}

// closedByRevoke: the row moved past this workflow because the task's proposal was revoked (the
// one other writer of task rows): it is closed and carries a change id of the proposal.
func (w *taskWorkflow) closedByRevoke(c *store.ProjectionConflict) bool {
	return c.Found && c.Status == string(vocab.TaskClosed) && c.Version > w.state.Row.Version && w.state.ProposalUUID != "" &&
		strings.HasPrefix(c.ChangeID, vocab.ProposalID(w.state.ProposalUUID)+"#")
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
			ProjectUUIDKey.GetName(): s.ProjectUUID, EntityKey.GetName(): string(vocab.EntityTask), StatusKey.GetName(): status,
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
	n.Status = string(vocab.TaskAssigned)
	n.Assignee = &Holder{Type: "agent", UUID: agentUUID, Name: agentName, At: wr.At, By: by}
	n.Lease = leaseFrom(ttl, wr.At)
	if n.Lapsed != nil && n.Lapsed.UUID == agentUUID {
		n.Lapsed = nil
	}
	value := assignedValue{AssigneeType: "agent", AssigneeUUID: agentUUID}
	if by != nil {
		value.AgentUUID, value.AssignedBy = &agentUUID, by
	}
	c := taskAssignmentChange(n)
	c.Activities = []store.Activity{w.activity(n, wr, a, "assigned", value)}
	c.Notifications = []store.NotifySpec{w.notify(n, wr, a, "task_assigned",
		fmt.Sprintf("%s assigned you to task %q", a.Name, n.Title), taskAssignee(n))}
	if _, err := w.commit(ctx, n, wr, c, a.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (w *taskWorkflow) release(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	n.Status, n.Assignee = string(vocab.TaskOpen), nil
	c := taskAssignmentChange(n)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "released", nil)}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
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

func (w *taskWorkflow) update(ctx workflow.Context, in UpdateTaskInput) (TaskResult, error) {
	if in.Status != nil && vocab.TaskStatus(*in.Status) == vocab.TaskInProgress {
		blockers, err := w.unlessApplied(ctx)
		if err != nil {
			return TaskResult{}, err
		}
		if len(blockers) > 0 {
			return TaskResult{}, BlockedError(blockers)
		}
	}
	n, wr := w.next(ctx)
	c := store.TaskChange{}
	var value taskUpdatedValue
	if in.Title != nil {
		n.Title = strings.TrimSpace(*in.Title)
		c.Patch.Title, value.Title = &n.Title, &n.Title
	}
	if in.DescriptionSet {
		c.Patch.Description, value.DescriptionUpdated = store.SetTo(emptyToNil(in.Description)), true
		// Only mentions the old description did not have are new (docs/rules.md §7.3).
		c.Mentions = w.mentions(n, wr, in.Actor, "task", n.UUID, deref(in.Description), "description", in.SessionUUID, in.SessionName)
	}
	if in.Priority != nil {
		n.Priority = *in.Priority
		c.Patch.Priority, value.Priority = in.Priority, in.Priority
	}
	if in.StoryPoints != nil {
		c.Patch.StoryPoints, value.StoryPoints = store.SetTo(in.StoryPoints), in.StoryPoints
	}
	if in.SetCriteria {
		c.ReplacingAll, value.AcceptanceCriteriaReplaced = true, true
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
		move(&n, &c, vocab.TaskStatus(*in.Status))
		action, value.Status = "status_changed", in.Status
		c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_status_changed",
			fmt.Sprintf("%s changed the status of task %q", in.Actor.Name, n.Title), taskAssignee(n), taskCreator(n))}
	}
	if len(in.RemoveDepends) > 0 {
		value.RemovedDependencies = len(in.RemoveDepends)
	}
	requested := value != (taskUpdatedValue{}) || len(in.AddDependsOn) > 0
	if requested {
		// The store adds addedDependencies: only it knows which edges passed their checks.
		c.Activities = []store.Activity{w.activity(n, wr, in.Actor, action, value, in.SessionUUID, in.SessionName)}
		c.CountAddedDepsIn = action
	}
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

func (w *taskWorkflow) reportWork(ctx workflow.Context, in ReportWorkInput) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := store.TaskChange{}
	var statusUpdated *string
	if in.Status != nil {
		move(&n, &c, vocab.TaskStatus(*in.Status))
		statusUpdated = in.Status
	}
	c.Comment = &store.Comment{UUID: derivedFrom(wr, "report"), CompanyUUID: n.CompanyUUID, TargetType: "task",
		TargetUUID: n.UUID, Content: in.Report, AuthorType: in.Actor.Type, AuthorUUID: in.Actor.UUID, CreatedAt: wr.At, UpdatedAt: wr.At}
	// The report travels once, as the comment: the store copies it into the activity's value
	// and reads its mentions from it (a report of the largest call would otherwise take three
	// quarters of a payload's 2 MB in the activity's input).
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "comment_added",
		workReportValue{StatusUpdated: statusUpdated}, in.SessionUUID, in.SessionName)}
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

func (w *taskWorkflow) selfCheck(ctx workflow.Context, in MarkCriteriaInput) (TaskResult, error) {
	return w.applyMarks(ctx, in, true)
}

func (w *taskWorkflow) mark(ctx workflow.Context, in MarkCriteriaInput) (TaskResult, error) {
	return w.applyMarks(ctx, in, false)
}

// applyMarks writes developer (dev) or admin marks; neither changes the task's status.
func (w *taskWorkflow) applyMarks(ctx workflow.Context, in MarkCriteriaInput, dev bool) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := store.TaskChange{SelfCheck: dev}
	for _, m := range in.Marks {
		i := slices.IndexFunc(n.Criteria, func(x CriterionState) bool { return x.UUID == m.UUID })
		if dev {
			n.Criteria[i].DevStatus = m.Status
		} else {
			n.Criteria[i].Status = m.Status
		}
		c.Verdicts = append(c.Verdicts, store.Verdict{UUID: m.UUID, Status: vocab.CriterionStatus(m.Status), Evidence: m.Evidence,
			ByType: in.Actor.Type, By: in.Actor.UUID, At: wr.At})
	}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (w *taskWorkflow) submit(ctx workflow.Context, in SubmitInput) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := store.TaskChange{}
	move(&n, &c, vocab.TaskToVerify)
	var value any
	if in.Summary != nil {
		value = submittedValue{Summary: *in.Summary}
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

func (w *taskWorkflow) verify(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := store.TaskChange{}
	move(&n, &c, vocab.TaskDone)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "verified", nil)}
	c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_verified",
		fmt.Sprintf("Task %q has been verified", n.Title), taskAssignee(n))}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
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
	c := store.TaskChange{}
	move(&n, &c, vocab.TaskInProgress)
	if n.Assignee != nil {
		n.Lease = leaseFrom(in.ClaimTTL, wr.At) // the holder is back at work: a fresh lease (docs/rules.md §5.10)
	}
	if in.Force {
		c.Activities = append(c.Activities, w.activity(n, wr, in.Actor, "force_status_change", forcedValue{Force: true, Status: string(vocab.TaskInProgress)}))
	}
	c.Activities = append(c.Activities, w.activity(n, wr, in.Actor, "reopened", nil))
	c.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "task_reopened",
		fmt.Sprintf("Task %q has been reopened", n.Title), taskAssignee(n))}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (w *taskWorkflow) close(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	c := store.TaskChange{}
	move(&n, &c, vocab.TaskClosed)
	c.Activities = []store.Activity{w.activity(n, wr, in.Actor, "closed", nil)}
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

func (w *taskWorkflow) delete(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	n.Deleted = true
	c := store.TaskChange{}
	c.Delete = true
	if _, err := w.commit(ctx, n, wr, c, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return TaskResult{UUID: n.UUID, Status: "deleted"}, nil
}
