package mcp

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Views of tasks: the Task JSON of chorus_get_task and of the task tools that return the task,
// its _hints, and the rows of task lists and trackers.

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
	// The names the view shows are read while the relations are (docs/bench-results.md, "Reads").
	n := d.Store.NewNamer()
	got, err := d.app().GetTask(ctx, app.Request{Who: who}, taskUUID, func(t *store.Task) {
		refs := []store.ActorRef{{Type: cmp.Or(t.CreatedByType, "agent"), UUID: t.CreatedByUUID}}
		if t.AssigneeType != nil && t.AssigneeUUID != nil {
			refs = append(refs, store.ActorRef{Type: *t.AssigneeType, UUID: *t.AssigneeUUID})
		}
		if t.AssignedByUUID != nil {
			refs = append(refs, store.ActorRef{Type: "agent", UUID: *t.AssignedByUUID})
		}
		n.Prefetch(ctx, refs...)
	})
	if err != nil {
		return TaskView{}, err
	}
	t, pv, rel := got.Task, got.Project, got.Relations
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
		if !vocab.TaskStatus(dep.Status).Resolved() {
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
		if !vocab.TaskStatus(dep.Status).Resolved() {
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
