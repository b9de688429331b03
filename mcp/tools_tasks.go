package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Task tools that change tasks (docs/rules.md §4.8, §4.9, §2.4, §5.2, §5.3, §4.14). Each is an
// adapter over one of package app's task use cases: it maps the tool's arguments to the use
// case's input and its result to the tool's view; the checks, the workflow command and the
// follow-up records are app's. The reads are in tools_tasks_read.go, the views in views_tasks.go.

// TaskIn names a task.
type TaskIn struct {
	TaskUUID UUID `json:"taskUuid"`
}

func statusOut(r app.TaskOutcome, err error) (StatusOut, error) {
	return StatusOut{UUID: r.UUID, Status: r.Status}, err
}

// withHints reads the task's view after a claim or an assignment and adds its _hints.
func withHints(ctx context.Context, d *Deps, call *Call, taskUUID string, mine bool) (TaskView, error) {
	v, err := taskView(ctx, d, call.Who, taskUUID)
	v.Hints = taskHints(v, mine)
	return v, err
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
		batch := app.CreateTasksInput{ProjectUUID: string(in.ProjectUUID), ProposalUUID: (*string)(in.ProposalUUID)}
		for _, t := range in.Tasks {
			batch.Tasks = append(batch.Tasks, app.NewTask{Title: t.Title, Description: t.Description, Priority: t.Priority,
				StoryPoints: t.StoryPoints, Criteria: criteria(t.AcceptanceCriteriaItems), DraftUUID: t.DraftUUID,
				DependsOnDraftUUIDs: t.DependsOnDraftUUIDs, DependsOnTaskUUIDs: uuidStrings(t.DependsOnTaskUUIDs)})
		}
		for _, t := range in.Tasks {
			batch.References = append(batch.References, referenceInputs(t.References))
		}
		res, err := d.app().CreateTasks(ctx, call.Request, batch)
		if err != nil {
			return CreatedTasks{}, err
		}
		out := CreatedTasks{Tasks: []NamedRef{}, Warnings: res.Warnings, ReferenceErrors: referenceErrors(res.ReferenceErrors)}
		for _, t := range res.Tasks {
			out.Tasks = append(out.Tasks, NamedRef{UUID: t.UUID, Title: t.Title})
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
		res, err := d.app().UpdateTask(ctx, call.Request, app.UpdateTaskInput{TaskUUID: string(in.TaskUUID), Title: in.Title,
			Description: in.Description, Priority: in.Priority, StoryPoints: in.StoryPoints,
			SetCriteria: in.AcceptanceCriteriaItems != nil, Criteria: criteria(in.AcceptanceCriteriaItems),
			AddDependsOn: uuidStrings(in.AddDependsOn), RemoveDependsOn: uuidStrings(in.RemoveDependsOn), Status: in.Status,
			SessionUUID: (*string)(in.SessionUUID)})
		if err != nil {
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
		if _, err := d.app().ClaimTask(ctx, call.Request, string(in.TaskUUID)); err != nil {
			return TaskView{}, err
		}
		return withHints(ctx, d, call, string(in.TaskUUID), true)
	},
}

var releaseTask = tool[TaskIn, StatusOut]{
	Name: "chorus_release_task", Title: "Release a task", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes,
	Desc: "Give up a task you hold that has not started: it returns to open.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(d.app().ReleaseTask(ctx, call.Request, string(in.TaskUUID)))
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
		if _, err := d.app().AssignTask(ctx, call.Request, app.AssignTaskInput{TaskUUID: string(in.TaskUUID),
			AgentUUID: string(in.AgentUUID), InstanceUUID: (*string)(in.InstanceUUID)}); err != nil {
			return TaskView{}, err
		}
		return withHints(ctx, d, call, string(in.TaskUUID), false)
	},
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
		if err := d.app().ReportWork(ctx, call.Request, app.ReportWorkInput{TaskUUID: string(in.TaskUUID), Report: in.Report,
			Status: in.Status, SessionUUID: (*string)(in.SessionUUID)}); err != nil {
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

func criteriaOut(c app.TaskCriteria, err error) (CriteriaOut, error) {
	if err != nil {
		return CriteriaOut{}, err
	}
	return CriteriaOut{Items: criterionViews(c.Items), Status: c.Status, Summary: c.Summary}, nil
}

var reportCriteriaSelfCheck = tool[SelfCheckIn, CriteriaOut]{
	Name: "chorus_report_criteria_self_check", Title: "Self-check criteria", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes, Idempotent: true,
	Desc: "As the assignee, mark acceptance criteria passed or failed with evidence.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SelfCheckIn) (CriteriaOut, error) {
		marks := app.CriteriaMarks{TaskUUID: string(in.TaskUUID)}
		for _, c := range in.Criteria {
			marks.Marks = append(marks.Marks, workflows.CriterionMark{UUID: string(c.UUID), Status: c.DevStatus, Evidence: c.DevEvidence})
		}
		return criteriaOut(d.app().SelfCheckCriteria(ctx, call.Request, marks))
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
		marks := app.CriteriaMarks{TaskUUID: string(in.TaskUUID)}
		for _, c := range in.Criteria {
			marks.Marks = append(marks.Marks, workflows.CriterionMark{UUID: string(c.UUID), Status: c.Status, Evidence: c.Evidence})
		}
		return criteriaOut(d.app().MarkCriteria(ctx, call.Request, marks))
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
		return statusOut(d.app().SubmitTask(ctx, call.Request, string(in.TaskUUID), in.Summary))
	},
}

// ---- admin ----

var adminVerifyTask = tool[TaskIn, VerifyOut]{
	Name: "chorus_admin_verify_task", Title: "Verify a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: writes,
	Desc: "Accept a task in to_verify as done. Refused until every required criterion is marked passed. Where the " +
		"project's policy has a person decide verification, nothing changes yet: awaitingHuman names the gate it waits at.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (VerifyOut, error) {
		res, err := d.app().VerifyTask(ctx, call.Request, string(in.TaskUUID))
		if err != nil {
			return VerifyOut{}, err
		}
		return VerifyOut{StatusOut: StatusOut{UUID: res.UUID, Status: res.Status}, AwaitingHuman: awaitingHuman(res.Gate)}, nil
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
		return statusOut(d.app().ReopenTask(ctx, call.Request, string(in.TaskUUID), in.Force))
	},
}

