package app

import (
	"context"
	"errors"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Creating and editing tasks (docs/rules.md §4.9, §5.2, §5.3).

// NewTask is one task of CreateTasks: its fields, criteria, an optional label (DraftUUID) other
// tasks of the call may depend on, and its dependencies on labels and on existing tasks.
type NewTask = workflows.NewTaskSpec

// CreateTasksInput is one batch of new tasks in a project, optionally in a proposal.
type CreateTasksInput struct {
	ProjectUUID  string
	ProposalUUID *string
	Tasks        []NewTask
	// References are each task's inline references, by the task's index in Tasks (a shorter
	// list means none for the rest).
	References [][]ReferenceInput
}

// CreatedTask is one task CreateTasks made, in input order.
type CreatedTask struct {
	UUID  string
	Title string
}

// CreateTasksResult is what CreateTasks made, with the workflow's warnings.
type CreateTasksResult struct {
	Tasks    []CreatedTask
	Warnings []string
	// ReferenceErrors are the inline references not added, each naming its task's title.
	ReferenceErrors []ReferenceError
}

// CreateTasks creates the tasks of one call, all or none: the caller must edit the project, see
// the proposal (in the project) and see every existing task named as a dependency; the tasks
// must pass workflows.ValidateTaskBatch. One batch workflow creates them; then each task's
// inline references are added (AddInlineReferences: fail-soft per reference, once per requestId).
func (a *App) CreateTasks(ctx context.Context, r Request, in CreateTasksInput) (CreateTasksResult, error) {
	project, err := a.Store.RequireProject(ctx, r.Who.Caller, in.ProjectUUID, store.AccessEditor)
	if err != nil {
		return CreateTasksResult{}, err
	}
	if in.ProposalUUID != nil {
		p, _, err := a.Store.ProposalAccess(ctx, r.Who.Caller, *in.ProposalUUID, store.AccessViewer)
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrForbidden) {
			return CreateTasksResult{}, err // an outage is not a missing proposal
		}
		if err != nil || p.ProjectUUID != in.ProjectUUID {
			return CreateTasksResult{}, store.NotFound("Proposal")
		}
	}
	for _, t := range in.Tasks {
		for _, u := range t.DependsOnTaskUUIDs {
			if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, u, store.AccessViewer); err != nil {
				return CreateTasksResult{}, err
			}
		}
	}
	batch := workflows.CreateTasksInput{Actor: r.Who.Actor(), BatchUUID: r.NewID("create-tasks"), ProjectUUID: in.ProjectUUID,
		ProjectName: project.Name, ProposalUUID: in.ProposalUUID, Tasks: in.Tasks}
	if err := workflows.ValidateTaskBatch(batch.Tasks); err != nil {
		return CreateTasksResult{}, err
	}
	res, err := a.Flows.CreateTasks(ctx, batch)
	if err != nil {
		return CreateTasksResult{}, err
	}
	out := CreateTasksResult{Tasks: make([]CreatedTask, 0, len(res.Tasks)), Warnings: res.Warnings}
	for i, t := range res.Tasks { // tasks come back in input order
		out.Tasks = append(out.Tasks, CreatedTask{UUID: t.UUID, Title: t.Title})
		if i >= len(in.References) || len(in.References[i]) == 0 {
			continue
		}
		title := in.Tasks[i].Title
		errs, err := a.AddInlineReferences(ctx, r, store.Target{Type: "task", UUID: t.UUID, ProjectUUID: in.ProjectUUID},
			in.References[i], &title)
		if err != nil {
			return CreateTasksResult{}, err
		}
		out.ReferenceErrors = append(out.ReferenceErrors, errs...)
	}
	return out, nil
}

// UpdateTaskInput is an edit of a task: fields left nil keep their value.
type UpdateTaskInput struct {
	TaskUUID    string
	Title       *string
	Description *string
	Priority    *string
	StoryPoints *float64
	// SetCriteria replaces all criteria (and their marks) with Criteria.
	SetCriteria     bool
	Criteria        []store.CriterionDraft
	AddDependsOn    []string
	RemoveDependsOn []string
	// Status moves the task (assignee only): in_progress or to_verify.
	Status *string
	// SessionUUID optionally names the caller's session the edit was made in.
	SessionUUID *string
}

// asksNothing reports whether the edit changes nothing.
func (in UpdateTaskInput) asksNothing() bool {
	return in.Title == nil && in.Description == nil && in.Priority == nil && in.StoryPoints == nil && !in.SetCriteria &&
		in.AddDependsOn == nil && in.RemoveDependsOn == nil && in.Status == nil
}

// UpdateTask edits a task's fields, criteria or dependencies, or (as its assignee) moves it. The
// caller must edit the task and see every task named in a dependency edit. An edit that asks
// nothing changes nothing and answers the task's uuid alone (no status).
func (a *App) UpdateTask(ctx context.Context, r Request, in UpdateTaskInput) (TaskOutcome, error) {
	if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, in.TaskUUID, store.AccessEditor); err != nil {
		return TaskOutcome{}, err
	}
	for _, u := range append(append([]string{}, in.AddDependsOn...), in.RemoveDependsOn...) {
		if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, u, store.AccessViewer); err != nil {
			return TaskOutcome{}, err
		}
	}
	session, err := a.sessionOf(ctx, r, in.SessionUUID)
	if err != nil {
		return TaskOutcome{}, err
	}
	if err := workflows.CheckTitle("", "title", in.Title); err != nil {
		return TaskOutcome{}, err
	}
	if in.asksNothing() {
		return TaskOutcome{UUID: in.TaskUUID}, nil
	}
	cmd := workflows.UpdateTaskInput{Actor: r.Who.Actor(), Title: in.Title, Description: in.Description,
		DescriptionSet: in.Description != nil, Priority: in.Priority, StoryPoints: in.StoryPoints,
		SetCriteria: in.SetCriteria, Criteria: in.Criteria,
		AddDependsOn: in.AddDependsOn, RemoveDepends: in.RemoveDependsOn, Status: in.Status}
	if session != nil {
		cmd.SessionUUID, cmd.SessionName = &session.UUID, &session.Name
	}
	res, err := send(ctx, a, r, in.TaskUUID, workflows.UpdateTask, cmd)
	if err != nil {
		return TaskOutcome{}, err
	}
	if err := a.touchSession(ctx, session); err != nil {
		return TaskOutcome{}, err
	}
	return outcome(res, nil)
}
