package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// What chorus ops check and repair read and write (docs/write-path.md, "Check and repair").

// LifecycleUUIDs are the uuids of every idea, proposal and task row, oldest first.
type LifecycleUUIDs struct {
	Ideas     []string
	Proposals []string
	Tasks     []string
}

// AllLifecycleUUIDs lists every idea, proposal and task row's uuid, oldest first (created_at,
// then uuid): what chorus ops check walks through, reading each row afresh as it gets to it.
func (s *Store) AllLifecycleUUIDs(ctx context.Context) (LifecycleUUIDs, error) {
	var out LifecycleUUIDs
	for _, t := range []struct {
		model any
		into  *[]string
	}{{(*Idea)(nil), &out.Ideas}, {(*Proposal)(nil), &out.Proposals}, {(*Task)(nil), &out.Tasks}} {
		if err := s.DB.NewSelect().Model(t.model).Column("uuid").Order("created_at ASC", "uuid ASC").Scan(ctx, t.into); err != nil {
			return out, err
		}
	}
	return out, nil
}

// IdeaRow reads one idea's row.
func (s *Store) IdeaRow(ctx context.Context, uuid string) (Idea, error) {
	var i Idea
	err := s.DB.NewSelect().Model(&i).Where("uuid = ?", uuid).Scan(ctx)
	return i, mapErr(err, "Idea")
}

// TaskRow reads one task's row.
func (s *Store) TaskRow(ctx context.Context, uuid string) (Task, error) {
	var t Task
	err := s.DB.NewSelect().Model(&t).Where("uuid = ?", uuid).Scan(ctx)
	return t, mapErr(err, "Task")
}

// TaskRows are task rows with their acceptance criteria.
type TaskRows struct {
	Tasks    []Task
	Criteria []AcceptanceCriterion
}

// TaskRows reads the rows of the tasks of uuids that exist, in the order of uuids, with their
// criteria.
func (s *Store) TaskRows(ctx context.Context, uuids []string) (TaskRows, error) {
	var out TaskRows
	if len(uuids) == 0 {
		return out, nil
	}
	var rows []Task
	if err := s.DB.NewSelect().Model(&rows).Where("uuid IN (?)", bun.List(uuids)).Scan(ctx); err != nil {
		return out, err
	}
	for _, u := range uuids {
		if i := slices.IndexFunc(rows, func(t Task) bool { return t.UUID == u }); i >= 0 {
			out.Tasks = append(out.Tasks, rows[i])
		}
	}
	if len(out.Tasks) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Model(&out.Criteria).Where("task_uuid IN (?)", bun.List(uuids)).
		Order("task_uuid ASC", "sort_order ASC").Scan(ctx)
	return out, err
}

// LifecycleProjectExists reports whether the project uuid is in this database (ops repair: a
// workflow's entity of a project the database lacks is not this deployment's to write).
func (s *Store) LifecycleProjectExists(ctx context.Context, uuid string) (bool, error) {
	return s.DB.NewSelect().Model((*Project)(nil)).Where("uuid = ?", uuid).Exists(ctx)
}

// LifecycleRowExists reports whether the row of a lifecycle entity exists: kind is "idea",
// "proposal" or "task" (the entity's workflow id prefix), uuid its uuid. It tells a workflow
// that ended under a live row (a divergence, which chorus ops repair resolves) from an entity
// that is gone (docs/write-path.md, "Check and repair"). An unknown kind is an error.
func (s *Store) LifecycleRowExists(ctx context.Context, kind, uuid string) (bool, error) {
	var model any
	switch kind {
	case "idea":
		model = (*Idea)(nil)
	case "proposal":
		model = (*Proposal)(nil)
	case "task":
		model = (*Task)(nil)
	default:
		return false, fmt.Errorf("store: %q is not a lifecycle entity (idea, proposal, task)", kind)
	}
	return s.DB.NewSelect().Model(model).Where("uuid = ?", uuid).Exists(ctx)
}

