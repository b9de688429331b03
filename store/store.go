package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver (pure Go)
)

//go:embed migrations
var migrationFiles embed.FS

// Store is Chorus's database: bun over PostgreSQL (production) or SQLite (embedded default).
// It is safe for concurrent use.
type Store struct {
	DB *bun.DB
}

// Open connects to the database named by dsn and returns a Store. It does not migrate.
//
// dsn is either a PostgreSQL URL ("postgres://user:pass@host:5432/db?sslmode=disable") or a
// SQLite file path (a plain path, or "sqlite://path"). SQLite files are opened in WAL mode with
// a busy timeout and immediate transactions, so several processes (chorus dev and the chorus
// agent/key commands) can share one file.
func Open(ctx context.Context, dsn string) (*Store, error) { return OpenWrapped(ctx, dsn, nil) }

// OpenWrapped is Open with every physical connection made through wrap(c), where c is the
// driver's connector for dsn with Open's settings (the same driver parameters, SQLite pragmas
// and pool sizes). wrap may return c itself or a driver.Connector that interposes on the
// connections it makes (tests use it to simulate an outage); a nil wrap is Open. Errors are
// Open's: an unusable dsn, or a database that does not answer a ping within 10 s.
func OpenWrapped(ctx context.Context, dsn string, wrap func(driver.Connector) driver.Connector) (*Store, error) {
	if dsn == "" {
		return nil, errors.New("store: no database given; set CHORUS_DATABASE_URL or --data-dir")
	}
	if wrap == nil {
		wrap = func(c driver.Connector) driver.Connector { return c }
	}
	var db *bun.DB
	if IsPostgresURL(dsn) {
		c, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(withSimpleProtocol(dsn))
		if err != nil {
			return nil, fmt.Errorf("store: open postgres: %w", err)
		}
		sqldb := sql.OpenDB(wrap(c))
		sqldb.SetMaxOpenConns(20)
		sqldb.SetMaxIdleConns(10)
		sqldb.SetConnMaxIdleTime(5 * time.Minute)
		db = bun.NewDB(sqldb, pgdialect.New())
	} else {
		path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "file:")
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("store: create %s: %w", dir, err)
			}
		}
		q := url.Values{}
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "busy_timeout(15000)")
		q.Add("_pragma", "synchronous(NORMAL)")
		// A 32 MiB page cache per connection (SQLite's default is 2 MiB) and up to 1 GiB of the
		// file memory-mapped (address space, shared through the OS page cache): the task indexes
		// of a project of tens of thousands of tasks stay in memory instead of being read again
		// with a system call per page on every call (docs/bench-results.md, "Reads").
		q.Add("_pragma", "cache_size(-32768)")
		q.Add("_pragma", "mmap_size(1073741824)")
		q.Set("_txlock", "immediate")
		q.Set("_time_format", "sqlite")
		c, err := sqlite.NewConnector("file:" + path + "?" + q.Encode())
		if err != nil {
			return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
		}
		sqldb := sql.OpenDB(wrap(c))
		// One writer at a time is SQLite's rule; a small pool still lets reads overlap.
		sqldb.SetMaxOpenConns(8)
		db = bun.NewDB(sqldb, sqlitedialect.New())
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: cannot reach the database: %w", err)
	}
	return &Store{DB: db}, nil
}

// IsPostgresURL reports whether dsn names a PostgreSQL database rather than a SQLite file.
func IsPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// DescribeURL names the database of dsn (a PostgreSQL URL or a SQLite path) for humans, without
// its password: "PostgreSQL host:port/db?..." or "SQLite path".
func DescribeURL(dsn string) string {
	if IsPostgresURL(dsn) {
		if i := strings.Index(dsn, "@"); i >= 0 {
			return "PostgreSQL " + dsn[i+1:]
		}
		return "PostgreSQL"
	}
	return "SQLite " + dsn
}

// withSimpleProtocol makes pgx use the simple query protocol: bun sends fully interpolated SQL,
// and preparing each distinct text would only fill pgx's statement cache (pgx reads
// default_query_exec_mode from the URL).
func withSimpleProtocol(dsn string) string {
	if strings.Contains(dsn, "default_query_exec_mode=") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&default_query_exec_mode=simple_protocol"
	}
	return dsn + "?default_query_exec_mode=simple_protocol"
}

// Close closes the database.
func (s *Store) Close() error { return s.DB.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.DB.PingContext(ctx) }

// Dialect is "pg" or "sqlite".
func (s *Store) Dialect() string {
	if s.DB.Dialect().Name() == dialect.PG {
		return "pg"
	}
	return "sqlite"
}

func (s *Store) migrator() (*migrate.Migrator, error) {
	dir := "migrations/sqlite"
	if s.Dialect() == "pg" {
		dir = "migrations/postgres"
	}
	sub, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	migs := migrate.NewMigrations()
	if err := migs.Discover(sub); err != nil {
		return nil, err
	}
	return migrate.NewMigrator(s.DB, migs,
		migrate.WithTableName("chorus_migrations"),
		migrate.WithLocksTableName("chorus_migration_locks"),
		migrate.WithMarkAppliedOnSuccess(true)), nil
}

// MigrationState is one migration and whether it has been applied.
type MigrationState struct {
	Name      string
	Comment   string
	Applied   bool
	AppliedAt time.Time
}

// Migrate applies every pending migration and returns the names it applied.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("store: init migrations: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("store: another process is migrating this database (or one crashed while "+
			"migrating; if so, delete the row from chorus_migration_locks): %w", err)
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	var names []string
	for _, mig := range group.Migrations {
		names = append(names, mig.Name+"_"+mig.Comment)
	}
	return names, nil
}

// Rollback undoes the most recent group of migrations and returns the names it undid.
func (s *Store) Rollback(ctx context.Context) ([]string, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, err
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("store: another process is migrating this database: %w", err)
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	group, err := m.Rollback(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: rollback: %w", err)
	}
	var names []string
	for _, mig := range group.Migrations {
		names = append(names, mig.Name+"_"+mig.Comment)
	}
	return names, nil
}

// Migrations lists every known migration with its state, oldest first.
func (s *Store) Migrations(ctx context.Context) ([]MigrationState, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, err
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]MigrationState, 0, len(ms))
	for _, mig := range ms {
		out = append(out, MigrationState{Name: mig.Name, Comment: mig.Comment, Applied: mig.IsApplied(), AppliedAt: mig.MigratedAt})
	}
	return out, nil
}

// CheckMigrated returns an error naming the pending migrations, if any.
func (s *Store) CheckMigrated(ctx context.Context) error {
	ms, err := s.Migrations(ctx)
	if err != nil {
		return err
	}
	var pending []string
	for _, m := range ms {
		if !m.Applied {
			pending = append(pending, m.Name+"_"+m.Comment)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("store: %d migration(s) not applied (%s); run `chorus migrate up`",
			len(pending), strings.Join(pending, ", "))
	}
	return nil
}

// NewUUID returns a new random (v4) uuid string, the public id of every entity (docs/rules.md §1.1).
func NewUUID() string { return uuid.NewString() }

// Now is the store's clock: UTC, truncated to microseconds so both dialects keep the same value.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
