package store

import (
	"github.com/chorus-dev/chorus/vocab"

	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// TaskChange is everything one task command writes, in one transaction (docs/write-path.md).
type TaskChange struct {
	Write
	UUID        string `json:"uuid"`
	CompanyUUID string `json:"companyUuid"`
	ProjectUUID string `json:"projectUuid"`
	// ProposalUUID is the task's proposal (nil: none), whose input ideas refresh their progress.
	ProposalUUID *string `json:"proposalUuid,omitempty"`

	// Patch sets fields of the task's row.
	Patch TaskPatch `json:"patch"`
	// ReplaceCriteria deletes every criterion of the task and inserts these (ReplacingAll).
	ReplaceCriteria []AcceptanceCriterion `json:"replaceCriteria"`
	ReplacingAll    bool                  `json:"replacingAll"`
	// Verdicts mark criteria (by uuid): the developer's self-check when SelfCheck, else the admin's
	// verification.
	Verdicts  []Verdict `json:"verdicts,omitempty"`
	SelfCheck bool      `json:"selfCheck,omitempty"`
	// ResetCriteria clears every mark of the task's criteria (the reset rule of docs/rules.md §5.2).
	ResetCriteria bool `json:"resetCriteria"`
	// AddDeps and RemoveDeps edit the task's dependencies; each add is checked (docs/rules.md §5.3) and
	// its outcome reported, and a failed add does not fail the change.
	AddDeps    []string `json:"addDeps"`
	RemoveDeps []string `json:"removeDeps"`
	// CountAddedDepsIn names the activity (by action) whose value gets "addedDependencies": the
	// number of AddDeps that passed their checks.
	CountAddedDepsIn string `json:"countAddedDepsIn"`
	// Comment is a comment to add (chorus_report_work).
	Comment *Comment `json:"comment"`
	// ReportIn names the activity (by action) whose value gets "report": the comment's content.
	// With it and Mentions.FromComment, a work report travels once in the change, as the
	// comment, instead of three times (docs/write-path.md, "Bounded state and payloads").
	ReportIn string `json:"reportIn"`
	// Mentions are recorded with the change (docs/rules.md §7.3): a work report's, or the new
	// ones of a description edit.
	Mentions *MentionText `json:"mentions"`
	// Delete removes the task with its criteria and dependency edges.
	Delete bool `json:"delete"`

	Activities    []Activity   `json:"activities"`
	Notifications []NotifySpec `json:"notifications"`

	// The shape of a change before Patch and Verdicts: a row with the columns to set, and
	// criterion rows with the columns to set. An activity an older worker scheduled may be
	// retried by this one with its old input, which these fields keep decoding; new changes
	// leave them empty.
	LegacySet         *Task                 `json:"set,omitempty"`
	LegacyColumns     []string              `json:"columns,omitempty"`
	LegacyMarks       []AcceptanceCriterion `json:"marks,omitempty"`
	LegacyMarkColumns []string              `json:"markColumns,omitempty"`
}

// row is the task row's new values and the columns they go to.
func (c TaskChange) row() (Task, []string) {
	if c.LegacySet != nil {
		return *c.LegacySet, c.LegacyColumns
	}
	return c.Patch.row()
}

// marks are the criterion rows the change marks and the columns it sets on them.
func (c TaskChange) marks() ([]AcceptanceCriterion, []string) {
	if len(c.LegacyMarks) > 0 {
		return c.LegacyMarks, c.LegacyMarkColumns
	}
	return markRows(c.Verdicts, c.SelfCheck)
}

// NewStatus is the status the change moves the task to, "" when it leaves the status alone.
func (c TaskChange) NewStatus() vocab.TaskStatus {
	if row, cols := c.row(); slices.Contains(cols, "status") {
		return row.Status
	}
	return ""
}

// Proposal is the task's proposal, nil for none.
func (c TaskChange) Proposal() *string {
	if c.ProposalUUID == nil && c.LegacySet != nil {
		return c.LegacySet.ProposalUUID
	}
	return c.ProposalUUID
}

// TaskOutcome reports what ApplyTaskChange could not do.
type TaskOutcome struct {
	// DepErrors holds, per AddDeps entry that failed, its message (docs/rules.md §5.3 wording).
	DepErrors map[string]string `json:"depErrors"`
}

// ApplyTaskChange applies c by the write protocol. A retry of an applied change writes nothing
// and reports the dependency outcome recorded with it; anything else is a *ProjectionConflict.
func (s *Store) ApplyTaskChange(ctx context.Context, c TaskChange) (TaskOutcome, error) {
	var out TaskOutcome
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		out, err = applyTaskChange(ctx, tx, c)
		return err
	})
	return out, err
}

