package devserver

import (
	"compress/gzip"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// UpgradeSchema adds to a file of the 1.29 dev server (the fixture TestOldDevServerDataUpgradesInPlace
// upgrades, cmd/chorus/testdata/upgrade-1.29) the one table 1.32.1 needs for schedules, once; the
// file still predates the server (its visibility table cannot be upgraded); a missing file and a
// file that is not a Temporal database are left alone.
func TestUpgradeSchemaAddsWhatOldFilesLack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "temporal.db")
	in, err := os.Open(filepath.Join("..", "..", "cmd", "chorus", "testdata", "upgrade-1.29", "temporal.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	for i, want := range [][]string{{"current_chasm_executions"}, nil} {
		added, err := UpgradeSchema(ctx, path)
		if err != nil || !slices.Equal(added, want) {
			t.Fatalf("UpgradeSchema %d: added %v, %v; want %v", i+1, added, err, want)
		}
		if old, err := PredatesServer(ctx, path); err != nil || !old {
			t.Fatalf("after UpgradeSchema %d: PredatesServer %v, %v; want true (the visibility table stays 1.29's)", i+1, old, err)
		}
	}

	if added, err := UpgradeSchema(ctx, filepath.Join(dir, "missing.db")); err != nil || added != nil {
		t.Errorf("a missing file: added %v, %v", added, err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", "file:"+other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x INT)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if added, err := UpgradeSchema(ctx, other); err != nil || added != nil {
		t.Errorf("not a Temporal file: added %v, %v", added, err)
	}
}
