package store

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// CheckMark is what a chorus ops check pass found in agreement for one entity: its workflow's run
// and its row's version and change id (docs/write-path.md, "Check and repair"). An incremental
// pass compares again only the entities whose row or run differ from their mark.
type CheckMark struct {
	bun.BaseModel `bun:"table:ops_check_marks"`
	WorkflowID    string    `bun:"workflow_id,pk"`
	RunID         string    `bun:"run_id"`
	RowVersion    int64     `bun:"row_version"`
	RowChangeID   string    `bun:"row_change_id"`
	CheckedAt     time.Time `bun:"checked_at"`
}

// markBatch bounds the rows one statement of SaveCheckMarks writes or deletes.
const markBatch = 500

// SaveCheckMarks records marks (replacing an entity's earlier one) and forgets the marks of the
// workflow ids in clear (entities a pass did not find in agreement, or that are gone), a batch
// of rows per statement.
func (s *Store) SaveCheckMarks(ctx context.Context, marks []CheckMark, clear []string) error {
	for from := 0; from < len(marks); from += markBatch {
		batch := marks[from:min(from+markBatch, len(marks))]
		if _, err := s.DB.NewInsert().Model(&batch).On("CONFLICT (workflow_id) DO UPDATE").
			Set("run_id = EXCLUDED.run_id").Set("row_version = EXCLUDED.row_version").
			Set("row_change_id = EXCLUDED.row_change_id").Set("checked_at = EXCLUDED.checked_at").Exec(ctx); err != nil {
			return err
		}
	}
	for from := 0; from < len(clear); from += markBatch {
		batch := clear[from:min(from+markBatch, len(clear))]
		if _, err := s.DB.NewDelete().Model((*CheckMark)(nil)).Where("workflow_id IN (?)", bun.List(batch)).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// UnmarkedRows returns the workflow ids ("idea/<uuid>", ...) of the idea, proposal and task rows
// that have no check mark, or whose version or change id differs from their mark: the rows that
// moved since a pass last found them in agreement.
func (s *Store) UnmarkedRows(ctx context.Context) ([]string, error) {
	var out []string
	for _, t := range []struct{ table, prefix string }{{"ideas", "idea/"}, {"proposals", "proposal/"}, {"tasks", "task/"}} {
		var ids []string
		err := s.DB.NewSelect().TableExpr("? AS x", bun.Ident(t.table)).ColumnExpr("x.uuid").
			Join("LEFT JOIN ops_check_marks AS m ON m.workflow_id = ? || x.uuid", t.prefix).
			Where("m.workflow_id IS NULL OR m.row_version <> x.version OR m.row_change_id <> x.change_id").
			Scan(ctx, &ids)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out = append(out, t.prefix+id)
		}
	}
	return out, nil
}

// MarkedRuns returns, for the workflow ids that have a check mark, the run it was made on.
func (s *Store) MarkedRuns(ctx context.Context, workflowIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(workflowIDs))
	for from := 0; from < len(workflowIDs); from += markBatch {
		var marks []CheckMark
		batch := workflowIDs[from:min(from+markBatch, len(workflowIDs))]
		if err := s.DB.NewSelect().Model(&marks).Column("workflow_id", "run_id").Where("workflow_id IN (?)", bun.List(batch)).
			Scan(ctx); err != nil {
			return nil, err
		}
		for _, m := range marks {
			out[m.WorkflowID] = m.RunID
		}
	}
	return out, nil
}
