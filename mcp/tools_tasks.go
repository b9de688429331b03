package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Task tools (docs/rules.md §4.8, §4.9, §2.4, §5.2, §5.3). Reads come from the store;
// every change is an update on the task's workflow (or, for chorus_create_tasks, one batch
// workflow that creates them all).

// TaskIn names a task.
type TaskIn struct {
	TaskUUID UUID `json:"taskUuid"`
}

// CriterionView is one acceptance criterion with both marks.
type CriterionView struct {
	UUID            string     `json:"uuid"`
	Description     string     `json:"description"`
	Required        bool       `json:"required"`
	DevStatus       string     `json:"devStatus"`
	DevEvidence     *string    `json:"devEvidence"`
	DevMarkedByType *string    `json:"devMarkedByType"`
	DevMarkedBy     *string    `json:"devMarkedBy"`
	DevMarkedAt     *time.Time `json:"devMarkedAt"`
	Status          string     `json:"status"`
	Evidence        *string    `json:"evidence"`
	MarkedByType    *string    `json:"markedByType"`
	MarkedBy        *string    `json:"markedBy"`
	MarkedAt        *time.Time `json:"markedAt"`
	SortOrder       int        `json:"sortOrder"`
}

func criterionViews(cs []store.AcceptanceCriterion) []CriterionView {
	out := make([]CriterionView, len(cs))
	for i, c := range cs {
		out[i] = CriterionView{UUID: c.UUID, Description: c.Description, Required: c.Required, DevStatus: string(c.DevStatus),
			DevEvidence: c.DevEvidence, DevMarkedByType: c.DevMarkedByType, DevMarkedBy: c.DevMarkedBy, DevMarkedAt: c.DevMarkedAt,
			Status: string(c.Status), Evidence: c.Evidence, MarkedByType: c.MarkedByType, MarkedBy: c.MarkedBy, MarkedAt: c.MarkedAt,
			SortOrder: c.SortOrder}
	}
	return out
}

