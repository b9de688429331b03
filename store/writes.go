package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
)

// The write protocol of lifecycle rows (docs/write-path.md, "One write protocol"): a change
// applies only from the version it expects, a retried change is recognised by its id, and
// anything else is a conflict, never a success.

// Write is the protocol part of one change to a lifecycle row.
type Write struct {
	// ID is the change id, "<workflow id>#<new version>@<key>", key being the first 16 hex digits
	// of Update (or the run id for a change no update made); the row keeps it once applied.
	ID string `json:"id"`
	// Update is the update key of the workflow update that made the change (see UpdateKey), ""
	// for none. The change journal keeps it, so a requestId's update is known to be applied after
	// its workflow forgot it.
	Update string `json:"update"`
	// UpdateID is the id of that update ("" for none; "" too in activity inputs written before
	// it existed): the change journal keeps it, so a repair that rolls the change back finds the
	// requestId ledger row of the call that made it.
	UpdateID string `json:"updateId,omitempty"`
	// Expect is the version the row must be at; 0 means the change creates the row.
	Expect int64 `json:"expect"`
	// At is the change's time: the row's updated_at (and created_at for a create).
	At time.Time `json:"at"`
}

// Version is the row's version once the change is applied.
func (w Write) Version() int64 { return w.Expect + 1 }

// ErrProjectionConflict matches every *ProjectionConflict.
var ErrProjectionConflict = errors.New("the row is not where the change expects it")

// ProjectionConflict says a lifecycle row is not at the version a change expects, or carries
// another change's id: the row and its workflow disagree. Nothing was written.
type ProjectionConflict struct {
	Table string `json:"table"`
	UUID  string `json:"uuid"`
	Write Write  `json:"write"`
	// Found is false when the row does not exist.
	Found    bool   `json:"found"`
	Version  int64  `json:"version"`
	ChangeID string `json:"changeId"`
	// Status is the row's status column, where it has one.
	Status string `json:"status"`
	// ProjectUUID is the row's project: a move of its idea may have changed it (docs/rules.md §5.9).
	ProjectUUID string `json:"projectUuid,omitempty"`
	// ProjectName is that project's name, which the workflow shows operators in its memo.
	ProjectName string `json:"projectName,omitempty"`
}

func (e *ProjectionConflict) Error() string {
	if !e.Found {
		return fmt.Sprintf("%s row %s does not exist; change %s expected it at version %d", e.Table, e.UUID, e.Write.ID, e.Write.Expect)
	}
	return fmt.Sprintf("%s row %s is at version %d (change %q, status %q); change %s expected version %d",
		e.Table, e.UUID, e.Version, e.ChangeID, e.Status, e.Write.ID, e.Write.Expect)
}

// Is makes errors.Is(err, ErrProjectionConflict) hold.
func (e *ProjectionConflict) Is(target error) bool { return target == ErrProjectionConflict }

// claim moves table's row uuid from w.Expect to w.Expect+1, marked w.ID, together with the
// columns q sets (q may be nil). It returns true when this call applied the change, and false
// when an earlier attempt of the same change did (the caller must then write nothing more).
// Anything else is a *ProjectionConflict.
func claim(ctx context.Context, tx bun.Tx, table, uuid string, w Write, q *bun.UpdateQuery) (bool, error) {
	if q == nil {
		q = tx.NewUpdate().Table(table)
	}
	res, err := q.Set("version = ?", w.Version()).Set("change_id = ?", w.ID).Set("updated_at = ?", w.At).
		Where("uuid = ?", uuid).Where("version = ?", w.Expect).Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, journal(ctx, tx, table, uuid, w)
	}
	return false, alreadyOrConflict(ctx, tx, table, uuid, w)
}

// claimNew is claim for a change that inserts its row (or, for a batch, its rows, uuid being
// the first): the insert is the claim.
func claimNew(ctx context.Context, tx bun.Tx, table, uuid string, w Write, insert *bun.InsertQuery) (bool, error) {
	res, err := insert.On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, journal(ctx, tx, table, uuid, w)
	}
	return false, alreadyOrConflict(ctx, tx, table, uuid, w)
}

