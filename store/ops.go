package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// What chorus ops check and repair read and write (docs/write-path.md, "Check and repair").

// LifecycleRows are every idea, proposal and task row.
type LifecycleRows struct {
	Ideas     []Idea
	Proposals []Proposal
	Tasks     []Task
}

// AllLifecycleRows reads every idea, proposal and task row, oldest first.
func (s *Store) AllLifecycleRows(ctx context.Context) (LifecycleRows, error) {
	var out LifecycleRows
	if err := s.DB.NewSelect().Model(&out.Ideas).Order("created_at ASC", "uuid ASC").Scan(ctx); err != nil {
		return out, err
	}
	if err := s.DB.NewSelect().Model(&out.Proposals).Order("created_at ASC", "uuid ASC").Scan(ctx); err != nil {
		return out, err
	}
	err := s.DB.NewSelect().Model(&out.Tasks).Order("created_at ASC", "uuid ASC").Scan(ctx)
	return out, err
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
	switch x := f.Interface().(type) {
	case time.Time:
		return x.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	case string:
		return x
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

// RepairRow makes table's row model.UUID hold model's values in cols, version and change_id,
// inserting the row when it is missing (with created_at now); used by chorus ops repair to make
// a row agree with its running workflow. model is a pointer to the table's struct.
func (s *Store) RepairRow(ctx context.Context, table string, uuid string, model any, cols []string) error {
	cols = append(slices.Clone(cols), "version", "change_id", "updated_at")
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := Now()
		if f := reflect.ValueOf(model).Elem().FieldByName("UpdatedAt"); f.IsValid() {
			f.Set(reflect.ValueOf(now))
		}
		res, err := tx.NewUpdate().Model(model).ModelTableExpr(table).Column(cols...).Where("uuid = ?", uuid).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		if f := reflect.ValueOf(model).Elem().FieldByName("CreatedAt"); f.IsValid() && f.Interface().(time.Time).IsZero() {
			f.Set(reflect.ValueOf(now))
		}
		_, err = tx.NewInsert().Model(model).ModelTableExpr(table).Exec(ctx)
		return err
	})
}

// CriterionMarks are one criterion's two verdicts, as a task's workflow holds them.
type CriterionMarks struct {
	UUID      string
	Status    string
	DevStatus string
}

// RepairCriteria sets the verdicts of a task's criteria to what its workflow holds.
func (s *Store) RepairCriteria(ctx context.Context, taskUUID string, marks []CriterionMarks) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, m := range marks {
			if _, err := tx.NewUpdate().Table("acceptance_criteria").Set("status = ?", m.Status).Set("dev_status = ?", m.DevStatus).
				Set("updated_at = ?", Now()).Where("uuid = ?", m.UUID).Where("task_uuid = ?", taskUUID).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// RepairRoundStatuses sets the statuses of an idea's rounds to what its workflow holds.
func (s *Store) RepairRoundStatuses(ctx context.Context, ideaUUID string, statuses map[string]string) error {
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, id := range slices.Sorted(maps.Keys(statuses)) {
			if _, err := tx.NewUpdate().Table("elaboration_rounds").Set("status = ?", statuses[id]).Set("updated_at = ?", Now()).
				Where("uuid = ?", id).Where("idea_uuid = ?", ideaUUID).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}
