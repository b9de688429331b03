package workflows

import (
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Claim leases (docs/rules.md §5.10). A project may give task claims a time to live; the claim's
// lease is part of the task's workflow state and of its row. Every command of the holder renews
// it (settleLease), and so does a heartbeat of a session checked in to the task (RenewClaim).
// When it runs out, the workflow's own durable timer releases the claim: the task goes back to
// open with an activity and a notification, and the former holder's later commands are refused
// because it no longer holds the task.

// UpdateRenewClaim renews the caller's claim on a task; chorus_session_heartbeat sends it to each
// task its session is checked in to.
const UpdateRenewClaim = "chorus_session_heartbeat"

// RenewClaim is UpdateRenewClaim's command.
var RenewClaim = Command[TaskCommand, TaskResult]{UpdateRenewClaim, vocab.EntityTask}

// claimLeaseChange names the workflow.GetVersion marker of the lease timer. Histories recorded
// before leases have no lease and so never reach it.
const claimLeaseChange = "claim-lease-timer"

// leaseRunning: the task has a claim whose lease can lapse (held, assigned or in_progress).
func (s TaskState) leaseRunning() bool {
	st := s.status()
	return s.Lease != nil && s.Assignee != nil && !s.Deleted && (st == vocab.TaskAssigned || st == vocab.TaskInProgress)
}

func (s TaskState) checkRenew(in TaskCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor) {
		return Refuse(KindForbidden, "Only the assignee can renew a claim (assignee: %s)%s", s.assigneeText(), s.lapsedNote(in.Actor))
	}
	if s.Lease == nil {
		return Refuse(KindConflict, "This claim does not lapse: there is nothing to renew")
	}
	return nil
}

// renew writes the holder's renewed lease and nothing else.
func (w *taskWorkflow) renew(ctx workflow.Context, in TaskCommand) (TaskResult, error) {
	n, wr := w.next(ctx)
	if _, err := w.commit(ctx, n, wr, store.TaskChange{}, in.Actor.UUID); err != nil {
		return TaskResult{}, err
	}
	return w.result(), nil
}

// watchLease runs beside the workflow's handlers for the life of the run: while the task has a
// lease it sleeps on a durable timer until the lease's end, waking early only when the lease goes
// away or is replaced by one that ends sooner; a renewal that pushes the end later is found when
// the timer fires, and the timer is set again for the rest. A lease still over when the timer
// fires is expired.
func (w *taskWorkflow) watchLease(ctx workflow.Context) {
	versioned := false
	for {
		if err := workflow.Await(ctx, func() bool { return w.stopping || w.state.leaseRunning() }); err != nil || w.stopping {
			return
		}
		if !versioned {
			if workflow.GetVersion(ctx, claimLeaseChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				return
			}
			versioned = true
		}
		due := w.state.Lease.ExpiresAt
		if wait := due.Sub(workflow.Now(ctx)); wait > 0 {
			woke, err := workflow.AwaitWithTimeout(ctx, wait, func() bool {
				return w.stopping || !w.state.leaseRunning() || w.state.Lease.ExpiresAt.Before(due)
			})
			if err != nil || w.stopping {
				return
			}
			if woke {
				continue
			}
		}
		if !w.state.leaseRunning() || w.state.Lease.ExpiresAt.After(workflow.Now(ctx)) {
			continue // renewed or ended meanwhile
		}
		w.expire(ctx)
	}
}

// expire releases a claim whose lease is over, under the task's lock (a command of the holder
// that got there first renewed it, and then nothing happens). The write is named after the lease
// and the row version it starts from, so a retried or replayed expiry is recognised as applied.
func (w *taskWorkflow) expire(ctx workflow.Context) {
	w.expiring = true
	defer func() { w.expiring = false }()
	if err := w.mu.Lock(ctx); err != nil {
		return
	}
	defer w.mu.Unlock()
	s := w.state
	if !s.leaseRunning() || s.Lease.ExpiresAt.After(workflow.Now(ctx)) {
		return
	}
	n := s.clone()
	wr := lapseWrite(ctx, s.Row, stamp(ctx))
	holder, lease := *s.Assignee, *s.Lease
	from := n.status()
	n.Status, n.Assignee, n.Lease = string(vocab.TaskOpen), nil, nil
	n.Lapsed = &Lapse{UUID: holder.UUID, TTLSeconds: lease.TTLSeconds, At: lease.ExpiresAt}
	c := taskAssignmentChange(n)
	if from == vocab.TaskInProgress {
		// The work restarts with whoever claims it next: the lapsed holder's marks go (docs/rules.md §5.10).
		c.ResetCriteria = true
		for i := range n.Criteria {
			n.Criteria[i].Status, n.Criteria[i].DevStatus = "pending", "pending"
		}
	}
	system := Actor{Type: "system", UUID: SystemActorUUID, Name: "Chorus"}
	name := holder.Name
	if name == "" {
		name = holder.UUID
	}
	c.Activities = []store.Activity{w.activity(n, wr, system, "claim_expired", claimExpiredValue{
		AssigneeType: holder.Type, AssigneeUUID: holder.UUID, AssigneeName: holder.Name, FromStatus: string(from),
		TTLSeconds: lease.TTLSeconds, ExpiredAt: lease.ExpiresAt})}
	c.Notifications = []store.NotifySpec{w.notify(n, wr, system, "task_claim_expired",
		fmt.Sprintf("The claim of %s on task %q lapsed after %ds without activity; the task is open again", name, n.Title,
			lease.TTLSeconds), store.Recipient{Type: holder.Type, UUID: holder.UUID}, taskCreator(n))}
	if _, err := w.commit(ctx, n, wr, c, ""); err != nil {
		workflow.GetLogger(ctx).Warn("the lapsed claim was not released", "error", err)
	}
}

// SystemActorUUID is the actor uuid of what Chorus does on its own (a lapsed claim's release):
// the nil uuid, with actor type "system".
const SystemActorUUID = "00000000-0000-0000-0000-000000000000"

// lapseWrite is the write of a lease's expiry, which no update makes: its key is the workflow id
// and the row version it starts from, so every retry and every replay of this expiry names the
// same change, and any other change at that version another.
func lapseWrite(ctx workflow.Context, m RowMark, at time.Time) store.Write {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	w := store.Write{Expect: m.Version, At: at}
	w.Update = store.UpdateKey(id, "claim-lapsed/"+strconv.FormatInt(m.Version, 10))
	w.ID = fmt.Sprintf("%s#%d@%s", id, w.Version(), w.Update[:16])
	return w
}