var adminCloseTask = tool[TaskIn, StatusOut]{
	Name: "chorus_admin_close_task", Title: "Close a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: destroys,
	Desc: "Close a task for good, from any status.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (StatusOut, error) {
		return statusOut(d.app().CloseTask(ctx, call.Request, string(in.TaskUUID)))
	},
}

var adminDeleteTask = tool[TaskIn, textResult]{
	Name: "chorus_admin_delete_task", Title: "Delete a task", Toolset: tsReview, Perm: perm.TaskAdmin, Effect: destroys,
	Desc: "Delete a task with its criteria and dependency edges.",
	Run: func(ctx context.Context, d *Deps, call *Call, in TaskIn) (textResult, error) {
		if err := d.app().DeleteTask(ctx, call.Request, string(in.TaskUUID)); err != nil {
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

var claimNextTask = tool[ClaimNextIn, TaskView]{
	Name: "chorus_claim_next_task", Title: "Claim the next task", Toolset: tsDevelop, Perm: perm.TaskWrite, Effect: writes,
	Desc: "Claim the most important unclaimed task you can start now. Refused when none is available.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ClaimNextIn) (TaskView, error) {
		res, err := d.app().ClaimNextTask(ctx, call.Request, app.ClaimNextInput{ProjectUUID: (*string)(in.ProjectUUID),
			ProposalUUIDs: uuidStrings(in.ProposalUUIDs)})
		if err != nil {
			return TaskView{}, err
		}
		return withHints(ctx, d, call, res.TaskUUID, true)
	},
}