// TaskLinkView is a task on the other end of a dependency.
type TaskLinkView struct {
	UUID   string `json:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// TaskView is the Task JSON of chorus_get_task and of the task tools that return the task.
type TaskView struct {
	UUID                    string                  `json:"uuid"`
	Title                   string                  `json:"title"`
	Description             *string                 `json:"description"`
	Status                  string                  `json:"status"`
	Priority                string                  `json:"priority"`
	StoryPoints             *float64                `json:"storyPoints"`
	AcceptanceCriteria      *string                 `json:"acceptanceCriteria"`
	AcceptanceCriteriaItems []CriterionView         `json:"acceptanceCriteriaItems"`
	AcceptanceStatus        string                  `json:"acceptanceStatus"`
	AcceptanceSummary       store.AcceptanceSummary `json:"acceptanceSummary"`
	Assignee                *AssigneeView           `json:"assignee"`
	ProposalUUID            *string                 `json:"proposalUuid"`
	Project                 ProjectRef              `json:"project"`
	CreatedBy               *store.ActorRef         `json:"createdBy"`
	DependsOn               []TaskLinkView          `json:"dependsOn" jsonschema:"the tasks it depends on, oldest first, as many as fit the answer's 64 KiB budget (chorus_get_task_dependencies pages them all)"`
	DependsOnCount          int                     `json:"dependsOnCount" jsonschema:"how many tasks it depends on"`
	DependedBy              []TaskLinkView          `json:"dependedBy" jsonschema:"the tasks that depend on it, oldest first, as many as fit the answer's 64 KiB budget (chorus_get_task_dependencies pages them all)"`
	DependedByCount         int                     `json:"dependedByCount" jsonschema:"how many tasks depend on it"`
	CommentCount            int                     `json:"commentCount"`
	CreatedAt               time.Time               `json:"createdAt"`
	UpdatedAt               time.Time               `json:"updatedAt"`
	References              []ReferenceView         `json:"references" jsonschema:"its references, oldest first, as many as fit the answer's 64 KiB budget (chorus_get_references pages them all)"`
	ReferenceCount          int                     `json:"referenceCount" jsonschema:"how many references it has"`
	ClaimTTLSeconds         *int64                  `json:"claimTtlSeconds" jsonschema:"the claim lapses after this many seconds without a command of its holder or a heartbeat of a session checked in to the task; null when it does not lapse"`
	ClaimExpiresAt          *time.Time              `json:"claimExpiresAt" jsonschema:"when the claim lapses unless renewed; null when it does not lapse"`
	Warnings                []string                `json:"warnings,omitempty"`
	Hints                   []string                `json:"_hints,omitempty"`
}

func links(ls []store.TaskLink) []TaskLinkView {
	out := make([]TaskLinkView, len(ls))
	for i, l := range ls {
		out[i] = TaskLinkView{UUID: l.UUID, Title: l.Title, Status: l.Status}
	}
	return out
}

// fit cuts the task's lists to the answer's byte budget (docs/rules.md §3.6): its references
// give way first, then the tasks depending on it, then those it depends on.
func (v *TaskView) fit() {
	deps, dependents, refs := v.DependsOn, v.DependedBy, v.References
	fitLists(v,
		budgetList{len(deps), func(n int) { v.DependsOn = deps[:n] }},
		budgetList{len(dependents), func(n int) { v.DependedBy = dependents[:n] }},
		budgetList{len(refs), func(n int) { v.References = refs[:n] }})
}

// taskView reads the full Task JSON of a task the caller can see.
func taskView(ctx context.Context, d *Deps, who Principal, taskUUID string) (TaskView, error) {
	t, pv, err := d.Store.TaskAccess(ctx, who.Caller, taskUUID, store.AccessViewer)
	if err != nil {
		return TaskView{}, err
	}
	// The names the view shows are read while the relations are (docs/bench-results.md, "Reads").
	n := d.Store.NewNamer()
	refs := []store.ActorRef{{Type: cmp.Or(t.CreatedByType, "agent"), UUID: t.CreatedByUUID}}
	if t.AssigneeType != nil && t.AssigneeUUID != nil {
		refs = append(refs, store.ActorRef{Type: *t.AssigneeType, UUID: *t.AssigneeUUID})
	}
	if t.AssignedByUUID != nil {
		refs = append(refs, store.ActorRef{Type: "agent", UUID: *t.AssignedByUUID})
	}
	named := make(chan struct{})
	go func() { defer close(named); n.Prefetch(ctx, refs...) }()
	rel, err := d.Store.Relations(ctx, t.UUID)
	<-named
	if err != nil {
		return TaskView{}, err
	}
	cs, dependsOn, dependedBy, comments := rel.Criteria, rel.DependsOn, rel.DependedBy, rel.CommentCount
	n.Prefetch(ctx, referenceAuthors(rel.References)...)
	summary, status := store.Summarize(cs)
	return TaskView{UUID: t.UUID, Title: t.Title, Description: t.Description, Status: string(t.Status), Priority: t.Priority,
		StoryPoints: t.StoryPoints, AcceptanceCriteria: t.AcceptanceCriteria, AcceptanceCriteriaItems: criterionViews(cs),
		AcceptanceStatus: status, AcceptanceSummary: summary,
		Assignee:     assigneeView(ctx, n, t.AssigneeType, t.AssigneeUUID, t.AssignedAt, t.AssignedByUUID),
		ProposalUUID: t.ProposalUUID, Project: ProjectRef{UUID: pv.UUID, Name: pv.Name},
		CreatedBy: n.Ref(ctx, t.CreatedByType, &t.CreatedByUUID), DependsOn: links(dependsOn), DependedBy: links(dependedBy),
		DependsOnCount: rel.DependsOnCount, DependedByCount: rel.DependedByCount, ReferenceCount: rel.ReferenceCount,
		CommentCount: comments, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, References: referenceViews(ctx, n, rel.References),
		ClaimTTLSeconds: t.ClaimTTLSeconds, ClaimExpiresAt: t.ClaimExpiresAt}, nil
}

// taskHints are the _hints of claim and assign (docs/rules.md §4.9): what blocks the task and who
// waits for it. mine words them for the agent that will do the work.
func taskHints(v TaskView, mine bool) []string {
	var hints []string
	var open []string
	for _, dep := range v.DependsOn {
		if !workflows.TaskStatus(dep.Status).Resolved() {
			open = append(open, fmt.Sprintf("%q (%s)", dep.Title, dep.Status))
		}
	}
	if len(open) > 0 {
		open = named(open, v.DependsOnCount-len(v.DependsOn))
		tail := "before work can proceed."
		if mine {
			tail = "before you can proceed."
		}
		hints = append(hints, "⚠ BLOCKED: This task depends on unfinished tasks: "+strings.Join(open, ", ")+
			". They must be verified to done by an admin or human "+tail)
	}
	var waiting []string
	for _, dep := range v.DependedBy {
		if !workflows.TaskStatus(dep.Status).Resolved() {
			waiting = append(waiting, fmt.Sprintf("%q", dep.Title))
		}
	}
	if len(waiting) > 0 {
		waiting = named(waiting, v.DependedByCount-len(v.DependedBy))
		lead := "After completion, an admin or human must verify this task to done to unblock them."
		if mine {
			lead = "After you finish, an admin or human must verify this task to done to unblock them."
		}
		hints = append(hints, "IMPORTANT: Downstream tasks are waiting on this one: "+strings.Join(waiting, ", ")+". "+lead)
	}
	if v.ClaimTTLSeconds != nil && v.ClaimExpiresAt != nil && v.Status != "open" {
		who := "the assignee's"
		if mine {
			who = "your"
		}
		hints = append(hints, fmt.Sprintf("⏱ LEASE: this claim lapses at %s, and the task is released, unless %s next "+
			"task command or a heartbeat of a session checked in to the task comes first (each renews it for %ds).",
			v.ClaimExpiresAt.Format(time.RFC3339), who, *v.ClaimTTLSeconds))
	}
	return hints
}

// hintNames is how many tasks a hint names; the rest it counts.
const hintNames = 10

// named keeps the first hintNames of names and says how many more there are, adding unread, the
// tasks the view did not load (whose statuses are unknown here).
func named(names []string, unread int) []string {
	more := max(len(names)-hintNames, 0) + max(unread, 0)
	names = names[:min(len(names), hintNames)]
	if more > 0 {
		names = append(names, fmt.Sprintf("and %d more (chorus_get_task_dependencies lists them)", more))
	}
	return names
}

// claimTTL is the time to live the task's project gives claims (docs/rules.md §5.10), 0 for none.
func claimTTL(pv *store.ProjectView) int64 {
	if pv == nil || pv.ClaimTTLSeconds == nil {
		return 0
	}
	return *pv.ClaimTTLSeconds
}

// taskCommand gates a task (editor), sends one update and returns what view makes of it.
func taskCommand[In any](ctx context.Context, d *Deps, call *Call, taskUUID string, cmd workflows.Command[In, workflows.TaskResult], in In) (workflows.TaskResult, error) {
	if _, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, taskUUID, store.AccessEditor); err != nil {
		return workflows.TaskResult{}, err
	}
	return workflows.Send(ctx, d.Flows, cmd, taskUUID, flowCall(call), call.Who.Caller.AgentUUID, in)
}

func statusOut(r workflows.TaskResult, err error) (StatusOut, error) {
	return StatusOut{UUID: r.UUID, Status: r.Status}, err
}

// ---- reads ----

// ListTasksIn is chorus_list_tasks' input.
type ListTasksIn struct {
	ProjectUUID   UUID   `json:"projectUuid"`
	Status        string `json:"status,omitempty" chorus:"enum=open|assigned|in_progress|to_verify|done|closed"`
	Priority      string `json:"priority,omitempty" chorus:"enum=low|medium|high"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty"`
	PageIn
}

