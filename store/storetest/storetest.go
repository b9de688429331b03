// Package storetest opens throwaway, migrated stores for tests: a SQLite file in a temp dir, or
// a fresh schema in the PostgreSQL named by CHORUS_TEST_PG_DSN.
//
// Under CI (CI=true) a missing CHORUS_TEST_PG_DSN fails the test instead of skipping it, so a
// green CI run always means the Postgres suite ran.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/chorus-dev/chorus/store"
)

// PGEnv names the variable holding a PostgreSQL URL for the Postgres test suites.
const PGEnv = "CHORUS_TEST_PG_DSN"

// Dialects are the store backends every store-facing suite runs against.
var Dialects = []string{"sqlite", "pg"}

// Open returns a migrated store of the given dialect ("sqlite" or "pg"), closed and dropped when
// the test ends. For "pg" without CHORUS_TEST_PG_DSN it skips, or fails when CI=true.
func Open(t testing.TB, dialect string) *store.Store {
	t.Helper()
	return OpenDSN(t, NewDSN(t, dialect))
}

// NewDSN returns the DSN of a fresh, empty database of the given dialect ("sqlite" or "pg"):
// a file in a temp dir, or a schema of the CHORUS_TEST_PG_DSN database dropped when the test
// ends. For "pg" without CHORUS_TEST_PG_DSN it skips, or fails when CI=true.
func NewDSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return filepath.Join(t.TempDir(), "chorus.db")
	case "pg":
		return PGSchemaDSN(t)
	}
	t.Fatalf("unknown dialect %q", dialect)
	return ""
}

// OpenDSN opens and migrates a store on dsn, closed when the test ends. Opening one dsn twice
// gives two stores with their own connection pools on one database, as two API processes have.
func OpenDSN(t testing.TB, dsn string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open store %s: %v", dsn, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate store %s: %v", dsn, err)
	}
	return st
}

// PGSchemaDSN creates an empty schema in the CHORUS_TEST_PG_DSN database and returns a DSN whose
// search_path is that schema; the schema is dropped when the test ends.
func PGSchemaDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PGEnv)
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: the PostgreSQL suite must run in CI (see .ci/run)", PGEnv)
		}
		t.Skipf("%s not set; skipping the PostgreSQL suite (set it to a postgres:// URL to run it)", PGEnv)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open %s: %v", PGEnv, err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema in %s: %v", PGEnv, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
			_ = db.Close()
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}