// ColumnValues renders the given columns of a model (a bun struct, or a pointer to one) as
// comparable text: null for a nil pointer, times in UTC to the microsecond (what both databases
// keep), lists as JSON. Columns the model lacks are an error.
func ColumnValues(model any, cols []string) (map[string]string, error) {
	v := reflect.Indirect(reflect.ValueOf(model))
	byColumn := map[string]reflect.Value{}
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("bun"), ",")
		if name != "" && name != "-" {
			byColumn[name] = v.Field(i)
		}
	}
	out := make(map[string]string, len(cols))
	for _, c := range cols {
		f, ok := byColumn[c]
		if !ok {
			return nil, fmt.Errorf("%s has no column %s", v.Type(), c)
		}
		out[c] = renderValue(f)
	}
	return out, nil
}

func renderValue(f reflect.Value) string {
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return "null"
		}
		f = f.Elem()
	}
	if f.Kind() == reflect.String { // a string or a vocab status
		return f.String()
	}
	if x, ok := f.Interface().(time.Time); ok {
		return x.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	if f.Kind() == reflect.Slice {
		if f.Len() == 0 {
			return "[]"
		}
		b, _ := json.Marshal(f.Interface())
		return string(b)
	}
	return fmt.Sprint(f.Interface())
}

// RowGuard is the row a repair expects to overwrite, as chorus ops check last saw it: its
// version and change id, or Missing when there was no row. A repair applies only while the row
// is still exactly there, so it never overwrites a change made after the check (docs/write-path.md,
// "Check and repair").
type RowGuard struct {
	Missing  bool
	Version  int64
	ChangeID string
}

// ErrRowMoved is RepairRow's error when the row is no longer where its guard expects it (a
// change landed, or the row appeared or went): nothing was written.
var ErrRowMoved = errors.New("the row changed since it was checked; nothing was written")

// RowRepair makes one lifecycle row agree with its running workflow (chorus ops repair).
type RowRepair struct {
	// Table is "ideas", "proposals" or "tasks"; UUID is the row's uuid.
	Table string
	UUID  string
	// Model is a pointer to the table's struct holding the workflow's values (its projection).
	Model any
	// Columns are the columns the workflow owns; version, change_id and updated_at are always
	// written too.
	Columns []string
	// Guard is where the row must be for the repair to apply.
	Guard RowGuard
	// Criteria (tasks) are the verdicts to set on the task's criteria rows that exist; Rounds
	// (ideas) are the statuses to set on the idea's rounds that exist, by round uuid. Rows that
	// do not exist are not created: their text lived only in the database.
	Criteria []CriterionMarks
	Rounds   map[string]string
	// Drafts (proposals) are the document and task drafts the workflow holds, by uuid, in
	// order: the row keeps those of its drafts, in that order, and drops the others (a change
	// the workflow no longer holds, after a reset, added them). Drafts the row lacks are not
	// created: their text lived only in the database. nil leaves the drafts alone.
	Drafts *DraftLists
	// Undo, when set, has the repair mark what it undoes (Rollback).
	Undo *Rollback
}

// Rollback is what a repair that sets a row back to its workflow's version and change id (in
// RowRepair.Model) records of the applied changes it undoes, if any (docs/write-path.md, "Check
// and repair"): their change journal entries are marked rolled back, so they no longer count as
// applied; the requestId ledger rows of the calls that made them answer RolledBackResult (once
// none of a call's changes stands); and Activity is written with {fromVersion, toVersion,
// undoneChanges, undoneRequests}.
type Rollback struct {
	Activity Activity
	// Undone is set by RepairRow: how many applied changes the repair undid.
	Undone int
}

// DraftLists are a proposal's draft uuids, in order.
type DraftLists struct {
	Documents, Tasks []string
}

