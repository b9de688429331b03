package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	_ "modernc.org/sqlite" // the SQLite driver the store uses
)

// PredatesServer says whether the Temporal SQLite file at path was created by a server older
// than the one devserver runs (the Temporal CLI's dev server of Chorus releases before Temporal
// 1.32): it lacks the current_chasm_executions table that 1.32's schema (v0.11) adds. Temporal
// has no migrations for SQLite files, so such a file keeps its older schema: its workflows run
// on, but queries of 1.32's new visibility columns (TemporalReportedProblems, which the README's
// "Stuck" query uses) fail on it (README "Upgrading Temporal"). A missing file does not predate
// anything.
func PredatesServer(ctx context.Context, path string) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return false, err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'namespaces'`).Scan(&tables); err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if tables == 0 {
		return false, nil // not a Temporal database (yet)
	}
	var chasm int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'current_chasm_executions'`).Scan(&chasm)
	return err == nil && chasm == 0, err
}