func applyTaskChange(ctx context.Context, tx bun.Tx, c TaskChange) (TaskOutcome, error) {
	row, cols := c.row()
	// A change that can move a count of unresolved dependencies (store/unresolved.go) holds
	// the project's lock from its start, before the task's row, like every such write.
	resolves := slices.Contains(cols, "status") && ResolvedStatus(row.Status)
	if c.Delete || resolves || len(c.AddDeps) > 0 || len(c.RemoveDeps) > 0 {
		if err := lockProject(ctx, tx, c.ProjectUUID); err != nil {
			return TaskOutcome{}, err
		}
	}
	if c.Delete {
		return TaskOutcome{}, deleteTask(ctx, tx, c)
	}
	if err := c.Mentions.readPrevious(ctx, tx, "tasks"); err != nil {
		return TaskOutcome{}, err
	}
	var q *bun.UpdateQuery
	if len(cols) > 0 {
		q = tx.NewUpdate().Model(&row).ModelTableExpr("tasks").Column(cols...)
	}
	applied, err := claim(ctx, tx, "tasks", c.UUID, c.Write, q)
	if err != nil {
		return TaskOutcome{}, err
	}
	if !applied {
		return recordedDepErrors(ctx, tx, c), nil
	}
	if err := writeCriteria(ctx, tx, c); err != nil {
		return TaskOutcome{}, err
	}
	out, err := editDependencies(ctx, tx, c, resolves)
	if err != nil {
		return out, err
	}
	return out, writeTaskRecords(ctx, tx, c, out)
}

