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
	TaskUUID UUID `json:"taskUuid" jsonschema:"the task's uuid"`
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
		out[i] = CriterionView{UUID: c.UUID, Description: c.Description, Required: c.Required, DevStatus: c.DevStatus,
			DevEvidence: c.DevEvidence, DevMarkedByType: c.DevMarkedByType, DevMarkedBy: c.DevMarkedBy, DevMarkedAt: c.DevMarkedAt,
			Status: c.Status, Evidence: c.Evidence, MarkedByType: c.MarkedByType, MarkedBy: c.MarkedBy, MarkedAt: c.MarkedAt,
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
	DependsOn               []TaskLinkView          `json:"dependsOn"`
	DependedBy              []TaskLinkView          `json:"dependedBy"`
	CommentCount            int                     `json:"commentCount"`
	CreatedAt               time.Time               `json:"createdAt"`
	UpdatedAt               time.Time               `json:"updatedAt"`
	References              []ReferenceView         `json:"references"`
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
	return TaskView{UUID: t.UUID, Title: t.Title, Description: t.Description, Status: t.Status, Priority: t.Priority,
		StoryPoints: t.StoryPoints, AcceptanceCriteria: t.AcceptanceCriteria, AcceptanceCriteriaItems: criterionViews(cs),
		AcceptanceStatus: status, AcceptanceSummary: summary,
		Assignee:     assigneeView(ctx, n, t.AssigneeType, t.AssigneeUUID, t.AssignedAt, t.AssignedByUUID),
		ProposalUUID: t.ProposalUUID, Project: ProjectRef{UUID: pv.UUID, Name: pv.Name},
		CreatedBy: n.Ref(ctx, t.CreatedByType, &t.CreatedByUUID), DependsOn: links(dependsOn), DependedBy: links(dependedBy),
		CommentCount: comments, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, References: referenceViews(ctx, n, rel.References),
		ClaimTTLSeconds: t.ClaimTTLSeconds, ClaimExpiresAt: t.ClaimExpiresAt}, nil
}