// TaskRow is one row of task lists.
type TaskRow struct {
	UUID         string    `json:"uuid"`
	Title        string    `json:"title"`
	Status       string    `json:"status"`
	Priority     string    `json:"priority"`
	ProposalUUID *string   `json:"proposalUuid"`
	AssigneeUUID *string   `json:"assigneeUuid"`
	StoryPoints  *float64  `json:"storyPoints"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// TaskList is the result of task list tools.
type TaskList struct {
	Tasks []TaskRow `json:"tasks"`
	Meta
}

func taskList(ts []store.Task, page, size, total int) TaskList {
	rows := make([]TaskRow, len(ts))
	for i, t := range ts {
		rows[i] = TaskRow{UUID: t.UUID, Title: clip(t.Title), Status: string(t.Status), Priority: t.Priority, ProposalUUID: t.ProposalUUID,
			AssigneeUUID: t.AssigneeUUID, StoryPoints: t.StoryPoints, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	}
	wrap := func(r []TaskRow) any {
		return TaskList{Tasks: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
	}
	return wrap(fit(rows, wrap)).(TaskList)
}

var listTasks = tool[ListTasksIn, TaskList]{
	Name: "chorus_list_tasks", Title: "List tasks", Toolset: tsReview, Perm: perm.Public, Effect: reads,
	Desc: "List a project's tasks, high priority first; status to_verify lists those waiting for review.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ListTasksIn) (TaskList, error) {
		if _, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessViewer); err != nil {
			return TaskList{}, err
		}
		page, size, offset := in.window(20)
		ts, total, err := d.Store.ListTasks(ctx, string(in.ProjectUUID), store.TaskFilter{Status: in.Status, Priority: in.Priority,
			ProposalUUIDs: uuidStrings(in.ProposalUUIDs)}, size, offset)
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
		if _, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessViewer); err != nil {
			return TaskLinkList{}, err
		}
		page, size, offset := in.window(20)
		ls, total, err := d.Store.TaskLinks(ctx, string(in.TaskUUID), in.Direction, size, offset)
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
		if _, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessViewer); err != nil {
			return TaskList{}, err
		}
		ts, err := d.Store.AvailableTasks(ctx, string(in.ProjectUUID), uuidStrings(in.ProposalUUIDs))
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
		if _, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessViewer); err != nil {
			return TaskList{}, err
		}
		page, size, offset := in.window(20)
		ts, total, err := d.Store.UnblockedTasks(ctx, string(in.ProjectUUID), uuidStrings(in.ProposalUUIDs), size, offset)
		if err != nil {
			return TaskList{}, err
		}
		return taskList(ts, page, size, total), nil
	},
}

// TrackedIdeaView is one idea of the ideaTracker.
type TrackedIdeaView struct {
	UUID       string  `json:"uuid"`
	Title      string  `json:"title"`
	Status     string  `json:"status" jsonschema:"derived status: todo, in_progress, human_conduct_required or done"`
	Proposals  int     `json:"proposals"`
	Tasks      int     `json:"tasks"`
	ParentUUID *string `json:"parentUuid"`
}

// ACProgress counts verified criteria.
type ACProgress struct {
	Passed int `json:"passed"`
	Total  int `json:"total"`
}

// TrackedTaskView is one task of the taskTracker.
type TrackedTaskView struct {
	UUID         string     `json:"uuid"`
	Title        string     `json:"title"`
	Status       string     `json:"status"`
	Priority     string     `json:"priority"`
	AssignedAt   *time.Time `json:"assignedAt"`
	AC           ACProgress `json:"ac"`
	ProposalUUID *string    `json:"proposalUuid"`
}

// IdeaTrackerEntry is one project of the ideaTracker.
type IdeaTrackerEntry struct {
	Name  string            `json:"name"`
	Ideas []TrackedIdeaView `json:"ideas"`
}

// TaskTrackerEntry is one project of the taskTracker.
type TaskTrackerEntry struct {
	Name  string            `json:"name"`
	Tasks []TrackedTaskView `json:"tasks"`
}

// MyAssignments is chorus_get_my_assignments' result.
type MyAssignments struct {
	IdeaTracker map[string]IdeaTrackerEntry `json:"ideaTracker"`
	TaskTracker map[string]TaskTrackerEntry `json:"taskTracker"`
}

// scopeHeaders reads the scoping headers of docs/rules.md §6.4: nil means no scoping; a non-nil slice is the
// projects to keep (empty: keep none). A group wins over a project list, and a group that is
// unknown or has no projects scopes to nothing (docs/rules.md §8.8).
func scopeHeaders(ctx context.Context, d *Deps, c store.Caller, h http.Header) ([]string, error) {
	if h == nil {
		return nil, nil
	}
	if g := strings.TrimSpace(h.Get("X-Chorus-Project-Group")); g != "" {
		ids, err := d.Store.GroupProjectUUIDs(ctx, c.CompanyUUID, strings.ToLower(g))
		if ids == nil {
			ids = []string{}
		}
		return ids, err
	}
	raw := strings.TrimSpace(h.Get("X-Chorus-Project"))
	if raw == "" {
		return nil, nil
	}
	ids := []string{}
	for p := range strings.SplitSeq(raw, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			ids = append(ids, p)
		}
	}
	return ids, nil
}

var getMyAssignments = tool[NoInput, MyAssignments]{
	Name: "chorus_get_my_assignments", Title: "My assignments", Toolset: tsCore, Perm: perm.Public, Effect: reads,
	Desc: "Your unfinished ideas and tasks, by project, with their progress.",
	Run: func(ctx context.Context, d *Deps, call *Call, _ NoInput) (MyAssignments, error) {
		only, err := scopeHeaders(ctx, d, call.Who.Caller, call.Header)
		if err != nil {
			return MyAssignments{}, err
		}
		a, err := d.Store.MyAssignments(ctx, call.Who.Caller, only)
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

// ---- create / update ----

// NewTaskIn is one task of chorus_create_tasks.
type NewTaskIn struct {
	Title                   string        `json:"title" chorus:"minLength=1"`
	Description             *string       `json:"description,omitempty"`
	Priority                *string       `json:"priority,omitempty" jsonschema:"default medium" chorus:"enum=low|medium|high"`
	StoryPoints             *float64      `json:"storyPoints,omitempty" chorus:"min=0"`
	AcceptanceCriteriaItems []CriterionIn `json:"acceptanceCriteriaItems"`
	DraftUUID               *string       `json:"draftUuid,omitempty" jsonschema:"your label for this task, for dependsOnDraftUuids in this call"`
	DependsOnDraftUUIDs     []string      `json:"dependsOnDraftUuids,omitempty"`
	DependsOnTaskUUIDs      []UUID        `json:"dependsOnTaskUuids,omitempty"`
	References              []ReferenceIn `json:"references,omitempty" jsonschema:"links to attach; one that is invalid is reported in referenceErrors" chorus:"maxItems=50"`
}

// CreateTasksIn is chorus_create_tasks' input.
type CreateTasksIn struct {
	ProjectUUID  UUID        `json:"projectUuid"`
	ProposalUUID *UUID       `json:"proposalUuid,omitempty"`
	Tasks        []NewTaskIn `json:"tasks" chorus:"minItems=1;maxItems=100"`
}

// CreatedTasks is chorus_create_tasks' result.
type CreatedTasks struct {
	Tasks    []NamedRef `json:"tasks"`
	Warnings []string   `json:"warnings,omitempty"`
	// ReferenceErrors lists the inline references that were not added (only when there are any).
	ReferenceErrors []ReferenceError `json:"referenceErrors,omitempty"`
}

var createTasks = tool[CreateTasksIn, CreatedTasks]{
	Name: "chorus_create_tasks", Title: "Create tasks", Toolset: tsProposals, Perm: perm.Public, Effect: writes,
	Desc: "Create up to 100 tasks with acceptance criteria, in a proposal or not; all or none.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateTasksIn) (CreatedTasks, error) {
		project, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessEditor)
		if err != nil {
			return CreatedTasks{}, err
		}
		if in.ProposalUUID != nil {
			p, _, err := d.Store.ProposalAccess(ctx, call.Who.Caller, string(*in.ProposalUUID), store.AccessViewer)
			if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrForbidden) {
				return CreatedTasks{}, err // an outage is not "not found"
			}
			if err != nil || p.ProjectUUID != string(in.ProjectUUID) {
				return CreatedTasks{}, store.NotFound("Proposal")
			}
		}
		for _, t := range in.Tasks {
			for _, u := range t.DependsOnTaskUUIDs {
				if _, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(u), store.AccessViewer); err != nil {
					return CreatedTasks{}, err
				}
			}
		}
		batch := workflows.CreateTasksInput{Actor: actor(call.Who), BatchUUID: call.newID("create-tasks"), ProjectUUID: string(in.ProjectUUID),
			ProjectName: project.Name, ProposalUUID: (*string)(in.ProposalUUID)}
		for _, t := range in.Tasks {
			batch.Tasks = append(batch.Tasks, workflows.NewTaskSpec{Title: t.Title, Description: t.Description, Priority: t.Priority,
				StoryPoints: t.StoryPoints, Criteria: criteria(t.AcceptanceCriteriaItems), DraftUUID: t.DraftUUID,
				DependsOnDraftUUIDs: t.DependsOnDraftUUIDs, DependsOnTaskUUIDs: uuidStrings(t.DependsOnTaskUUIDs)})
		}
		if err := workflows.ValidateTaskBatch(batch.Tasks); err != nil {
			return CreatedTasks{}, err
		}
		res, err := d.Flows.CreateTasks(ctx, batch)
		if err != nil {
			return CreatedTasks{}, err
		}
		out := CreatedTasks{Tasks: []NamedRef{}, Warnings: res.Warnings}
		for i, t := range res.Tasks {
			out.Tasks = append(out.Tasks, NamedRef{UUID: t.UUID, Title: t.Title})
			if i >= len(in.Tasks) || len(in.Tasks[i].References) == 0 { // tasks come back in input order
				continue
			}
			title := in.Tasks[i].Title
			refErrs, err := addInlineReferences(ctx, d, call, store.Target{Type: "task", UUID: t.UUID, ProjectUUID: string(in.ProjectUUID)},
				in.Tasks[i].References, &title)
			if err != nil {
				return CreatedTasks{}, err
			}
			out.ReferenceErrors = append(out.ReferenceErrors, refErrs...)
		}
		return out, nil
	},
}

// canonicalize makes draftUuid labels that are uuids match in any case and any uuid spelling,
// like every uuid; other labels match exactly.
func (in *CreateTasksIn) canonicalize() {
	key := func(label string) string {
		if u, err := uuid.Parse(strings.TrimSpace(label)); err == nil {
			return u.String()
		}
		return label
	}
	for i := range in.Tasks {
		t := &in.Tasks[i]
		if t.DraftUUID != nil {
			k := key(*t.DraftUUID)
			t.DraftUUID = &k
		}
		for j, dep := range t.DependsOnDraftUUIDs {
			t.DependsOnDraftUUIDs[j] = key(dep)
		}
	}
}

// canonicalize drops repeated uuids from the dependency edits: adding or removing an edge twice
// in one call means once.
func (in *UpdateTaskIn) canonicalize() {
	in.AddDependsOn = distinct(in.AddDependsOn)
	in.RemoveDependsOn = distinct(in.RemoveDependsOn)
}

// distinct keeps the first of each uuid, in order.
func distinct(us []UUID) []UUID {
	if us == nil {
		return nil
	}
	seen := map[UUID]bool{}
	out := make([]UUID, 0, len(us))
	for _, u := range us {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// UpdateTaskIn is chorus_update_task's input.
type UpdateTaskIn struct {
	TaskUUID                UUID          `json:"taskUuid"`
	Title                   *string       `json:"title,omitempty"`
	Description             *string       `json:"description,omitempty"`
	Priority                *string       `json:"priority,omitempty" chorus:"enum=low|medium|high"`
	StoryPoints             *float64      `json:"storyPoints,omitempty" chorus:"min=0"`
	AcceptanceCriteriaItems []CriterionIn `json:"acceptanceCriteriaItems,omitempty" jsonschema:"replaces all criteria and their marks"`
	AddDependsOn            []UUID        `json:"addDependsOn,omitempty"`
	RemoveDependsOn         []UUID        `json:"removeDependsOn,omitempty"`
	Status                  *string       `json:"status,omitempty" jsonschema:"assignee only" chorus:"enum=in_progress|to_verify"`
	SessionUUID             *UUID         `json:"sessionUuid,omitempty"`
}

var updateTask = tool[UpdateTaskIn, TaskView]{
	Name: "chorus_update_task", Title: "Update a task", Toolset: tsProposals, Perm: perm.Public, Effect: writes,
	Desc: "Edit a task's fields, criteria or dependencies; as its assignee, move it to in_progress or " +
		"to_verify.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateTaskIn) (TaskView, error) {
		if _, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor); err != nil {
			return TaskView{}, err
		}
		for _, u := range append(append([]string{}, uuidStrings(in.AddDependsOn)...), uuidStrings(in.RemoveDependsOn)...) {
			if _, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, u, store.AccessViewer); err != nil {
				return TaskView{}, err
			}
		}
		session, err := sessionOf(ctx, d, call.Who.Caller, in.SessionUUID)
		if err != nil {
			return TaskView{}, err
		}
		if err := workflows.CheckTitle("", "title", in.Title); err != nil {
			return TaskView{}, err
		}
		if in.Title == nil && in.Description == nil && in.Priority == nil && in.StoryPoints == nil &&
			in.AcceptanceCriteriaItems == nil && in.AddDependsOn == nil && in.RemoveDependsOn == nil && in.Status == nil {
			return taskView(ctx, d, call.Who, string(in.TaskUUID)) // nothing asked, nothing changed
		}
		cmd := workflows.UpdateTaskInput{Actor: actor(call.Who), Title: in.Title, Description: in.Description,
			DescriptionSet: in.Description != nil, Priority: in.Priority, StoryPoints: in.StoryPoints,
			SetCriteria: in.AcceptanceCriteriaItems != nil, Criteria: criteria(in.AcceptanceCriteriaItems),
			AddDependsOn: uuidStrings(in.AddDependsOn), RemoveDepends: uuidStrings(in.RemoveDependsOn), Status: in.Status}
		if session != nil {
			cmd.SessionUUID, cmd.SessionName = &session.UUID, &session.Name
		}
		res, err := workflows.Send(ctx, d.Flows, workflows.UpdateTask, string(in.TaskUUID), flowCall(call), cmd.Actor.UUID, cmd)
		if err != nil {
			return TaskView{}, err
		}
		if err := touchSession(ctx, d, session); err != nil {
			return TaskView{}, err
		}
		v, err := taskView(ctx, d, call.Who, string(in.TaskUUID))
		v.Warnings = res.Warnings
		return v, err
	},
}

// ---- claim / release / assign ----

var claimTask = tool[TaskIn, TaskView]{
	Name: "chorus_claim_task", Title: "Claim a task", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes, Idempotent: true,
	Desc: "Claim an open task. Refused when another agent holds it. _hints say what blocks it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (TaskView, error) {
		_, pv, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor)
		if err != nil {
			return TaskView{}, err
		}
		if _, err := workflows.Send(ctx, d.Flows, workflows.ClaimTask, string(in.TaskUUID), flowCall(call), call.Who.Caller.AgentUUID,
			workflows.TaskCommand{Actor: actor(call.Who), ClaimTTL: claimTTL(pv), Project: pv.UUID}); err != nil {
			return TaskView{}, err
		}
		v, err := taskView(ctx, d, call.Who, string(in.TaskUUID))
		v.Hints = taskHints(v, true)
		return v, err
	},
}

var releaseTask = tool[TaskIn, StatusOut]{
	Name: "chorus_release_task", Title: "Release a task", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes,
	Desc: "Give up a task you hold that has not started: it returns to open.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.ReleaseTask, workflows.TaskCommand{Actor: actor(call.Who)}))
	},
}

// AssignTaskIn is chorus_pm_assign_task's input.
type AssignTaskIn struct {
	TaskUUID     UUID  `json:"taskUuid"`
	AgentUUID    UUID  `json:"agentUuid"`
	InstanceUUID *UUID `json:"instanceUuid,omitempty" jsonschema:"none exist yet"`
}

var pmAssignTask = tool[AssignTaskIn, TaskView]{
	Name: "chorus_pm_assign_task", Title: "Assign a task", Toolset: tsDevelop, Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Assign an open or assigned task to an agent holding task:write.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AssignTaskIn) (TaskView, error) {
		task, pv, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor)
		if err != nil {
			return TaskView{}, err
		}
		target, err := assignableAgent(ctx, d, call, string(in.AgentUUID), perm.TaskWrite, task.ProjectUUID, "task")
		if err != nil {
			return TaskView{}, err
		}
		if in.InstanceUUID != nil {
			return TaskView{}, refuse("Agent instance not found")
		}
		a := actor(call.Who)
		if _, err := workflows.Send(ctx, d.Flows, workflows.AssignTask, string(in.TaskUUID), flowCall(call), a.UUID,
			workflows.AssignTaskInput{Actor: a, TargetUUID: target.UUID, TargetName: target.Name, ClaimTTL: claimTTL(pv)}); err != nil {
			return TaskView{}, err
		}
		v, err := taskView(ctx, d, call.Who, string(in.TaskUUID))
		v.Hints = taskHints(v, false)
		return v, err
	},
}

// assignableAgent finds the agent a task or an idea may be given to (docs/rules.md §4.4, §4.7): an
// agent of the caller's company that holds bit and whose owner can edit the project, so that it
// can work what it gets. Saying why not reveals nothing: the caller sees the entity.
func assignableAgent(ctx context.Context, d *Deps, call *Call, agentUUID string, bit perm.Bit, projectUUID, entity string) (*store.Agent, error) {
	target, err := d.Store.GetAgent(ctx, call.Who.Caller.CompanyUUID, agentUUID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuseAs("not_found", "Target Agent not found")
	} else if err != nil {
		return nil, err // an outage is not "not found"
	}
	if !perm.Effective(target.Roles, target.Permissions).Has(bit) {
		return nil, refuse("Agent %q does not have %s permission", target.Name, bit)
	}
	targetCaller := store.Caller{CompanyUUID: target.CompanyUUID, AgentUUID: target.UUID, OwnerUUID: deref(target.OwnerUUID)}
	if _, err := d.Store.RequireProject(ctx, targetCaller, projectUUID, store.AccessEditor); err != nil {
		return nil, refuse("Agent %q cannot work in this %s's project (it needs editor access there); "+
			"add its owner to the project or pick another agent", target.Name, entity)
	}
	return target, nil
}

// ---- work ----

// ReportWorkIn is chorus_report_work's input.
type ReportWorkIn struct {
	TaskUUID    UUID    `json:"taskUuid"`
	Report      string  `json:"report" chorus:"minLength=1"`
	Status      *string `json:"status,omitempty" chorus:"enum=in_progress|to_verify"`
	SessionUUID *UUID   `json:"sessionUuid,omitempty"`
}

var reportWork = tool[ReportWorkIn, textResult]{
	Name: "chorus_report_work", Title: "Report work", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes,
	Desc: "As the assignee, record progress as a comment, optionally moving the task; an illegal move records " +
		"nothing.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReportWorkIn) (textResult, error) {
		if _, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor); err != nil {
			return "", err
		}
		session, err := sessionOf(ctx, d, call.Who.Caller, in.SessionUUID)
		if err != nil {
			return "", err
		}
		cmd := workflows.ReportWorkInput{Actor: actor(call.Who), Report: in.Report, Status: in.Status}
		if session != nil {
			cmd.SessionUUID, cmd.SessionName = &session.UUID, &session.Name
		}
		if _, err := workflows.Send(ctx, d.Flows, workflows.ReportWork, string(in.TaskUUID), flowCall(call), cmd.Actor.UUID, cmd); err != nil {
			return "", err
		}
		if err := touchSession(ctx, d, session); err != nil {
			return "", err
		}
		return textResult("Work report recorded: " + in.Report), nil
	},
}

// SelfCheckItem is one criterion of a self-check.
type SelfCheckItem struct {
	UUID        UUID    `json:"uuid"`
	DevStatus   string  `json:"devStatus" chorus:"enum=passed|failed"`
	DevEvidence *string `json:"devEvidence,omitempty"`
}

// SelfCheckIn is chorus_report_criteria_self_check's input.
type SelfCheckIn struct {
	TaskUUID UUID            `json:"taskUuid"`
	Criteria []SelfCheckItem `json:"criteria" chorus:"minItems=1"`
}

// CriteriaOut is the result of the self-check and mark tools.
type CriteriaOut struct {
	Items   []CriterionView         `json:"items"`
	Status  string                  `json:"status" jsonschema:"acceptance status from the admin marks"`
	Summary store.AcceptanceSummary `json:"summary"`
}

func criteriaOut(ctx context.Context, d *Deps, taskUUID string) (CriteriaOut, error) {
	cs, err := d.Store.Criteria(ctx, taskUUID)
	if err != nil {
		return CriteriaOut{}, err
	}
	summary, status := store.Summarize(cs)
	return CriteriaOut{Items: criterionViews(cs), Status: status, Summary: summary}, nil
}

var reportCriteriaSelfCheck = tool[SelfCheckIn, CriteriaOut]{
	Name: "chorus_report_criteria_self_check", Title: "Self-check criteria", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes, Idempotent: true,
	Desc: "As the assignee, mark acceptance criteria passed or failed with evidence.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SelfCheckIn) (CriteriaOut, error) {
		cmd := workflows.MarkCriteriaInput{Actor: actor(call.Who)}
		for _, c := range in.Criteria {
			cmd.Marks = append(cmd.Marks, workflows.CriterionMark{UUID: string(c.UUID), Status: c.DevStatus, Evidence: c.DevEvidence})
		}
		if _, err := taskCommand(ctx, d, call, string(in.TaskUUID), workflows.SelfCheck, cmd); err != nil {
			return CriteriaOut{}, err
		}
		return criteriaOut(ctx, d, string(in.TaskUUID))
	},
}

// MarkItem is one criterion of a verification.
type MarkItem struct {
	UUID     UUID    `json:"uuid"`
	Status   string  `json:"status" chorus:"enum=passed|failed"`
	Evidence *string `json:"evidence,omitempty"`
}

// MarkCriteriaIn is chorus_mark_acceptance_criteria's input.
type MarkCriteriaIn struct {
	TaskUUID UUID       `json:"taskUuid"`
	Criteria []MarkItem `json:"criteria" chorus:"minItems=1"`
}

var markAcceptanceCriteria = tool[MarkCriteriaIn, CriteriaOut]{
	Name: "chorus_mark_acceptance_criteria", Title: "Mark criteria", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: writes, Idempotent: true,
	Desc: "As a reviewer, mark acceptance criteria passed or failed with evidence.",
	Run: func(ctx context.Context, d *Deps, call *Call, in MarkCriteriaIn) (CriteriaOut, error) {
		cmd := workflows.MarkCriteriaInput{Actor: actor(call.Who)}
		for _, c := range in.Criteria {
			cmd.Marks = append(cmd.Marks, workflows.CriterionMark{UUID: string(c.UUID), Status: c.Status, Evidence: c.Evidence})
		}
		if _, err := taskCommand(ctx, d, call, string(in.TaskUUID), workflows.MarkCriteria, cmd); err != nil {
			return CriteriaOut{}, err
		}
		return criteriaOut(ctx, d, string(in.TaskUUID))
	},
}

// SubmitIn is chorus_submit_for_verify's input.
type SubmitIn struct {
	TaskUUID UUID    `json:"taskUuid"`
	Summary  *string `json:"summary,omitempty"`
}

var submitForVerify = tool[SubmitIn, StatusOut]{
	Name: "chorus_submit_for_verify", Title: "Submit for review", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes,
	Desc: "As the assignee, submit an in_progress task for review (to_verify).",
	Run: func(ctx context.Context, d *Deps, call *Call, in SubmitIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.SubmitForVerify,
			workflows.SubmitInput{Actor: actor(call.Who), Summary: in.Summary}))
	},
}

// ---- admin ----

var adminVerifyTask = tool[TaskIn, StatusOut]{
	Name: "chorus_admin_verify_task", Title: "Verify a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: writes,
	Desc: "Accept a task in to_verify as done. Refused until every required criterion is marked passed.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.VerifyTask, workflows.TaskCommand{Actor: actor(call.Who)}))
	},
}

// ReopenIn is chorus_admin_reopen_task's input.
type ReopenIn struct {
	TaskUUID UUID `json:"taskUuid"`
	Force    bool `json:"force,omitempty"`
}

var adminReopenTask = tool[ReopenIn, StatusOut]{
	Name: "chorus_admin_reopen_task", Title: "Reopen a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: writes,
	Desc: "Send a task in to_verify back to in_progress, resetting its marks. Refused while a dependency is " +
		"open, unless force.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ReopenIn) (StatusOut, error) {
		_, pv, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor)
		if err != nil {
			return StatusOut{}, err
		}
		return statusOut(workflows.Send(ctx, d.Flows, workflows.ReopenTask, string(in.TaskUUID), flowCall(call), call.Who.Caller.AgentUUID,
			workflows.ReopenInput{Actor: actor(call.Who), Force: in.Force, ClaimTTL: claimTTL(pv)}))
	},
}

var adminCloseTask = tool[TaskIn, StatusOut]{
	Name: "chorus_admin_close_task", Title: "Close a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: destroys,
	Desc: "Close a task for good, from any status.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.CloseTask, workflows.TaskCommand{Actor: actor(call.Who)}))
	},
}

var adminDeleteTask = tool[TaskIn, textResult]{
	Name: "chorus_admin_delete_task", Title: "Delete a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: destroys,
	Desc: "Delete a task with its criteria and dependency edges.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (textResult, error) {
		if _, err := taskCommand(ctx, d, call, string(in.TaskUUID), workflows.DeleteTask, workflows.TaskCommand{Actor: actor(call.Who)}); err != nil {
			return "", err
		}
		return textResult(fmt.Sprintf("Task %s deleted", in.TaskUUID)), nil
	},
}

// ---- claim next ----

// ClaimNextIn is chorus_claim_next_task's input.
type ClaimNextIn struct {
	ProjectUUID   *UUID  `json:"projectUuid,omitempty" jsonschema:"default: every project you may edit"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty"`
}