// RepairRow applies r in one transaction: when r.Guard holds (the row is at Guard.Version with
// Guard.ChangeID, or missing when Guard.Missing) it updates the row's owned columns, version,
// change_id and updated_at (now), or inserts the row with created_at now when it was missing,
// and sets the verdicts and statuses of the criteria and rounds that exist; a task row's
// dependents and the row itself get their unresolved dependencies recounted. When the guard does
// not hold it writes nothing and returns ErrRowMoved.
func (s *Store) RepairRow(ctx context.Context, r RowRepair) error {
	cols := append(slices.Clone(r.Columns), "version", "change_id", "updated_at")
	task, _ := r.Model.(*Task)
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if task != nil {
			// A task row may change status either way here: the project's lock first, as in
			// every write that recounts unresolved dependencies (store/unresolved.go).
			if err := lockProject(ctx, tx, task.ProjectUUID); err != nil {
				return err
			}
		}
		now := Now()
		if f := reflect.ValueOf(r.Model).Elem().FieldByName("UpdatedAt"); f.IsValid() {
			f.Set(reflect.ValueOf(now))
		}
		var res sql.Result
		var err error
		if r.Guard.Missing {
			if f := reflect.ValueOf(r.Model).Elem().FieldByName("CreatedAt"); f.IsValid() && f.Interface().(time.Time).IsZero() {
				// The row's creation is its version-1 change, which the change journal dates; the
				// time of the repair only when the journal has no record of it (lists order by it).
				created := now
				var at []time.Time
				if err := tx.NewSelect().Table("change_journal").Column("applied_at").Where("entity_uuid = ?", r.UUID).
					Where("version = 1").Limit(1).Scan(ctx, &at); err != nil {
					return err
				}
				if len(at) == 1 && !at[0].IsZero() {
					created = at[0].UTC()
				}
				f.Set(reflect.ValueOf(created))
			}
			res, err = tx.NewInsert().Model(r.Model).ModelTableExpr(r.Table).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
		} else {
			res, err = tx.NewUpdate().Model(r.Model).ModelTableExpr(r.Table).Column(cols...).Where("uuid = ?", r.UUID).
				Where("version = ?", r.Guard.Version).Where("change_id = ?", r.Guard.ChangeID).Exec(ctx)
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return ErrRowMoved
		}
		if task != nil {
			// The row's status may have moved between resolved and unresolved, in either direction:
			// its dependents are recounted, and the row itself (a re-inserted row has no edges
			// left, and counts none).
			if err := recountDependents(ctx, tx, r.UUID); err != nil {
				return err
			}
			if err := recount(ctx, tx, []string{r.UUID}); err != nil {
				return err
			}
		}
		for _, m := range r.Criteria {
			if _, err := tx.NewUpdate().Table("acceptance_criteria").Set("status = ?", m.Status).Set("dev_status = ?", m.DevStatus).
				Set("updated_at = ?", now).Where("uuid = ?", m.UUID).Where("task_uuid = ?", r.UUID).Exec(ctx); err != nil {
				return err
			}
		}
		if r.Drafts != nil && !r.Guard.Missing {
			if err := keepDrafts(ctx, tx, r.UUID, *r.Drafts, now); err != nil {
				return err
			}
		}
		for _, id := range slices.Sorted(maps.Keys(r.Rounds)) {
			if _, err := tx.NewUpdate().Table("elaboration_rounds").Set("status = ?", r.Rounds[id]).Set("updated_at = ?", now).
				Where("uuid = ?", id).Where("idea_uuid = ?", r.UUID).Exec(ctx); err != nil {
				return err
			}
		}
		if r.Undo != nil {
			m, err := ColumnValues(r.Model, []string{"version", "change_id"})
			if err != nil {
				return err
			}
			keep, err := strconv.ParseInt(m["version"], 10, 64)
			if err != nil {
				return err
			}
			return rollBack(ctx, tx, r, keep, m["change_id"], now)
		}
		return nil
	})
}