// taskHints are the _hints of claim and assign (docs/rules.md §4.9): what blocks the task and who
// waits for it. mine words them for the agent that will do the work.
func taskHints(v TaskView, mine bool) []string {
	var hints []string
	var open []string
	for _, dep := range v.DependsOn {
		if dep.Status != "done" && dep.Status != "closed" {
			open = append(open, fmt.Sprintf("%q (%s)", dep.Title, dep.Status))
		}
	}
	if len(open) > 0 {
		tail := "before work can proceed."
		if mine {
			tail = "before you can proceed."
		}
		hints = append(hints, "⚠ BLOCKED: This task depends on unfinished tasks: "+strings.Join(open, ", ")+
			". They must be verified to done by an admin or human "+tail)
	}
	var waiting []string
	for _, dep := range v.DependedBy {
		if dep.Status != "done" && dep.Status != "closed" {
			waiting = append(waiting, fmt.Sprintf("%q", dep.Title))
		}
	}
	if len(waiting) > 0 {
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
	ProjectUUID   UUID   `json:"projectUuid" jsonschema:"the project's uuid"`
	Status        string `json:"status,omitempty" jsonschema:"only tasks in this status" chorus:"enum=open|assigned|in_progress|to_verify|done|closed"`
	Priority      string `json:"priority,omitempty" jsonschema:"only tasks of this priority" chorus:"enum=low|medium|high"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty" jsonschema:"only tasks of these proposals (empty: all)"`
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
		rows[i] = TaskRow{UUID: t.UUID, Title: clip(t.Title), Status: t.Status, Priority: t.Priority, ProposalUUID: t.ProposalUUID,
			AssigneeUUID: t.AssigneeUUID, StoryPoints: t.StoryPoints, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	}
	wrap := func(r []TaskRow) any {
		return TaskList{Tasks: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
	}
	return wrap(fit(rows, wrap)).(TaskList)
}

var listTasks = tool[ListTasksIn, TaskList]{
	Name: "chorus_list_tasks", Title: "List tasks", Perm: perm.Public, Effect: reads,
	Desc: "List a project's tasks, high priority first, then newest. Filter by status, priority or proposals. Paged.",
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
	Name: "chorus_get_task", Title: "Get a task", Perm: perm.Public, Effect: reads,
	Desc: "Get one task: description, status, assignee, acceptance criteria with both the self-check and the " +
		"verification marks, acceptance status and summary, and the tasks it depends on and that depend on it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (TaskView, error) {
		return taskView(ctx, d, call.Who, string(in.TaskUUID))
	},
}

// AvailableTasksIn is chorus_get_available_tasks' input.
type AvailableTasksIn struct {
	ProjectUUID   UUID   `json:"projectUuid" jsonschema:"the project's uuid"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty" jsonschema:"only tasks of these proposals"`
}

var getAvailableTasks = tool[AvailableTasksIn, TaskList]{
	Name: "chorus_get_available_tasks", Title: "Tasks open to claim", Perm: perm.Public, Effect: reads,
	Desc: "List up to 50 open (unclaimed) tasks of a project, high priority first. Some may still be blocked by dependencies; see chorus_get_unblocked_tasks.",
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
	ProjectUUID   UUID   `json:"projectUuid" jsonschema:"the project's uuid"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty" jsonschema:"only tasks of these proposals"`
	PageIn
}

var getUnblockedTasks = tool[UnblockedTasksIn, TaskList]{
	Name: "chorus_get_unblocked_tasks", Title: "Tasks you can start now", Perm: perm.Public, Effect: reads,
	Desc: "List open or assigned tasks whose every dependency is done or closed: the work that can start now. " +
		"A dependency waiting for verification (to_verify) still blocks. Paged.",
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
	Name: "chorus_get_my_assignments", Title: "My assignments", Perm: perm.Public, Effect: reads,
	Desc: "Everything assigned to you (or your owner) that is not finished, by project: ideas with their derived " +
		"status and proposal and task counts, and tasks with their acceptance progress (high priority first). " +
		"The X-Chorus-Project (comma-separated uuids) or X-Chorus-Project-Group HTTP header narrows it to those projects.",
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
					e.Tasks = append(e.Tasks, TrackedTaskView{UUID: t.UUID, Title: clip(t.Title), Status: t.Status,
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
	Title                   string        `json:"title" jsonschema:"task title" chorus:"minLength=1"`
	Description             *string       `json:"description,omitempty" jsonschema:"what to do"`
	Priority                *string       `json:"priority,omitempty" jsonschema:"low, medium (default) or high" chorus:"enum=low|medium|high"`
	StoryPoints             *float64      `json:"storyPoints,omitempty" jsonschema:"estimate; fractions allowed" chorus:"min=0"`
	AcceptanceCriteriaItems []CriterionIn `json:"acceptanceCriteriaItems" jsonschema:"at least one criterion with a non-blank description"`
	DraftUUID               *string       `json:"draftUuid,omitempty" jsonschema:"your own id for this task, for dependsOnDraftUuids of other tasks in the same call"`
	DependsOnDraftUUIDs     []string      `json:"dependsOnDraftUuids,omitempty" jsonschema:"draftUuids of tasks in this call that must be done first"`
	DependsOnTaskUUIDs      []UUID        `json:"dependsOnTaskUuids,omitempty" jsonschema:"existing tasks that must be done first"`
	References              []ReferenceIn `json:"references,omitempty" jsonschema:"links to attach (fail-soft: one that is invalid is reported in referenceErrors, and the rest are still added)" chorus:"maxItems=50"`
}

// CreateTasksIn is chorus_create_tasks' input.
type CreateTasksIn struct {
	ProjectUUID  UUID        `json:"projectUuid" jsonschema:"the project's uuid"`
	ProposalUUID *UUID       `json:"proposalUuid,omitempty" jsonschema:"attach the tasks to this proposal of the project (default: quick tasks)"`
	Tasks        []NewTaskIn `json:"tasks" jsonschema:"the tasks to create" chorus:"minItems=1;maxItems=100"`
}

// CreatedTasks is chorus_create_tasks' result.
type CreatedTasks struct {
	Tasks    []NamedRef `json:"tasks"`
	Warnings []string   `json:"warnings,omitempty"`
	// ReferenceErrors lists the inline references that were not added (only when there are any).
	ReferenceErrors []ReferenceError `json:"referenceErrors,omitempty"`
}

var createTasks = tool[CreateTasksIn, CreatedTasks]{
	Name: "chorus_create_tasks", Title: "Create tasks", Perm: perm.Public, Effect: writes,
	Desc: "Create one or more tasks at once (quick tasks, or tasks of a proposal), each with at least one acceptance " +
		"criterion. All are created or none. Tasks may depend on each other (draftUuid / dependsOnDraftUuids) and on " +
		"existing tasks; a dependency that cannot be added is reported as a warning.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateTasksIn) (CreatedTasks, error) {
		project, err := d.Store.RequireProject(ctx, call.Who.Caller, string(in.ProjectUUID), store.AccessEditor)
		if err != nil {
			return CreatedTasks{}, err
		}
		if in.ProposalUUID != nil {
			p, _, err := d.Store.ProposalAccess(ctx, call.Who.Caller, string(*in.ProposalUUID), store.AccessViewer)
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
		drafts := map[string]bool{}
		for _, t := range in.Tasks {
			if t.DraftUUID != nil {
				if drafts[*t.DraftUUID] {
					return CreatedTasks{}, invalid("tasks: draftUuid %q is used by two tasks; give each task its own", *t.DraftUUID)
				}
				drafts[*t.DraftUUID] = true
			}
		}
		for _, t := range in.Tasks {
			cs := criteria(t.AcceptanceCriteriaItems)
			if len(workflows.NormalizeCriteria(cs)) == 0 {
				return CreatedTasks{}, refuse("Task %q: %s", t.Title, criteriaRequiredText)
			}
			if strings.TrimSpace(t.Title) == "" {
				return CreatedTasks{}, invalid("tasks[].title must not be blank")
			}
			batch.Tasks = append(batch.Tasks, workflows.NewTaskSpec{Title: t.Title, Description: t.Description, Priority: t.Priority,
				StoryPoints: t.StoryPoints, Criteria: cs, DraftUUID: t.DraftUUID, DependsOnDraftUUIDs: t.DependsOnDraftUUIDs,
				DependsOnTaskUUIDs: uuidStrings(t.DependsOnTaskUUIDs)})
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

const criteriaRequiredText = "Acceptance criteria are required: provide at least one acceptanceCriteriaItems entry with a non-blank description"

// UpdateTaskIn is chorus_update_task's input.
type UpdateTaskIn struct {
	TaskUUID                UUID          `json:"taskUuid" jsonschema:"the task's uuid"`
	Title                   *string       `json:"title,omitempty" jsonschema:"new title"`
	Description             *string       `json:"description,omitempty" jsonschema:"new description"`
	Priority                *string       `json:"priority,omitempty" jsonschema:"new priority" chorus:"enum=low|medium|high"`
	StoryPoints             *float64      `json:"storyPoints,omitempty" jsonschema:"new estimate" chorus:"min=0"`
	AcceptanceCriteriaItems []CriterionIn `json:"acceptanceCriteriaItems,omitempty" jsonschema:"replaces every criterion (all marks are discarded); must keep at least one"`
	AddDependsOn            []UUID        `json:"addDependsOn,omitempty" jsonschema:"tasks of the same project this task now depends on"`
	RemoveDependsOn         []UUID        `json:"removeDependsOn,omitempty" jsonschema:"dependencies to drop"`
	Status                  *string       `json:"status,omitempty" jsonschema:"assignee only: in_progress (every dependency must be done or closed) or to_verify" chorus:"enum=in_progress|to_verify"`
	SessionUUID             *UUID         `json:"sessionUuid,omitempty" jsonschema:"your work session, recorded with the change"`
}

var updateTask = tool[UpdateTaskIn, TaskView]{
	Name: "chorus_update_task", Title: "Update a task", Perm: perm.Public, Effect: writes,
	Desc: "Edit a task's title, description, priority, story points, acceptance criteria (replaced wholesale) or " +
		"dependencies; as its assignee, move it to in_progress (only when every dependency is done or closed) or " +
		"to_verify. A dependency that cannot be added is reported in warnings; anything else wrong changes nothing.",
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
		if in.Title != nil && strings.TrimSpace(*in.Title) == "" {
			return TaskView{}, invalid("title must not be blank")
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
	Name: "chorus_claim_task", Title: "Claim a task", Perm: perm.TaskWrite, Effect: writes, Idempotent: true,
	Desc: "Claim an open task: you become its assignee. Refused when another agent holds it (ask an admin to " +
		"reassign); claiming a task you already hold changes nothing. _hints say what blocks it and who waits for it.",
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
	Name: "chorus_release_task", Title: "Release a task", Perm: perm.TaskWrite, Effect: writes,
	Desc: "Give up a task you hold that has not started (status assigned): it returns to open with no assignee.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.ReleaseTask, workflows.TaskCommand{Actor: actor(call.Who)}))
	},
}

// AssignTaskIn is chorus_pm_assign_task's input.
type AssignTaskIn struct {
	TaskUUID     UUID  `json:"taskUuid" jsonschema:"the task's uuid"`
	AgentUUID    UUID  `json:"agentUuid" jsonschema:"the agent to assign"`
	InstanceUUID *UUID `json:"instanceUuid,omitempty" jsonschema:"pin a specific agent instance (none exist yet)"`
}

var pmAssignTask = tool[AssignTaskIn, TaskView]{
	Name: "chorus_pm_assign_task", Title: "Assign a task", Perm: perm.ProposalWrite, Effect: writes,
	Desc: "Assign an open or assigned task to an agent of your company that holds task:write (replacing the current assignee).",
	Run: func(ctx context.Context, d *Deps, call *Call, in AssignTaskIn) (TaskView, error) {
		task, pv, err := d.Store.TaskAccess(ctx, call.Who.Caller, string(in.TaskUUID), store.AccessEditor)
		if err != nil {
			return TaskView{}, err
		}
		target, err := d.Store.GetAgent(ctx, call.Who.Caller.CompanyUUID, string(in.AgentUUID))
		if err != nil {
			return TaskView{}, refuse("Target Agent not found")
		}
		if !perm.Effective(target.Roles, target.Permissions).Has(perm.TaskWrite) {
			return TaskView{}, refuse("Agent %q does not have task:write permission", target.Name)
		}
		// The assignee must be able to work the task: editor on its project (docs/rules.md §6.3). Saying so
		// reveals nothing the caller cannot see: the caller can see the task.
		targetCaller := store.Caller{CompanyUUID: target.CompanyUUID, AgentUUID: target.UUID, OwnerUUID: deref(target.OwnerUUID)}
		if _, err := d.Store.RequireProject(ctx, targetCaller, task.ProjectUUID, store.AccessEditor); err != nil {
			return TaskView{}, refuse("Agent %q cannot work in this task's project (it needs editor access there); "+
				"add its owner to the project or pick another agent", target.Name)
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

// ---- work ----

// ReportWorkIn is chorus_report_work's input.
type ReportWorkIn struct {
	TaskUUID    UUID    `json:"taskUuid" jsonschema:"the task's uuid"`
	Report      string  `json:"report" jsonschema:"what you did; saved as a comment on the task" chorus:"minLength=1"`
	Status      *string `json:"status,omitempty" jsonschema:"also move the task: in_progress or to_verify" chorus:"enum=in_progress|to_verify"`
	SessionUUID *UUID   `json:"sessionUuid,omitempty" jsonschema:"your work session"`
}

var reportWork = tool[ReportWorkIn, textResult]{
	Name: "chorus_report_work", Title: "Report work", Perm: perm.TaskWrite, Effect: writes,
	Desc: "As the assignee, record progress on a task as a comment, optionally moving it to in_progress or " +
		"to_verify. A status the task cannot move to is refused and nothing is recorded.",
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
	UUID        UUID    `json:"uuid" jsonschema:"the criterion's uuid"`
	DevStatus   string  `json:"devStatus" jsonschema:"your verdict" chorus:"enum=passed|failed"`
	DevEvidence *string `json:"devEvidence,omitempty" jsonschema:"how you know (tests run, links, output)"`
}

// SelfCheckIn is chorus_report_criteria_self_check's input.
type SelfCheckIn struct {
	TaskUUID UUID            `json:"taskUuid" jsonschema:"the task's uuid"`
	Criteria []SelfCheckItem `json:"criteria" jsonschema:"criteria of this task and your verdicts" chorus:"minItems=1"`
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
	Name: "chorus_report_criteria_self_check", Title: "Self-check acceptance criteria", Perm: perm.TaskWrite, Effect: writes, Idempotent: true,
	Desc: "As the assignee, mark acceptance criteria passed or failed with evidence. These are your marks; only an " +
		"admin's verification marks decide the acceptance status.",
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
	UUID     UUID    `json:"uuid" jsonschema:"the criterion's uuid"`
	Status   string  `json:"status" jsonschema:"verdict" chorus:"enum=passed|failed"`
	Evidence *string `json:"evidence,omitempty" jsonschema:"what you checked"`
}

// MarkCriteriaIn is chorus_mark_acceptance_criteria's input.
type MarkCriteriaIn struct {
	TaskUUID UUID       `json:"taskUuid" jsonschema:"the task's uuid"`
	Criteria []MarkItem `json:"criteria" jsonschema:"criteria of this task and verdicts" chorus:"minItems=1"`
}

var markAcceptanceCriteria = tool[MarkCriteriaIn, CriteriaOut]{
	Name: "chorus_mark_acceptance_criteria", Title: "Verify acceptance criteria", Perm: perm.TaskAdmin, Effect: writes, Idempotent: true,
	Desc: "As a reviewer, mark acceptance criteria passed or failed with evidence. Verification of the task needs every required criterion passed.",
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
	TaskUUID UUID    `json:"taskUuid" jsonschema:"the task's uuid"`
	Summary  *string `json:"summary,omitempty" jsonschema:"what you delivered, for the reviewer"`
}

var submitForVerify = tool[SubmitIn, StatusOut]{
	Name: "chorus_submit_for_verify", Title: "Submit for verification", Perm: perm.TaskWrite, Effect: writes,
	Desc: "As the assignee, hand an in_progress task to review: it becomes to_verify until an admin verifies or reopens it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SubmitIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.SubmitForVerify,
			workflows.SubmitInput{Actor: actor(call.Who), Summary: in.Summary}))
	},
}

// ---- admin ----

var adminVerifyTask = tool[TaskIn, StatusOut]{
	Name: "chorus_admin_verify_task", Title: "Verify a task", Perm: perm.TaskAdmin, Effect: writes,
	Desc: "Accept a task waiting in to_verify: it becomes done, which unblocks the tasks that depend on it. Every required acceptance criterion must be marked passed first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.VerifyTask, workflows.TaskCommand{Actor: actor(call.Who)}))
	},
}

// ReopenIn is chorus_admin_reopen_task's input.
type ReopenIn struct {
	TaskUUID UUID `json:"taskUuid" jsonschema:"the task's uuid"`
	Force    bool `json:"force,omitempty" jsonschema:"reopen even though a dependency is unresolved"`
}

var adminReopenTask = tool[ReopenIn, StatusOut]{
	Name: "chorus_admin_reopen_task", Title: "Reopen a task", Perm: perm.TaskAdmin, Effect: writes,
	Desc: "Send a task waiting in to_verify back to in_progress; all acceptance marks are reset. Refused while a dependency is unresolved unless force is true.",
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
	Name: "chorus_admin_close_task", Title: "Close a task", Perm: perm.TaskAdmin, Effect: destroys,
	Desc: "Close a task for good, from any status. A closed task no longer blocks the tasks that depend on it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(taskCommand(ctx, d, call, string(in.TaskUUID), workflows.CloseTask, workflows.TaskCommand{Actor: actor(call.Who)}))
	},
}

var adminDeleteTask = tool[TaskIn, textResult]{
	Name: "chorus_admin_delete_task", Title: "Delete a task", Perm: perm.TaskAdmin, Effect: destroys,
	Desc: "Delete a task with its acceptance criteria and its dependency edges in both directions.",
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
	ProjectUUID   *UUID  `json:"projectUuid,omitempty" jsonschema:"claim from this project (default: every project where you may edit tasks)"`
	ProposalUUIDs []UUID `json:"proposalUuids,omitempty" jsonschema:"only tasks of these proposals"`
}

// errNoTaskAvailable: chorus_claim_next_task found no task to claim.
var errNoTaskAvailable = errors.New("no task available")

// claimNextBatch is how many candidates one read proposes.
const claimNextBatch = 10

var claimNextTask = tool[ClaimNextIn, TaskView]{
	Name: "chorus_claim_next_task", Title: "Claim the next task", Perm: perm.TaskWrite, Effect: writes,
	Desc: "Claim the most important task you can start now, in one step: the highest-priority open task that " +
		"nobody holds and whose dependencies are all done or closed (oldest first among equals), in one project or " +
		"in every project where you may edit tasks. Agents calling it at once each get a different task. Answers " +
		"with the claimed task, or an error when none is available.",
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