// errNoTaskAvailable: chorus_claim_next_task found no task to claim.
var errNoTaskAvailable = errors.New("no task available")

// claimNextBatch is how many candidates one read proposes.
const claimNextBatch = 10

var claimNextTask = tool[ClaimNextIn, TaskView]{
	Name: "chorus_claim_next_task", Title: "Claim the next task", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes,
	Desc: "Claim the most important unclaimed task you can start now. Refused when none is available.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ClaimNextIn) (TaskView, error) {
		var projects []string
		if in.ProjectUUID != nil {
			if _, err := d.Store.RequireProject(ctx, call.Who.Caller, string(*in.ProjectUUID), store.AccessEditor); err != nil {
				return TaskView{}, err
			}
			projects = []string{string(*in.ProjectUUID)}
		} else {
			var err error
			if projects, err = d.Store.EditableProjectUUIDs(ctx, call.Who.Caller); err != nil {
				return TaskView{}, err
			}
		}
		for _, p := range in.ProposalUUIDs {
			// A proposal named here must exist and be visible, and lie in the project when one is given.
			prop, _, err := d.Store.ProposalAccess(ctx, call.Who.Caller, string(p), store.AccessViewer)
			if err != nil {
				return TaskView{}, err
			}
			if in.ProjectUUID != nil && prop.ProjectUUID != string(*in.ProjectUUID) {
				return TaskView{}, &store.NotFoundError{Entity: "Proposal"}
			}
		}
		task, err := claimNext(ctx, d, call, projects, uuidStrings(in.ProposalUUIDs))
		if errors.Is(err, errNoTaskAvailable) {
			scope := "in the projects where you may edit tasks"
			if in.ProjectUUID != nil {
				scope = "in this project"
			}
			return TaskView{}, refuse("No task is available to claim %s: every open task is held by another agent or blocked "+
				"by unfinished dependencies. See chorus_get_available_tasks, or try again later.", scope)
		}
		if err != nil {
			return TaskView{}, err
		}
		v, err := taskView(ctx, d, call.Who, task)
		v.Hints = taskHints(v, true)
		return v, err
	},
}

