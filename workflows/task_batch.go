package workflows

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// CreateTasksWorkflowName is the registered type of CreateTasksWorkflow.
const CreateTasksWorkflowName = "CreateTasksWorkflow"

// TaskBatchEntity is the ChorusEntity search attribute of a chorus_create_tasks batch workflow.
const TaskBatchEntity = "task_batch"

// TaskBatchID is the workflow id of one chorus_create_tasks call.
func TaskBatchID(batchUUID string) string { return "task-batch/" + batchUUID }

// NewTaskSpec is one task of chorus_create_tasks.
type NewTaskSpec struct {
	Title               string                 `json:"title"`
	Description         *string                `json:"description"`
	Priority            *string                `json:"priority"`
	StoryPoints         *float64               `json:"storyPoints"`
	Criteria            []store.CriterionDraft `json:"criteria"`
	DraftUUID           *string                `json:"draftUuid"`
	DependsOnDraftUUIDs []string               `json:"dependsOnDraftUuiDs"`
	DependsOnTaskUUIDs  []string               `json:"dependsOnTaskUuiDs"`
}

// CreateTasksInput is one chorus_create_tasks call. The caller has checked the project, the
// proposal and the existing tasks named as dependencies (they need the database); the rules on
// the tasks themselves are ValidateTaskBatch's, which the workflow applies before it writes.
type CreateTasksInput struct {
	Actor        Actor         `json:"actor"`
	BatchUUID    string        `json:"batchUuid"`
	ProjectUUID  string        `json:"projectUuid"`
	ProjectName  string        `json:"projectName"` // for the memos; "" in older histories
	ProposalUUID *string       `json:"proposalUuid"`
	Tasks        []NewTaskSpec `json:"tasks"`
}

// ValidateTaskBatch is the rule of chorus_create_tasks on its tasks (docs/rules.md §4.9), in
// this order: no two tasks share a draftUuid label; then, task by task, each has a criterion
// (CheckCriteria) and a title that is not blank (CheckTitle). It is pure: the MCP tool calls it
// before it starts the batch, and CreateTasksWorkflow again before it writes, so a batch that
// breaks it creates nothing. Its refusals are *Error: a shared label and a blank title are
// KindInvalid; a task without criteria is KindConflict, because chorus_create_tasks has always
// answered it as a refusal of the call rather than as invalid input: its requestId stays bound
// to its arguments (docs/rules.md §8.5), and that is kept so no agent sees a change.
func ValidateTaskBatch(tasks []NewTaskSpec) error {
	labels := map[string]bool{}
	for _, t := range tasks {
		if t.DraftUUID != nil {
			if labels[*t.DraftUUID] {
				return Refuse(KindInvalid, "%s: tasks: draftUuid %q is used by two tasks; give each task its own", inputInvalid, *t.DraftUUID)
			}
			labels[*t.DraftUUID] = true
		}
	}
	for _, t := range tasks {
		if err := CheckCriteria(fmt.Sprintf("Task %q", t.Title), t.Criteria); err != nil {
			return Refuse(KindConflict, "%s", err.Error())
		}
		if err := CheckTitle("", "tasks[].title", &t.Title); err != nil {
			return err
		}
	}
	return nil
}

// CreateTasksResult lists the created tasks in input order and the dependency warnings.
type CreateTasksResult struct {
	Tasks    []MaterializedItem `json:"tasks"`
	Warnings []string           `json:"warnings"`
}

// oneActivityBatch is the workflow.GetVersion change id of CreateTasksWorkflow writing its batch
// and starting its tasks' workflows in one activity (CreateTaskBatchAndStart) instead of two
// (CreateTaskBatch, then StartWorkflows). Histories recorded before it replay the two.
const oneActivityBatch = "create-tasks-one-activity"

// batchIDsChange is the workflow.GetVersion change id of CreateTasksWorkflow naming its change,
// and so its tasks, after the batch (batchWrite) instead of the run (runWrite). Histories
// recorded before it replay with the run's.
const batchIDsChange = "create-tasks-ids-from-batch"