// deleteTask removes the task's row with its criteria and edges. The task's edges go with its
// row: its dependents are read first, and recounted after.
func deleteTask(ctx context.Context, tx bun.Tx, c TaskChange) error {
	deps, err := dependents(ctx, tx, []string{c.UUID})
	if err != nil {
		return err
	}
	applied, err := claimDelete(ctx, tx, "tasks", c.UUID, c.Write)
	if err != nil || !applied {
		return err
	}
	for _, q := range []*bun.DeleteQuery{
		tx.NewDelete().Table("task_dependencies").Where("task_uuid = ? OR depends_on_uuid = ?", c.UUID, c.UUID),
		tx.NewDelete().Table("acceptance_criteria").Where("task_uuid = ?", c.UUID),
	} {
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	return recount(ctx, tx, deps)
}

// writeCriteria replaces, resets and marks the task's criteria as c says.
func writeCriteria(ctx context.Context, tx bun.Tx, c TaskChange) error {
	if c.ReplacingAll {
		if _, err := tx.NewDelete().Table("acceptance_criteria").Where("task_uuid = ?", c.UUID).Exec(ctx); err != nil {
			return err
		}
		if len(c.ReplaceCriteria) > 0 {
			rows := c.ReplaceCriteria
			if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return err
			}
		}
	}
	if c.ResetCriteria {
		if _, err := tx.NewUpdate().Table("acceptance_criteria").
			Set("status = 'pending'").Set("evidence = NULL").Set("marked_by_type = NULL").Set("marked_by = NULL").Set("marked_at = NULL").
			Set("dev_status = 'pending'").Set("dev_evidence = NULL").Set("dev_marked_by_type = NULL").Set("dev_marked_by = NULL").
			Set("dev_marked_at = NULL").Set("updated_at = ?", c.At).Where("task_uuid = ?", c.UUID).Exec(ctx); err != nil {
			return err
		}
	}
	marks, cols := c.marks()
	for i := range marks {
		m := marks[i]
		m.UpdatedAt = c.At
		if _, err := tx.NewUpdate().Model(&m).Column(append(slices.Clone(cols), "updated_at")...).WherePK().
			Where("task_uuid = ?", c.UUID).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// editDependencies adds and removes the task's edges, each add checked alone, and recounts the
// counts the change moves: the task's when its edges changed, its dependents' when it resolves.
func editDependencies(ctx context.Context, tx bun.Tx, c TaskChange, resolves bool) (TaskOutcome, error) {
	var out TaskOutcome
	for _, dep := range c.AddDeps {
		// A savepoint keeps a failed add from spoiling the transaction on PostgreSQL.
		sp, err := tx.BeginTx(ctx, nil)
		if err != nil {
			return out, err
		}
		if err := AddDependency(ctx, sp, c.CompanyUUID, c.UUID, dep, c.At); err != nil {
			_ = sp.Rollback()
			if !isDependencyError(err) {
				return out, err
			}
			if out.DepErrors == nil {
				out.DepErrors = map[string]string{}
			}
			out.DepErrors[dep] = err.Error()
			continue
		}
		if err := sp.Commit(); err != nil {
			return out, err
		}
	}
	if len(c.RemoveDeps) > 0 {
		if _, err := tx.NewDelete().Table("task_dependencies").Where("task_uuid = ?", c.UUID).
			Where("depends_on_uuid IN (?)", bun.List(c.RemoveDeps)).Exec(ctx); err != nil {
			return out, err
		}
	}
	if len(c.AddDeps) > 0 || len(c.RemoveDeps) > 0 {
		if err := recount(ctx, tx, []string{c.UUID}); err != nil {
			return out, err
		}
	}
	if resolves {
		if err := recountDependents(ctx, tx, c.UUID); err != nil {
			return out, err
		}
	}
	return out, nil
}

// writeTaskRecords inserts what the change records beside the row: its comment, activities,
// notifications and mentions.
func writeTaskRecords(ctx context.Context, tx bun.Tx, c TaskChange, out TaskOutcome) error {
	acts := c.Activities
	if c.CountAddedDepsIn != "" {
		acts = withDepOutcome(acts, c, out)
	}
	if c.ReportIn != "" && c.Comment != nil {
		acts = withValue(acts, c.ReportIn, "report", c.Comment.Content)
	}
	if c.Mentions != nil && c.Mentions.FromComment && c.Comment != nil {
		c.Mentions.Text = c.Comment.Content
	}
	if c.Comment != nil {
		if _, err := tx.NewInsert().Model(c.Comment).Exec(ctx); err != nil {
			return err
		}
	}
	if err := writeAudit(ctx, tx, c.CompanyUUID, acts, c.Notifications); err != nil {
		return err
	}
	return writeMentions(ctx, tx, c.CompanyUUID, c.Mentions)
}

// withDepOutcome records, in the value of the activity named by c.CountAddedDepsIn, how many
// dependencies were added and why the others failed, so a retry can report the same outcome.
func withDepOutcome(acts []Activity, c TaskChange, out TaskOutcome) []Activity {
	acts = append([]Activity(nil), acts...)
	for i := range acts {
		if acts[i].Action != c.CountAddedDepsIn {
			continue
		}
		v := map[string]any{}
		_ = json.Unmarshal(acts[i].Value, &v)
		if added := len(c.AddDeps) - len(out.DepErrors); added > 0 {
			v["addedDependencies"] = added
		}
		if len(out.DepErrors) > 0 {
			v["dependencyErrors"] = out.DepErrors
		}
		acts[i].Value, _ = json.Marshal(v)
	}
	return acts
}

// withValue sets key to v in the value of the activities of action.
func withValue(acts []Activity, action, key string, v any) []Activity {
	acts = append([]Activity(nil), acts...)
	for i := range acts {
		if acts[i].Action != action {
			continue
		}
		m := map[string]any{}
		_ = json.Unmarshal(acts[i].Value, &m)
		m[key] = v
		acts[i].Value, _ = json.Marshal(m)
	}
	return acts
}

// recordedDepErrors reads back the dependency outcome an applied change recorded.
func recordedDepErrors(ctx context.Context, tx bun.Tx, c TaskChange) TaskOutcome {
	var out TaskOutcome
	for _, a := range c.Activities {
		if a.Action != c.CountAddedDepsIn || c.CountAddedDepsIn == "" {
			continue
		}
		var row Activity
		if tx.NewSelect().Model(&row).Where("uuid = ?", a.UUID).Scan(ctx) != nil {
			continue
		}
		var v struct {
			DependencyErrors map[string]string `json:"dependencyErrors"`
		}
		if json.Unmarshal(row.Value, &v) == nil {
			out.DepErrors = v.DependencyErrors
		}
	}
	return out
}

func isDependencyError(err error) bool {
	for _, e := range []error{ErrDepSelf, ErrDepNotFound, ErrDepProject, ErrDepCycle, ErrDepExists, ErrTaskNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// lockProject serializes, per project, the changes whose checks read more than their own rows
// (a dependency cycle spans tasks) and those that recount unresolved dependencies
// (store/unresolved.go): on PostgreSQL it takes the project row's lock for the rest of the
// transaction; SQLite's one writer at a time needs nothing more (mcp TestConcurrentGuardsHoldOnEveryDatabase).
// The lock is FOR NO KEY UPDATE: it excludes the other holders, but not the inserts whose foreign
// key points at the project (an idea, a task batch without dependencies, a document), whose key
// check takes FOR KEY SHARE (TestProjectLockLetsReferringInsertsThrough).
func lockProject(ctx context.Context, tx bun.Tx, projectUUID string) error {
	return lockRowAs(ctx, tx, "projects", projectUUID, "NO KEY UPDATE")
}

// lockRow takes table's row uuid FOR UPDATE on PostgreSQL; on SQLite transactions already
// hold the database's write lock (immediate transactions).
func lockRow(ctx context.Context, tx bun.Tx, table, uuid string) error {
	return lockRowAs(ctx, tx, table, uuid, "UPDATE")
}

// lockRowAs takes table's row uuid FOR strength (UPDATE, NO KEY UPDATE) on PostgreSQL.
func lockRowAs(ctx context.Context, tx bun.Tx, table, uuid, strength string) error {
	if !strings.EqualFold(tx.Dialect().Name().String(), "pg") {
		return nil
	}
	_, err := tx.NewSelect().Table(table).Column("uuid").Where("uuid = ?", uuid).For(strength).Exec(ctx)
	return err
}

// TaskBatch is one chorus_create_tasks call, ids chosen by the workflow from its change.
type TaskBatch struct {
	Write
	CompanyUUID string                `json:"companyUuid"`
	ProjectUUID string                `json:"projectUuid"`
	Tasks       []Task                `json:"tasks"`
	Criteria    []AcceptanceCriterion `json:"criteria"`
	// Deps are the requested edges, in input order; each is checked and may fail alone.
	Deps       []BatchDep `json:"deps"`
	Activities []Activity `json:"activities"`
}

// BatchDep is one requested edge of a batch and how to word its failure.
type BatchDep struct {
	TaskUUID      string `json:"taskUuid"`
	DependsOnUUID string `json:"dependsOnUuid"`
	// Prefix words a failure: `Task "<title>" -> draftUuid "<d>": `.
	Prefix string `json:"prefix"`
}

// CreateTaskBatch writes a batch of tasks in ONE transaction: the tasks (version 1, marked with
// the batch's change id), criteria, the dependencies that pass the checks of docs/rules.md §5.3 and the
// "created" activities. It returns the warnings of the dependencies that failed; a retry of a
// committed batch writes nothing and returns the same warnings, which the first activity row
// records.
func (s *Store) CreateTaskBatch(ctx context.Context, b TaskBatch) ([]string, error) {
	var warnings []string
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		warnings = nil
		if len(b.Tasks) == 0 {
			return nil
		}
		tasks := b.Tasks
		for i := range tasks {
			tasks[i].Version, tasks[i].ChangeID = b.Version(), b.ID
		}
		// Edges to existing tasks read their statuses for the new tasks' counts: the project's
		// lock comes first, as in every write that counts (store/unresolved.go).
		if len(b.Deps) > 0 {
			if err := lockProject(ctx, tx, b.ProjectUUID); err != nil {
				return err
			}
		}
		applied, err := claimNew(ctx, tx, "tasks", tasks[0].UUID, b.Write, tx.NewInsert().Model(&tasks))
		if err != nil {
			return err
		}
		if !applied {
			warnings = recordedWarnings(ctx, tx, b)
			return nil
		}
		if len(b.Criteria) > 0 {
			acs := b.Criteria
			if _, err := tx.NewInsert().Model(&acs).Exec(ctx); err != nil {
				return err
			}
		}
		for _, d := range b.Deps {
			sp, err := tx.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := AddDependency(ctx, sp, b.CompanyUUID, d.TaskUUID, d.DependsOnUUID, b.At); err != nil {
				_ = sp.Rollback()
				if !isDependencyError(err) {
					return err
				}
				warnings = append(warnings, d.Prefix+err.Error())
				continue
			}
			if err := sp.Commit(); err != nil {
				return err
			}
		}
		if len(b.Deps) > 0 {
			var from []string
			for _, d := range b.Deps {
				from = append(from, d.TaskUUID)
			}
			if err := recount(ctx, tx, slices.Compact(slices.Sorted(slices.Values(from)))); err != nil {
				return err
			}
		}
		acts := append([]Activity(nil), b.Activities...)
		if len(acts) > 0 && len(warnings) > 0 {
			v := map[string]any{}
			_ = json.Unmarshal(acts[0].Value, &v)
			v["batchWarnings"] = warnings
			acts[0].Value, _ = json.Marshal(v)
		}
		return writeAudit(ctx, tx, b.CompanyUUID, acts, nil)
	})
	return warnings, err
}

func recordedWarnings(ctx context.Context, tx bun.Tx, b TaskBatch) []string {
	if len(b.Activities) == 0 {
		return nil
	}
	var row Activity
	if tx.NewSelect().Model(&row).Where("uuid = ?", b.Activities[0].UUID).Scan(ctx) != nil {
		return nil
	}
	var v struct {
		BatchWarnings []string `json:"batchWarnings"`
	}
	_ = json.Unmarshal(row.Value, &v)
	return v.BatchWarnings
}