// claimDelete deletes table's row uuid if it is at w.Expect. A row already gone counts as
// deleted by an earlier attempt; a row elsewhere is a conflict.
func claimDelete(ctx context.Context, tx bun.Tx, table, uuid string, w Write) (bool, error) {
	res, err := tx.NewDelete().Table(table).Where("uuid = ?", uuid).Where("version = ?", w.Expect).Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, journal(ctx, tx, table, uuid, w)
	}
	cur, err := rowMark(ctx, tx, table, uuid)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if done, err := journaled(ctx, tx, uuid, w); err != nil || done {
		return false, err
	}
	return false, conflict(table, uuid, w, cur)
}

type mark struct {
	Version     int64  `bun:"version"`
	ChangeID    string `bun:"change_id"`
	Status      string `bun:"status"`
	ProjectUUID string `bun:"project_uuid"`
	ProjectName string `bun:"project_name"`
}

func rowMark(ctx context.Context, db bun.IDB, table, uuid string) (mark, error) {
	var m mark
	cols := []string{"version", "change_id", "project_uuid"}
	if table != "documents" {
		cols = append(cols, "status")
	}
	err := db.NewSelect().Table(table).Column(cols...).
		ColumnExpr("(SELECT p.name FROM projects AS p WHERE p.uuid = ?.project_uuid) AS project_name", bun.Ident(table)).
		Where("uuid = ?", uuid).Scan(ctx, &m)
	return m, err
}

func alreadyOrConflict(ctx context.Context, tx bun.Tx, table, uuid string, w Write) error {
	cur, err := rowMark(ctx, tx, table, uuid)
	if errors.Is(err, sql.ErrNoRows) {
		return &ProjectionConflict{Table: table, UUID: uuid, Write: w}
	}
	if err != nil {
		return err
	}
	if cur.Version == w.Version() && cur.ChangeID == w.ID {
		return nil // applied by an earlier attempt
	}
	// Applied by an earlier attempt whose outcome was lost, and moved on since by a change that
	// may write this row too (a revoke closing a claimed task): the change is done, not in conflict.
	if done, err := journaled(ctx, tx, uuid, w); err != nil || done {
		return err
	}
	return conflict(table, uuid, w, cur)
}