// claimNext tries the candidates in order through each task's workflow, which grants the claim
// or refuses it (another agent was first, or a dependency appeared); a refused one is skipped.
// With a requestId, the task about to be tried is noted first, and a retry whose first call's
// outcome is unknown asks the last task tried before anything else: only that one can have
// been claimed (docs/rules.md §4.14), so the request never claims two tasks.
func claimNext(ctx context.Context, d *Deps, call *Call, projects, proposals []string) (string, error) {
	agent := call.Who.Caller.AgentUUID
	ttls, err := d.Store.ProjectClaimTTLs(ctx, projects)
	if err != nil {
		return "", err
	}
	var tried []string
	if call.RequestID != "" && call.Retry {
		last, err := d.Store.LastClaimAttempt(ctx, agent, call.RequestID, call.Generation)
		if err != nil {
			return "", err
		}
		if last != "" {
			t, _, err := d.Store.TaskAccess(ctx, call.Who.Caller, last, store.AccessEditor)
			if err != nil {
				return "", err
			}
			_, err = workflows.Send(ctx, d.Flows, workflows.ClaimNextTask, last, flowCall(call), agent,
				workflows.TaskCommand{Actor: actor(call.Who), ClaimTTL: ttls[t.ProjectUUID], Project: t.ProjectUUID})
			if claimed(err) {
				return last, nil
			}
			if !skippable(err) {
				return "", err
			}
			tried = append(tried, last)
		}
	}
	holder := store.NewUUID()
	pause := 20 * time.Millisecond
	var busy []string // candidates other calls were asking for, left out until the next pause
	for {
		batch, err := d.Store.ClaimCandidates(ctx, projects, proposals, append(slices.Clip(tried), busy...), claimNextBatch)
		if err != nil {
			return "", err
		}
		if len(batch) == 0 {
			if len(busy) == 0 {
				return "", errNoTaskAvailable
			}
			// Every candidate left is being asked for by another call. Wait for their outcome
			// rather than answer "none available" while one of them may yet be refused.
			select {
			case <-ctx.Done():
				// Nothing of this call is in flight (every claim it sent was answered), so say so
				// rather than "Still in progress".
				return "", refuseAs("conflict", "No task could be claimed before this call's deadline: every task left "+
					"was being claimed by another agent at the same moment. Nothing was claimed for you; call again.")
			case <-time.After(pause):
			}
			pause, busy = min(pause*2, 250*time.Millisecond), nil
			continue
		}
		for _, t := range batch {
			got, err := d.Store.ReserveClaim(ctx, t.UUID, holder, claimReservationTTL)
			if err != nil {
				return "", err
			}
			if !got {
				busy = append(busy, t.UUID)
				continue
			}
			task, ok, err := tryClaim(ctx, d, call, agent, holder, t, ttls[t.ProjectUUID])
			if err != nil || ok {
				return task, err
			}
			if movedSinceRead(ctx, d, t) {
				// Its idea moved after the read, so its workflow refused a claim naming the old
				// project: the next read proposes it again from its new project, if the caller
				// may claim there, rather than answer "none available" while it is open.
				continue
			}
			tried = append(tried, t.UUID)
		}
	}
}

