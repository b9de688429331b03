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
// 1.32): its executions_visibility table lacks the TemporalReportedProblems column that 1.32's
// visibility schema adds. Temporal has no migrations for SQLite files, and SQLite cannot add that
// generated, stored column to an existing table, so such a file keeps its older visibility
// schema: its workflows run on (Start adds the persistence tables it lacks: UpgradeSchema), but
// queries of 1.32's new visibility columns (TemporalReportedProblems, which the "Stuck" ready
// query of docs/operations.md uses) fail on it (docs/upgrading.md). A missing file does not predate anything.
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
	var column int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_xinfo('executions_visibility') WHERE name = 'TemporalReportedProblems'`).Scan(&column)
	return err == nil && column == 0, err
}

// missingTables are the persistence tables of Temporal's SQLite schema (go.temporal.io/server
// schema/sqlite/v3/temporal) that files of the 1.29 dev server lack, each as 1.32.1's versioned
// schema creates it (v0.11). Without current_chasm_executions, 1.32 fails every schedule
// create ("no such table: current_chasm_executions"), so Chorus's workers cannot start (they
// create the pruning schedule).
var missingTables = []struct{ name, ddl string }{
	{"current_chasm_executions", `CREATE TABLE IF NOT EXISTS current_chasm_executions(
	shard_id INT NOT NULL,
	namespace_id BINARY(16) NOT NULL,
	business_id VARCHAR(255) NOT NULL,
	archetype_id BIGINT NOT NULL,
	run_id BINARY(16) NOT NULL,
	create_request_id VARCHAR(255) NOT NULL,
	state INT NOT NULL,
	status INT NOT NULL,
	start_time TIMESTAMP NULL,
	last_write_version BIGINT NOT NULL,
	data MEDIUMBLOB NOT NULL,
	data_encoding VARCHAR(16) NOT NULL DEFAULT '',
	PRIMARY KEY (shard_id, namespace_id, business_id, archetype_id)
)`},
}

// UpgradeSchema adds to the Temporal SQLite file at path the persistence tables an older dev
// server's file lacks (missingTables) and returns their names; it leaves a missing file, a file
// that is not a Temporal database and a current one alone. Start calls it on Options.DBFile
// before the server opens it.
func UpgradeSchema(ctx context.Context, path string) ([]string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'namespaces'`).Scan(&tables); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if tables == 0 {
		return nil, nil
	}
	var added []string
	for _, t := range missingTables {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, t.name).Scan(&n); err != nil {
			return added, fmt.Errorf("read %s: %w", path, err)
		}
		if n > 0 {
			continue
		}
		if _, err := db.ExecContext(ctx, t.ddl); err != nil {
			return added, fmt.Errorf("add table %s to %s: %w", t.name, path, err)
		}
		added = append(added, t.name)
	}
	return added, nil
}
