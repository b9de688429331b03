package mcp

import (
	"context"
	"net/http"
	"strings"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Task reads (docs/rules.md §4.8, §6.4): app's read use cases, answered as views.

// ListTasksIn is chorus_list_tasks' input.
type ListTasksIn struct {
	ProjectUUID   UUID   `json:"projectUuid"`
	Status        string `json:"status,omitempty" chorus:"enum=open|assigned|in_progress|to_verify|done|closed"`
	Priority      string `json:"priority,omitempty" chorus:"enum=low|medium|high"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty"`
	PageIn
}

var listTasks = tool[ListTasksIn, TaskList]{
	Name: "chorus_list_tasks", Title: "List tasks", Toolset: tsReview, Perm: perm.Public, Effect: reads,
	Desc: "List a project's tasks, high priority first; status to_verify lists those waiting for review.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ListTasksIn) (TaskList, error) {
		page, size, offset := in.window(20)
		ts, total, err := d.app().ListTasks(ctx, call.Request, string(in.ProjectUUID), store.TaskFilter{Status: in.Status,
			Priority: in.Priority, ProposalUUIDs: uuidStrings(in.ProposalUUIDs)}, app.Page{Limit: size, Offset: offset})
		if err != nil {
			return TaskList{}, err
		}
		return taskList(ts, page, size, total), nil
	},
}

var getTask = tool[TaskIn, TaskView]{
	Name: "chorus_get_task", Title: "Get a task", Toolset: tsCore, Perm: perm.Public, Effect: reads,
	Desc: "Get a task: description, status, assignee, criteria with both marks, dependencies, references.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (TaskView, error) {
		return taskView(ctx, d, call.Who, string(in.TaskUUID))
	},
}

// TaskDependenciesIn is chorus_get_task_dependencies' input.
type TaskDependenciesIn struct {
	TaskUUID  UUID   `json:"taskUuid"`
	Direction string `json:"direction" chorus:"enum=dependsOn|dependedBy"`
	PageIn
}

// TaskLinkList is chorus_get_task_dependencies' result.
type TaskLinkList struct {
	Tasks []TaskLinkView `json:"tasks"`
	Meta
}

var getTaskDependencies = tool[TaskDependenciesIn, TaskLinkList]{
	Name: "chorus_get_task_dependencies", Title: "List a task's dependencies", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "List all tasks a task depends on (dependsOn) or that depend on it (dependedBy), oldest first, paged.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskDependenciesIn) (TaskLinkList, error) {
		page, size, offset := in.window(20)
		ls, total, err := d.app().TaskDependencies(ctx, call.Request, string(in.TaskUUID), in.Direction,
			app.Page{Limit: size, Offset: offset})
		if err != nil {
			return TaskLinkList{}, err
		}
		rows := links(ls)
		for i := range rows {
			rows[i].Title = clip(rows[i].Title)
		}
		wrap := func(r []TaskLinkView) any {
			return TaskLinkList{Tasks: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(rows, wrap)).(TaskLinkList), nil
	},
}

// AvailableTasksIn is chorus_get_available_tasks' input.
type AvailableTasksIn struct {
	ProjectUUID   UUID   `json:"projectUuid"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty"`
}

var getAvailableTasks = tool[AvailableTasksIn, TaskList]{
	Name: "chorus_get_available_tasks", Title: "Tasks open to claim", Toolset: tsDevelop, Perm: perm.Public, Effect: reads,
	Desc: "List up to 50 unclaimed open tasks of a project; some may be blocked.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AvailableTasksIn) (TaskList, error) {
		ts, err := d.app().AvailableTasks(ctx, call.Request, string(in.ProjectUUID), uuidStrings(in.ProposalUUIDs))
		if err != nil {
			return TaskList{}, err
		}
		return taskList(ts, 1, 50, len(ts)), nil
	},
}

// UnblockedTasksIn is chorus_get_unblocked_tasks' input.
type UnblockedTasksIn struct {
	ProjectUUID   UUID   `json:"projectUuid"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty"`
	PageIn
}

var getUnblockedTasks = tool[UnblockedTasksIn, TaskList]{
	Name: "chorus_get_unblocked_tasks", Title: "Tasks you can start now", Toolset: tsDevelop, Perm: perm.Public, Effect: reads,
	Desc: "List open or assigned tasks whose dependencies are all done or closed.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UnblockedTasksIn) (TaskList, error) {
		page, size, offset := in.window(20)
		ts, total, err := d.app().UnblockedTasks(ctx, call.Request, string(in.ProjectUUID), uuidStrings(in.ProposalUUIDs),
			app.Page{Limit: size, Offset: offset})
		if err != nil {
			return TaskList{}, err
		}
		return taskList(ts, page, size, total), nil
	},
}

// scopeHeaders reads the scoping headers of docs/rules.md §6.4: a project group
// (X-Chorus-Project-Group), which wins, or a list of projects (X-Chorus-Project). No headers (or
// blank ones) scope nothing; a list whose entries are all blank keeps no project.
func scopeHeaders(h http.Header) app.ProjectScope {
	if h == nil {
		return app.ProjectScope{}
	}
	if g := strings.TrimSpace(h.Get("X-Chorus-Project-Group")); g != "" {
		return app.ProjectScope{Group: g}
	}
	raw := strings.TrimSpace(h.Get("X-Chorus-Project"))
	if raw == "" {
		return app.ProjectScope{}
	}
	ids := []string{}
	for p := range strings.SplitSeq(raw, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			ids = append(ids, p)
		}
	}
	return app.ProjectScope{Projects: ids}
}

var getMyAssignments = tool[NoInput, MyAssignments]{
	Name: "chorus_get_my_assignments", Title: "My assignments", Toolset: tsCore, Perm: perm.Public, Effect: reads,
	Desc: "Your unfinished ideas and tasks, by project, with their progress.",
	Run: func(ctx context.Context, d *Deps, call *Call, _ NoInput) (MyAssignments, error) {
		a, err := d.app().MyAssignments(ctx, call.Request, scopeHeaders(call.Header))
		if err != nil {
			return MyAssignments{}, err
		}
		out := MyAssignments{IdeaTracker: map[string]IdeaTrackerEntry{}, TaskTracker: map[string]TaskTrackerEntry{}}
		for _, p := range a.Projects {
			if ideas := a.Ideas[p.UUID]; len(ideas) > 0 {
				e := IdeaTrackerEntry{Name: p.Name}
				for _, i := range ideas {
					e.Ideas = append(e.Ideas, TrackedIdeaView{UUID: i.UUID, Title: clip(i.Title), Status: i.DerivedStatus,
						Proposals: i.Proposals, Tasks: i.Tasks, ParentUUID: i.ParentUUID})
				}
				out.IdeaTracker[p.UUID] = e
			}
			if tasks := a.Tasks[p.UUID]; len(tasks) > 0 {
				e := TaskTrackerEntry{Name: p.Name}
				for _, t := range tasks {
					e.Tasks = append(e.Tasks, TrackedTaskView{UUID: t.UUID, Title: clip(t.Title), Status: string(t.Status),
						Priority: t.Priority, AssignedAt: t.AssignedAt, AC: ACProgress{Passed: t.Passed, Total: t.Total},
						ProposalUUID: t.ProposalUUID})
				}
				out.TaskTracker[p.UUID] = e
			}
		}
		return out, nil
	},
}
