package app

import (
	"context"
	"errors"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Task use cases (docs/rules.md §4.8, §4.9, §2.4, §5.2, §5.3): each checks the caller's access
// to the task's project, then sends one command to the task's workflow, which decides. Front
// ends read the task back for their answer.

// TaskOutcome is what a task command answers: the task, its status after the command, and
// the warnings the workflow gave.
type TaskOutcome struct {
	UUID     string
	Status   string
	Warnings []string
	// Gate, when set, is the gate the command waits at for a person (docs/rules.md §6.7).
	Gate *Gate
}

func outcome(r workflows.TaskResult, err error) (TaskOutcome, error) {
	return TaskOutcome{UUID: r.UUID, Status: r.Status, Warnings: r.Warnings}, err
}

// ClaimTTL is the time to live the task's project gives claims (docs/rules.md §5.10), 0 for none.
func ClaimTTL(pv *store.ProjectView) int64 {
	if pv == nil || pv.ClaimTTLSeconds == nil {
		return 0
	}
	return *pv.ClaimTTLSeconds
}

// send sends one command to task taskUUID's workflow as the caller.
func send[In any](ctx context.Context, a *App, r Request, taskUUID string, cmd workflows.Command[In, workflows.TaskResult], in In) (workflows.TaskResult, error) {
	return workflows.Send(ctx, a.Flows, cmd, taskUUID, r.Flow(), r.Who.Caller.AgentUUID, in)
}

// taskCommand gates a task (editor) and sends one command to its workflow.
func taskCommand[In any](ctx context.Context, a *App, r Request, taskUUID string, cmd workflows.Command[In, workflows.TaskResult], in In) (TaskOutcome, error) {
	if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessEditor); err != nil {
		return TaskOutcome{}, err
	}
	return outcome(send(ctx, a, r, taskUUID, cmd, in))
}

// ReleaseTask gives up a task the caller holds that has not started.
func (a *App) ReleaseTask(ctx context.Context, r Request, taskUUID string) (TaskOutcome, error) {
	return taskCommand(ctx, a, r, taskUUID, workflows.ReleaseTask, workflows.TaskCommand{Actor: r.Who.Actor()})
}

// SubmitTask submits an in_progress task for review (to_verify), as its assignee.
func (a *App) SubmitTask(ctx context.Context, r Request, taskUUID string, summary *string) (TaskOutcome, error) {
	return taskCommand(ctx, a, r, taskUUID, workflows.SubmitForVerify, workflows.SubmitInput{Actor: r.Who.Actor(), Summary: summary})
}

// VerifyTask accepts a task in to_verify as done. In a project whose gate policy holds
// verification, an agent's call waits for a person instead (the outcome's Gate), and separation
// of duties may refuse it (docs/rules.md §6.7).
func (a *App) VerifyTask(ctx context.Context, r Request, taskUUID string) (TaskOutcome, error) {
	t, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessEditor)
	if err != nil {
		return TaskOutcome{}, err
	}
	in := workflows.TaskCommand{Actor: r.Who.Actor()}
	gate, err := a.holdForPerson(ctx, r, gated{Entity: vocab.EntityTask, UUID: t.UUID, ProjectUUID: t.ProjectUUID,
		Command: vocab.GateVerifyTask, Input: in, Creator: t.CreatedByUUID,
		Workers: func(ctx context.Context) ([]string, error) { return a.Store.TaskWorkers(ctx, t.UUID) }})
	if err != nil {
		return TaskOutcome{}, err
	}
	if gate != nil {
		return TaskOutcome{UUID: t.UUID, Status: string(t.Status), Gate: gate}, nil
	}
	return outcome(send(ctx, a, r, taskUUID, workflows.VerifyTask, in))
}

// ReopenTask sends a task in to_verify back to in_progress; force ignores open dependencies.
func (a *App) ReopenTask(ctx context.Context, r Request, taskUUID string, force bool) (TaskOutcome, error) {
	_, pv, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessEditor)
	if err != nil {
		return TaskOutcome{}, err
	}
	return outcome(send(ctx, a, r, taskUUID, workflows.ReopenTask,
		workflows.ReopenInput{Actor: r.Who.Actor(), Force: force, ClaimTTL: ClaimTTL(pv)}))
}

