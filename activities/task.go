package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"
	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/store"
)

// TaskChange is everything one task command writes, applied in one transaction by PersistTask.
type TaskChange struct {
	UUID        string
	CompanyUUID string
	Version     int64
	At          time.Time

	// Row and Columns: set these columns of the task to Row's values.
	Row     store.Task
	Columns []string
	// ReplaceCriteria deletes every criterion of the task and inserts these.
	ReplaceCriteria []store.AcceptanceCriterion
	ReplacingAll    bool
	// Marks set the developer or admin fields of criteria (by uuid), per MarkColumns.
	Marks       []store.AcceptanceCriterion
	MarkColumns []string
	// ResetCriteria clears every mark of the task's criteria (SPEC 4.2 reset rule).
	ResetCriteria bool
	// AddDeps and RemoveDeps edit the task's dependencies; each add is checked (SPEC 4.3) and
	// its outcome reported, and a failed add does not fail the change.
	AddDeps    []string
	RemoveDeps []string
	// CountAddedDepsIn names the activity (by action) whose value gets "addedDependencies": the
	// number of AddDeps that passed their checks.
	CountAddedDepsIn string
	// Comment is a comment to add (chorus_report_work).
	Comment *store.Comment
	// Delete removes the task with its criteria, dependency edges and check-ins.
	Delete bool

	Activities    []ActivityRecord
	Notifications []Notify
}

// TaskOutcome reports what PersistTask could not do.
type TaskOutcome struct {
	// DepErrors holds, per AddDeps entry that failed, its message (SPEC 4.3 wording).
	DepErrors map[string]string
}

// ErrTaskClosed is the type of the error PersistTask returns when the row was closed behind the
// workflow's back (a proposal's revoke cascade): nothing is written.
const ErrTaskClosed = "chorus.TaskClosed"

// PersistTask applies a TaskChange in one transaction. A change whose version the row already
// has writes nothing; a change to a row closed by a revoke is refused with ErrTaskClosed.
func (a *Activities) PersistTask(ctx context.Context, c TaskChange) (TaskOutcome, error) {
	var out TaskOutcome
	err := a.Store.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = TaskOutcome{}
		if c.Delete {
			for _, q := range []*bun.DeleteQuery{
				tx.NewDelete().Table("task_dependencies").Where("task_uuid = ? OR depends_on_uuid = ?", c.UUID, c.UUID),
				tx.NewDelete().Table("acceptance_criteria").Where("task_uuid = ?", c.UUID),
				tx.NewDelete().Table("tasks").Where("uuid = ?", c.UUID),
			} {
				if _, err := q.Exec(ctx); err != nil {
					return err
				}
			}
			return nil
		}
		q := tx.NewUpdate().Table("tasks")
		if len(c.Columns) > 0 {
			row := c.Row
			q = tx.NewUpdate().Model(&row).ModelTableExpr("tasks").Column(c.Columns...)
		}
		closing := c.Row.Status == "closed"
		if !closing {
			q = q.Where("status <> 'closed'")
		}
		applied, err := bumpVersion(ctx, tx, "tasks", "Task", c.UUID, c.Version, c.At, q)
		if err != nil || !applied {
			if err == nil && !closing {
				var cur store.Task
				if serr := tx.NewSelect().Model(&cur).Column("status", "version").Where("uuid = ?", c.UUID).Scan(ctx); serr == nil &&
					cur.Status == "closed" && cur.Version < c.Version {
					return temporal.NewNonRetryableApplicationError("Task is closed", ErrTaskClosed, nil)
				}
			}
			return err
		}
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
		for i := range c.Marks {
			m := c.Marks[i]
			m.UpdatedAt = c.At
			if _, err := tx.NewUpdate().Model(&m).Column(append(c.MarkColumns, "updated_at")...).WherePK().
				Where("task_uuid = ?", c.UUID).Exec(ctx); err != nil {
				return err
			}
		}
		for _, dep := range c.AddDeps {
			// A savepoint keeps a failed add from spoiling the transaction on PostgreSQL.
			sp, err := tx.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := store.AddDependency(ctx, sp, c.CompanyUUID, c.UUID, dep, c.At); err != nil {
				_ = sp.Rollback()
				if !isDependencyError(err) {
					return err
				}
				if out.DepErrors == nil {
					out.DepErrors = map[string]string{}
				}
				out.DepErrors[dep] = err.Error()
				continue
			}
			if err := sp.Commit(); err != nil {
				return err
			}
		}
		if len(c.RemoveDeps) > 0 {
			if _, err := tx.NewDelete().Table("task_dependencies").Where("task_uuid = ?", c.UUID).
				Where("depends_on_uuid IN (?)", bun.List(c.RemoveDeps)).Exec(ctx); err != nil {
				return err
			}
		}
		if added := len(c.AddDeps) - len(out.DepErrors); c.CountAddedDepsIn != "" && added > 0 {
			for i := range c.Activities {
				if c.Activities[i].Action == c.CountAddedDepsIn {
					v := map[string]any{}
					_ = json.Unmarshal(c.Activities[i].Value, &v)
					v["addedDependencies"] = added
					c.Activities[i].Value = MarshalValue(v)
				}
			}
		}
		if c.Comment != nil {
			if _, err := tx.NewInsert().Model(c.Comment).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, c.CompanyUUID, c.Activities, c.Notifications)
	})
	return out, err
}

func isDependencyError(err error) bool {
	for _, e := range []error{store.ErrDepSelf, store.ErrDepNotFound, store.ErrDepProject, store.ErrDepCycle,
		store.ErrDepExists, store.ErrTaskNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Blockers reads the unresolved dependencies of a task (SPEC 4.3).
func (a *Activities) Blockers(ctx context.Context, taskUUID string) ([]store.TaskLink, error) {
	return a.Store.Blockers(ctx, taskUUID)
}

// TaskBatch is one chorus_create_tasks call, ids chosen by the workflow.
type TaskBatch struct {
	CompanyUUID string
	At          time.Time
	Tasks       []store.Task
	Criteria    []store.AcceptanceCriterion
	// Deps are the requested edges, in input order; each is checked and may fail alone.
	Deps       []BatchDep
	Activities []ActivityRecord
}

// BatchDep is one requested edge of a batch and how to word its failure.
type BatchDep struct {
	TaskUUID      string
	DependsOnUUID string
	// Prefix words a failure: `Task "<title>" -> draftUuid "<d>": `.
	Prefix string
}

// CreateTaskBatch writes a batch of quick tasks in ONE transaction: tasks, criteria, the
// dependencies that pass SPEC 4.3's checks and the "created" activities. It returns the
// warnings of the dependencies that failed. Rerunning it writes nothing twice.
func (a *Activities) CreateTaskBatch(ctx context.Context, b TaskBatch) ([]string, error) {
	var warnings []string
	err := a.Store.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		warnings = nil
		tasks := b.Tasks
		res, err := tx.NewInsert().Model(&tasks).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 && len(tasks) > 0 {
			return nil // an earlier attempt committed the whole batch
		}
		if len(b.Criteria) > 0 {
			acs := b.Criteria
			if _, err := tx.NewInsert().Model(&acs).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		for _, d := range b.Deps {
			sp, err := tx.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := store.AddDependency(ctx, sp, b.CompanyUUID, d.TaskUUID, d.DependsOnUUID, b.At); err != nil {
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
		return writeAudit(ctx, tx, b.CompanyUUID, b.Activities, nil)
	})
	return warnings, err
}
