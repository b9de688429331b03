// The rules of TaskWorkflow's commands: pure checks on TaskState, used by the update validators
// and again by the handlers; no Temporal calls.

package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

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

// checkProject refuses a claim whose access check saw the task in another project than the
// workflow's: the task moved between the check and the claim, and the caller may not see it now.
func (s TaskState) checkProject(in TaskCommand) error {
	if in.Project != "" && in.Project != s.ProjectUUID {
		return movedRefusal(vocab.EntityTask)
	}
	return nil
}

var notFoundTask = Refuse(KindNotFound, "Task not found")

func (s TaskState) exists() error {
	if !s.Created || s.Deleted {
		return notFoundTask
	}
	return nil
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
	case s.Assignee != nil && (s.status() == vocab.TaskOpen || s.status() == vocab.TaskAssigned):
		return Refuse(KindConflict, "Task is already assigned to %s; ask an admin to reassign it", s.assigneeText())
	case s.status() != vocab.TaskOpen && s.status() != vocab.TaskAssigned:
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
	if s.status() != vocab.TaskOpen || s.Assignee != nil {
		return Refuse(KindConflict, "Task is no longer open to claim: it is %s%s", s.Status, heldBy(s))
	}
	return nil
}

func heldBy(s TaskState) string {
	if s.Assignee == nil {
		return ""
	}
	return " (assigned to " + s.assigneeText() + ")"
}

func (s TaskState) checkRelease(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can release a task (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	if s.status() != vocab.TaskAssigned {
		return Refuse(KindConflict, "Can only release tasks with assigned status: this task is %s. Submit it for verification or ask an admin to close it.", s.Status)
	}
	return nil
}

func (s TaskState) checkAssign(in AssignTaskInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s := s.status(); s != vocab.TaskOpen && s != vocab.TaskAssigned {
		return Refuse(KindConflict, "Can only assign tasks with open or assigned status, current status: %s", s)
	}
	return nil
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
func move(n *TaskState, c *store.TaskChange, to vocab.TaskStatus) {
	from := n.status()
	n.Status = string(to)
	c.Patch.Status = &to
	if from == vocab.TaskToVerify && to != vocab.TaskDone {
		c.ResetCriteria = true
		for i := range n.Criteria {
			n.Criteria[i].Status, n.Criteria[i].DevStatus = "pending", "pending"
		}
	}
}

func legalMoves(s vocab.TaskStatus) string {
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
		to := vocab.TaskStatus(*in.Status)
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
	if in.Status != nil && !s.status().CanMove(vocab.TaskStatus(*in.Status)) {
		// docs/rules.md §8.3: an illegal status is refused, and nothing (not even the report) is recorded.
		return Refuse(KindConflict, "Cannot report work with status %s: the task is %s, and from %s it may go to: %s. Nothing was recorded.",
			*in.Status, s.Status, s.Status, legalMoves(s.status()))
	}
	return nil
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

func (s TaskState) checkMark(in MarkCriteriaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	return s.checkOwnership(in.Marks)
}

// ---- submit / verify / reopen / close / delete ----

func (s TaskState) checkSubmit(in SubmitInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can submit for verification (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	if s.status() != vocab.TaskInProgress {
		return Refuse(KindConflict, "Can only submit for verification from in_progress status: this task is %s%s",
			s.Status, nextStepForSubmit(s.status()))
	}
	return nil
}

func nextStepForSubmit(s vocab.TaskStatus) string {
	switch s {
	case vocab.TaskAssigned:
		return "; move it to in_progress with chorus_update_task first"
	case vocab.TaskToVerify:
		return "; it is already waiting for an admin to verify it"
	}
	return ""
}

func (s TaskState) checkVerify(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.status() != vocab.TaskToVerify {
		return Refuse(KindConflict, "Can only verify Tasks in to_verify status, current status: %s%s", s.Status,
			map[vocab.TaskStatus]string{vocab.TaskInProgress: " (the assignee must submit it first)", vocab.TaskDone: " (it is already verified)"}[s.status()])
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

func (s TaskState) checkReopen(in ReopenInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.status() != vocab.TaskToVerify {
		return Refuse(KindConflict, "Can only reopen Tasks in to_verify status, current status: %s", s.Status)
	}
	return nil
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

func (s TaskState) checkClose(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.status() == vocab.TaskClosed {
		return Refuse(KindConflict, "Task is already in closed status")
	}
	return nil
}

func (s TaskState) checkDelete(in TaskCommand) error { return s.exists() }