// CloseTask closes a task for good, from any status.
func (a *App) CloseTask(ctx context.Context, r Request, taskUUID string) (TaskOutcome, error) {
	return taskCommand(ctx, a, r, taskUUID, workflows.CloseTask, workflows.TaskCommand{Actor: r.Who.Actor()})
}

// DeleteTask deletes a task with its criteria and dependency edges.
func (a *App) DeleteTask(ctx context.Context, r Request, taskUUID string) error {
	_, err := taskCommand(ctx, a, r, taskUUID, workflows.DeleteTask, workflows.TaskCommand{Actor: r.Who.Actor()})
	return err
}

// CriteriaMarks are the marks of a self-check or a verification: one per criterion.
type CriteriaMarks struct {
	TaskUUID string
	Marks    []workflows.CriterionMark
}

// TaskCriteria is a task's criteria after marks, with their summary.
type TaskCriteria struct {
	Items   []store.AcceptanceCriterion
	Status  string
	Summary store.AcceptanceSummary
}

// SelfCheckCriteria records the assignee's marks (developer fields) and returns the criteria.
func (a *App) SelfCheckCriteria(ctx context.Context, r Request, in CriteriaMarks) (TaskCriteria, error) {
	return a.markCriteria(ctx, r, in, workflows.SelfCheck)
}

// MarkCriteria records a reviewer's marks (admin fields) and returns the criteria.
func (a *App) MarkCriteria(ctx context.Context, r Request, in CriteriaMarks) (TaskCriteria, error) {
	return a.markCriteria(ctx, r, in, workflows.MarkCriteria)
}

func (a *App) markCriteria(ctx context.Context, r Request, in CriteriaMarks, cmd workflows.Command[workflows.MarkCriteriaInput, workflows.TaskResult]) (TaskCriteria, error) {
	if err := checkMarks(in.Marks); err != nil {
		return TaskCriteria{}, err
	}
	if _, err := taskCommand(ctx, a, r, in.TaskUUID, cmd, workflows.MarkCriteriaInput{Actor: r.Who.Actor(), Marks: in.Marks}); err != nil {
		return TaskCriteria{}, err
	}
	cs, err := a.Store.Criteria(ctx, in.TaskUUID)
	if err != nil {
		return TaskCriteria{}, err
	}
	summary, status := store.Summarize(cs)
	return TaskCriteria{Items: cs, Status: status, Summary: summary}, nil
}

// ReportWorkInput is a progress report of the assignee.
type ReportWorkInput struct {
	TaskUUID string
	Report   string
	// Status optionally moves the task (in_progress or to_verify).
	Status *string
	// SessionUUID optionally names the caller's session the work was done in.
	SessionUUID *string
}

// ReportWork records progress as a comment, optionally moving the task; an illegal move
// records nothing. A session named is touched (its implicit heartbeat).
func (a *App) ReportWork(ctx context.Context, r Request, in ReportWorkInput) error {
	if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, in.TaskUUID, store.AccessEditor); err != nil {
		return err
	}
	session, err := a.sessionOf(ctx, r, in.SessionUUID)
	if err != nil {
		return err
	}
	cmd := workflows.ReportWorkInput{Actor: r.Who.Actor(), Report: in.Report, Status: in.Status}
	if session != nil {
		cmd.SessionUUID, cmd.SessionName = &session.UUID, &session.Name
	}
	if _, err := send(ctx, a, r, in.TaskUUID, workflows.ReportWork, cmd); err != nil {
		return err
	}
	return a.touchSession(ctx, session)
}

// sessionOf resolves the optional session of a task change: it must be the caller's ("Session
// not found" otherwise) and active; its name is recorded with the change.
func (a *App) sessionOf(ctx context.Context, r Request, sessionUUID *string) (*store.AgentSession, error) {
	if sessionUUID == nil {
		return nil, nil
	}
	s, err := a.Store.Session(ctx, r.Who.Caller, *sessionUUID)
	if errors.Is(err, store.ErrSessionNotActive) {
		return s, Refuse(vocab.RefusedPrecondition, "%s", err.Error())
	}
	return s, err
}

// touchSession is the implicit heartbeat of a change made in a session (docs/rules.md §2.5).
func (a *App) touchSession(ctx context.Context, s *store.AgentSession) error {
	if s == nil {
		return nil
	}
	_, err := a.Store.TouchSession(ctx, s.UUID)
	return err
}