// rollBack marks what a repair that sets the row r.UUID back to version keep (change keepID)
// undoes: every standing journal entry of the row past it, the ledger rows of their calls, and
// r.Undo's activity with {fromVersion, toVersion, undoneChanges, undoneRequests}.
func rollBack(ctx context.Context, tx bun.Tx, r RowRepair, keep int64, keepID string, now time.Time) error {
	var undone []ChangeJournal
	if err := tx.NewSelect().Model(&undone).Where("entity_uuid = ?", r.UUID).Where("rolled_back_at IS NULL").
		Where("(version > ? OR (version = ? AND change_id <> ?))", keep, keep, keepID).Order("version ASC").Scan(ctx); err != nil {
		return err
	}
	if len(undone) == 0 {
		return nil // nothing Chorus applied is undone: the row only differed (times, a hand edit)
	}
	r.Undo.Undone = len(undone)
	changes, requests := []string{}, 0
	for _, j := range undone {
		changes = append(changes, j.ChangeID)
		if _, err := tx.NewUpdate().Model((*ChangeJournal)(nil)).Set("rolled_back_at = ?", now).
			Where("change_id = ?", j.ChangeID).Where("entity_uuid = ?", j.EntityUUID).Exec(ctx); err != nil {
			return err
		}
	}
	for _, j := range undone {
		if j.UpdateID == "" {
			continue
		}
		// A call whose change moved other rows too (a move, a revoke) stays applied while one stands.
		stands, err := tx.NewSelect().Model((*ChangeJournal)(nil)).Where("update_key = ?", j.UpdateKey).
			Where("rolled_back_at IS NULL").Exists(ctx)
		if err != nil {
			return err
		}
		if !stands {
			if err := markRolledBack(ctx, tx, j.UpdateID); err != nil {
				return err
			}
			requests++
		}
	}
	act := r.Undo.Activity
	act.Value = jsonValue(map[string]any{"fromVersion": r.Guard.Version, "toVersion": keep, "undoneChanges": changes,
		"undoneRequests": requests})
	act.CreatedAt = now
	_, err := tx.NewInsert().Model(&act).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
	return err
}

// CriterionMarks are one criterion's two verdicts, as a task's workflow holds them.
type CriterionMarks struct {
	UUID      string
	Status    string
	DevStatus string
}

// keepDrafts rewrites a proposal's draft lists to the drafts in keep that it has, in keep's
// order. Draft content is left as it is: a dependency on a dropped draft stays, and validation
// reports it (E-DEP-UNKNOWN) as it does any unknown dependency.
func keepDrafts(ctx context.Context, tx bun.Tx, uuid string, keep DraftLists, now time.Time) error {
	var p Proposal
	if err := tx.NewSelect().Model(&p).Column("document_drafts", "task_drafts").Where("uuid = ?", uuid).Scan(ctx); err != nil {
		return err
	}
	docs := make(map[string]DocumentDraft, len(p.DocumentDrafts))
	for _, d := range p.DocumentDrafts {
		docs[d.UUID] = d
	}
	tasks := make(map[string]TaskDraft, len(p.TaskDrafts))
	for _, t := range p.TaskDrafts {
		tasks[t.UUID] = t
	}
	var keptDocs []DocumentDraft
	for _, id := range keep.Documents {
		if d, ok := docs[id]; ok {
			keptDocs = append(keptDocs, d)
		}
	}
	var keptTasks []TaskDraft
	for _, id := range keep.Tasks {
		if t, ok := tasks[id]; ok {
			keptTasks = append(keptTasks, t)
		}
	}
	p.DocumentDrafts, p.TaskDrafts, p.UpdatedAt = keptDocs, keptTasks, now
	_, err := tx.NewUpdate().Model(&p).Column("document_drafts", "task_drafts", "updated_at").Where("uuid = ?", uuid).Exec(ctx)
	return err
}