// appliedBefore reports whether w was applied to table's row uuid by an earlier attempt: the row
// carries it, or the journal does.
func appliedBefore(ctx context.Context, tx bun.Tx, table, uuid string, w Write) (bool, error) {
	cur, err := rowMark(ctx, tx, table, uuid)
	if err == nil && cur.Version == w.Version() && cur.ChangeID == w.ID {
		return true, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	return journaled(ctx, tx, uuid, w)
}

// ChangeJournal is one row of change_journal: a change that moved a lifecycle row.
type ChangeJournal struct {
	bun.BaseModel `bun:"table:change_journal"`
	ChangeID      string    `bun:"change_id,pk"`
	EntityUUID    string    `bun:"entity_uuid,pk"`
	EntityTable   string    `bun:"entity_table"`
	Version       int64     `bun:"version"`
	UpdateKey     string    `bun:"update_key"`
	UpdateID      string    `bun:"update_id"`
	AppliedAt     time.Time `bun:"applied_at"`
	// RolledBackAt is when a repair rolled the row back past this change (nil: it stands): a
	// rolled-back change no longer counts as applied.
	RolledBackAt *time.Time `bun:"rolled_back_at"`
}

// journal records, in the change's transaction, that w moved table's row uuid.
func journal(ctx context.Context, tx bun.Tx, table, uuid string, w Write) error {
	row := ChangeJournal{ChangeID: w.ID, EntityUUID: uuid, EntityTable: table, Version: w.Version(), UpdateKey: w.Update,
		UpdateID: w.UpdateID, AppliedAt: w.At}
	_, err := tx.NewInsert().Model(&row).On("CONFLICT (change_id, entity_uuid) DO NOTHING").Exec(ctx)
	return err
}

// journaled reports whether w was applied to the row uuid by an earlier attempt (and not rolled
// back since).
func journaled(ctx context.Context, db bun.IDB, uuid string, w Write) (bool, error) {
	return db.NewSelect().Model((*ChangeJournal)(nil)).Where("change_id = ?", w.ID).Where("entity_uuid = ?", uuid).
		Where("rolled_back_at IS NULL").Exists(ctx)
}

// ChangeApplied reports whether the change changeID moved the lifecycle row entityUUID: the
// change journal lists it. A workflow asks before the guards of a command that read other rows,
// which a reset re-applying the command would otherwise judge on today's rows
// (docs/write-path.md, "Check and repair").
func (s *Store) ChangeApplied(ctx context.Context, changeID, entityUUID string) (bool, error) {
	return journaled(ctx, s.DB, entityUUID, Write{ID: changeID})
}

// UpdateOutcome is what the change journal says of a workflow update.
type UpdateOutcome int

const (
	// UpdateNotApplied: no change of the update was committed.
	UpdateNotApplied UpdateOutcome = iota
	// UpdateApplied: a change of the update was committed and stands.
	UpdateApplied
	// UpdateRolledBack: its changes were committed, then rolled back by a repair.
	UpdateRolledBack
)

// UpdateOutcome says whether a change made by the workflow update with key updateKey (see
// UpdateKey) was committed, and whether a repair rolled it back since: docs/write-path.md,
// "Exactly once", for a retry whose workflow no longer remembers the update.
func (s *Store) UpdateOutcome(ctx context.Context, updateKey string) (UpdateOutcome, error) {
	if updateKey == "" {
		return UpdateNotApplied, nil
	}
	var rows []ChangeJournal
	if err := s.DB.NewSelect().Model(&rows).Column("rolled_back_at").Where("update_key = ?", updateKey).Scan(ctx); err != nil {
		return UpdateNotApplied, err
	}
	switch {
	case len(rows) == 0:
		return UpdateNotApplied, nil
	case slices.ContainsFunc(rows, func(r ChangeJournal) bool { return r.RolledBackAt == nil }):
		return UpdateApplied, nil
	}
	return UpdateRolledBack, nil
}

// ChangeAppliedAt reports whether the change journal lists changeID as what moved the row
// entityUUID to version, standing: the row there is the product of Chorus's own writes, not of a
// hand edit (chorus ops repair rolls forward to such a row).
func (s *Store) ChangeAppliedAt(ctx context.Context, changeID, entityUUID string, version int64) (bool, error) {
	return s.DB.NewSelect().Model((*ChangeJournal)(nil)).Where("change_id = ?", changeID).Where("entity_uuid = ?", entityUUID).
		Where("version = ?", version).Where("rolled_back_at IS NULL").Exists(ctx)
}

// LastChange is the latest standing change the journal lists for the row entityUUID ("" and 0
// when none): for a row that is gone, the change that deleted it.
func (s *Store) LastChange(ctx context.Context, entityUUID string) (string, int64, error) {
	var rows []ChangeJournal
	err := s.DB.NewSelect().Model(&rows).Column("change_id", "version").Where("entity_uuid = ?", entityUUID).
		Where("rolled_back_at IS NULL").Order("version DESC").Limit(1).Scan(ctx)
	if err != nil || len(rows) == 0 {
		return "", 0, err
	}
	return rows[0].ChangeID, rows[0].Version, nil
}

// UpdateKey names a workflow update in the change journal: the hex SHA-256 of the workflow id
// and the update id, 64 characters.
func UpdateKey(workflowID, updateID string) string {
	sum := sha256.Sum256([]byte(workflowID + "\x00" + updateID))
	return hex.EncodeToString(sum[:])
}

func conflict(table, uuid string, w Write, cur mark) *ProjectionConflict {
	return &ProjectionConflict{Table: table, UUID: uuid, Write: w, Found: true, Version: cur.Version, ChangeID: cur.ChangeID,
		Status: cur.Status, ProjectUUID: cur.ProjectUUID, ProjectName: cur.ProjectName}
}

// writeAudit inserts activity rows and notifications in tx. Their uuids derive from the change
// id, so a retry inserts nothing twice.
func writeAudit(ctx context.Context, tx bun.Tx, companyUUID string, acts []Activity, notes []NotifySpec) error {
	for i := range acts {
		row := acts[i]
		if _, err := tx.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("insert activity %s: %w", row.Action, err)
		}
	}
	for _, n := range notes {
		if err := InsertNotifications(ctx, tx, companyUUID, n); err != nil {
			return err
		}
	}
	return nil
}