// movedSinceRead reports whether candidate t's row now names another project than when it was
// read (chorus_move_idea moved it meanwhile). Each answer "yes" needs another move of the task,
// so asking a moved task again cannot go on forever.
func movedSinceRead(ctx context.Context, d *Deps, t store.Task) bool {
	row, err := d.Store.TaskRow(ctx, t.UUID)
	return err == nil && row.ProjectUUID != t.ProjectUUID
}

// claimReservationTTL bounds how long a call's reservation of a candidate keeps other calls
// from asking for it (store.ReserveClaim); the reservation is released as soon as the claim's
// outcome is known, so this only matters when a call dies mid-claim.
const claimReservationTTL = 30 * time.Second

// tryClaim asks task t's workflow for the claim while holder reserves it, and reports whether
// it was granted; a refusal (ok false, err nil) means the next candidate may be tried.
func tryClaim(ctx context.Context, d *Deps, call *Call, agent, holder string, t store.Task, ttl int64) (string, bool, error) {
	defer func() {
		// Released even when ctx has ended, so other calls need not wait for the lapse.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = d.Store.ReleaseClaim(rctx, t.UUID, holder)
	}()
	if call.RequestID != "" {
		if err := d.Store.NoteClaimAttempt(ctx, agent, call.RequestID, call.Generation, t.UUID); err != nil {
			return "", false, err
		}
	}
	_, err := workflows.Send(ctx, d.Flows, workflows.ClaimNextTask, t.UUID, flowCall(call), agent,
		workflows.TaskCommand{Actor: actor(call.Who), ClaimTTL: ttl, Project: t.ProjectUUID})
	if claimed(err) {
		return t.UUID, true, nil
	}
	if !skippable(err) {
		return "", false, err
	}
	return "", false, nil
}

// claimed: the claim was granted, now or (answered from the change journal) by an earlier call
// with this requestId.
func claimed(err error) bool {
	return err == nil || workflows.IsKind(err, workflows.KindAlreadyApplied)
}

// skippable: the task's workflow refused the claim (taken, blocked, gone, or in need of repair);
// the next candidate may be claimed instead. Anything else (an outage, a deadline) leaves the
// claim's outcome unknown and ends the call.
func skippable(err error) bool {
	var wfe *workflows.Error
	return errors.As(err, &wfe) && wfe.Kind != workflows.KindAlreadyApplied
}
