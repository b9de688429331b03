package app

import (
	"context"
	"strings"

	"github.com/chorus-dev/chorus/store"
)

// Task reads (docs/rules.md §4.8, §6.4): each checks that the caller may see the project or the
// task, then reads the database; no read asks a workflow.

// Page is a window of a paged list: at most Limit rows after Offset.
type Page struct {
	Limit, Offset int
}

// ListTasks lists a project's tasks matching f, high priority first, with the total.
func (a *App) ListTasks(ctx context.Context, r Request, projectUUID string, f store.TaskFilter, p Page) ([]store.Task, int, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	return a.Store.ListTasks(ctx, projectUUID, f, p.Limit, p.Offset)
}

// AvailableTasks lists up to 50 unclaimed open tasks of a project, optionally of some proposals.
func (a *App) AvailableTasks(ctx context.Context, r Request, projectUUID string, proposalUUIDs []string) ([]store.Task, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, err
	}
	return a.Store.AvailableTasks(ctx, projectUUID, proposalUUIDs)
}

// UnblockedTasks lists a project's open or assigned tasks whose dependencies are all resolved.
func (a *App) UnblockedTasks(ctx context.Context, r Request, projectUUID string, proposalUUIDs []string, p Page) ([]store.Task, int, error) {
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	return a.Store.UnblockedTasks(ctx, projectUUID, proposalUUIDs, p.Limit, p.Offset)
}

// TaskDependencies lists the tasks a task depends on (direction "dependsOn") or that depend on
// it ("dependedBy"), oldest first, with the total.
func (a *App) TaskDependencies(ctx context.Context, r Request, taskUUID, direction string, p Page) ([]store.TaskLink, int, error) {
	if _, _, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	return a.Store.TaskLinks(ctx, taskUUID, direction, p.Limit, p.Offset)
}

// ProjectScope is what a caller asked to scope a read to (docs/rules.md §6.4, §8.8): a project
// group, or a list of projects. The zero value scopes nothing; a non-nil empty Projects keeps
// no project.
type ProjectScope struct {
	// Group is a project group's uuid; it wins over Projects.
	Group    string
	Projects []string
}

// projects resolves the scope: nil means no scoping, otherwise the projects to keep. A group
// that is unknown or has no projects keeps none.
func (a *App) projects(ctx context.Context, r Request, s ProjectScope) ([]string, error) {
	if s.Group == "" {
		return s.Projects, nil
	}
	ids, err := a.Store.GroupProjectUUIDs(ctx, r.Who.Caller.CompanyUUID, strings.ToLower(s.Group))
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}

// MyAssignments reads the caller's unfinished ideas and tasks, by project, within the scope.
func (a *App) MyAssignments(ctx context.Context, r Request, scope ProjectScope) (*store.Assignments, error) {
	only, err := a.projects(ctx, r, scope)
	if err != nil {
		return nil, err
	}
	return a.Store.MyAssignments(ctx, r.Who.Caller, only)
}

// TaskDetail is a task the caller can see, with its project and its relations (criteria,
// dependencies, references, comment count).
type TaskDetail struct {
	Task      *store.Task
	Project   *store.ProjectView
	Relations *store.TaskRelations
}

// GetTask reads a task the caller can see, with its relations. beside, when not nil, runs
// while the relations are read, so a front end can read the names it will show at the same
// time (docs/bench-results.md, "Reads").
func (a *App) GetTask(ctx context.Context, r Request, taskUUID string, beside func(*store.Task)) (TaskDetail, error) {
	t, pv, err := a.Store.TaskAccess(ctx, r.Who.Caller, taskUUID, store.AccessViewer)
	if err != nil {
		return TaskDetail{}, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if beside != nil {
			beside(t)
		}
	}()
	rel, err := a.Store.Relations(ctx, t.UUID)
	<-done
	if err != nil {
		return TaskDetail{}, err
	}
	return TaskDetail{Task: t, Project: pv, Relations: rel}, nil
}