// CreateTasksWorkflow creates a batch of tasks in one transaction (all or nothing), then makes
// sure a TaskWorkflow runs for each, and returns. Its id derives from the batch, so a retried
// call cannot create the batch twice while a run is open or completed; and the tasks' ids derive
// from the batch too, so a run started again after one that ended past its commit (terminated,
// which the reuse policy lets a retry start again) finds the batch applied and creates nothing
// twice (docs/write-path.md, "One write protocol").
func CreateTasksWorkflow(ctx workflow.Context, in CreateTasksInput) (CreateTasksResult, error) {
	// A pure check before any command: a batch that breaks the rule fails the run having written
	// nothing, and every history of a batch that keeps it replays unchanged.
	if err := ValidateTaskBatch(in.Tasks); err != nil {
		return CreateTasksResult{}, ToApplicationError(err)
	}
	now := stamp(ctx)
	wr := runWrite(ctx, RowMark{}, now)
	if workflow.GetVersion(ctx, batchIDsChange, workflow.DefaultVersion, 1) == 1 {
		wr = batchWrite(ctx, now)
	}
	out := CreateTasksResult{Tasks: []MaterializedItem{}}
	batch := store.TaskBatch{Write: wr, CompanyUUID: in.Actor.CompanyUUID, ProjectUUID: in.ProjectUUID}
	byDraft := map[string]string{}
	for i, spec := range in.Tasks {
		t := store.Task{UUID: derivedFrom(wr, "task", strconv.Itoa(i)), CompanyUUID: in.Actor.CompanyUUID,
			ProjectUUID: in.ProjectUUID, Title: strings.TrimSpace(spec.Title), Description: emptyToNil(spec.Description),
			Status: vocab.TaskOpen, Priority: "medium", StoryPoints: spec.StoryPoints, ProposalUUID: in.ProposalUUID,
			CreatedByType: in.Actor.Type, CreatedByUUID: in.Actor.UUID, Version: 1,
			CreatedAt: now.Add(time.Duration(i) * time.Microsecond), UpdatedAt: now}
		if spec.Priority != nil {
			t.Priority = *spec.Priority
		}
		batch.Tasks = append(batch.Tasks, t)
		for k, c := range NormalizeCriteria(spec.Criteria) {
			batch.Criteria = append(batch.Criteria, store.AcceptanceCriterion{UUID: DerivedUUID("task", t.UUID, "criterion", strconv.Itoa(k)),
				TaskUUID: t.UUID, Description: c.Description, Required: c.Required, DevStatus: "pending", Status: "pending",
				SortOrder: k, CreatedAt: now, UpdatedAt: now})
		}
		if spec.DraftUUID != nil {
			byDraft[*spec.DraftUUID] = t.UUID
		}
		value := taskCreatedValue{Title: t.Title, ProposalUUID: in.ProposalUUID, QuickTask: in.ProposalUUID == nil}
		batch.Activities = append(batch.Activities, store.Activity{UUID: DerivedUUID(t.UUID, "created"),
			CompanyUUID: t.CompanyUUID, ProjectUUID: t.ProjectUUID, TargetType: "task", TargetUUID: t.UUID, ActorType: in.Actor.Type,
			ActorUUID: in.Actor.UUID, Action: "created", Value: activities.MarshalValue(value), CreatedAt: now})
		out.Tasks = append(out.Tasks, MaterializedItem{UUID: t.UUID, Title: t.Title})
	}
	for i, spec := range in.Tasks {
		t := batch.Tasks[i]
		for _, d := range spec.DependsOnDraftUUIDs {
			dep, ok := byDraft[d]
			if !ok {
				out.Warnings = append(out.Warnings, fmt.Sprintf("Task %q: draftUuid %q not found in this batch", t.Title, d))
				continue
			}
			batch.Deps = append(batch.Deps, store.BatchDep{TaskUUID: t.UUID, DependsOnUUID: dep,
				Prefix: fmt.Sprintf("Task %q -> draftUuid %q: ", t.Title, d)})
		}
		for _, u := range spec.DependsOnTaskUUIDs {
			batch.Deps = append(batch.Deps, store.BatchDep{TaskUUID: t.UUID, DependsOnUUID: u,
				Prefix: fmt.Sprintf("Task %q -> taskUuid %q: ", t.Title, u)})
		}
	}
	var a *activities.Activities
	var warnings []string
	if workflow.GetVersion(ctx, oneActivityBatch, workflow.DefaultVersion, 1) == 1 {
		for i := range batch.Tasks {
			batch.Tasks[i].Version, batch.Tasks[i].ChangeID = wr.Version(), wr.ID
		}
		in := activities.TaskBatchStart{Batch: batch, Starts: taskStarts(batch.Tasks, batch.Criteria, in.ProjectName)}
		if err := persist(ctx, a.CreateTaskBatchAndStart, in).Get(ctx, &warnings); err != nil {
			return CreateTasksResult{}, fmt.Errorf("could not create the tasks: %w", err)
		}
		out.Warnings = append(out.Warnings, warnings...)
		return out, nil
	}
	if err := persist(ctx, a.CreateTaskBatch, batch).Get(ctx, &warnings); err != nil {
		return CreateTasksResult{}, fmt.Errorf("could not create the tasks: %w", err)
	}
	out.Warnings = append(out.Warnings, warnings...)
	for i := range batch.Tasks {
		batch.Tasks[i].Version, batch.Tasks[i].ChangeID = wr.Version(), wr.ID
	}
	if err := ensureTaskWorkflows(ctx, batch.Tasks, batch.Criteria, in.ProjectName); err != nil {
		return CreateTasksResult{}, err
	}
	return out, nil
}
