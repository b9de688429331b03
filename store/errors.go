package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors. The store maps driver errors onto these so that no SQL text or driver type
// leaves the package; callers test them with errors.Is.
var (
	// ErrNotFound: the row does not exist, or exists in another company.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint or an optimistic-lock check failed.
	ErrConflict = errors.New("conflict")
)

// NotFoundError says which entity was missing, in the words an agent sees ("Project not found").
type NotFoundError struct{ Entity string }

func (e *NotFoundError) Error() string { return e.Entity + " not found" }

// Is makes errors.Is(err, ErrNotFound) true for every NotFoundError.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NotFound returns a NotFoundError for entity ("Project", "Idea", ...).
func NotFound(entity string) error { return &NotFoundError{Entity: entity} }

// mapErr turns driver errors into the package sentinels; entity names the row for not-found.
func mapErr(err error, entity string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return NotFound(entity)
	case isUniqueViolation(err):
		return fmt.Errorf("%s already exists: %w", entity, ErrConflict)
	}
	return err
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	// modernc reports "constraint failed: UNIQUE constraint failed: ..." (SQLITE_CONSTRAINT_UNIQUE
	// or _PRIMARYKEY); matching the text keeps the driver's error types out of this package.
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "PRIMARY KEY constraint failed")
}

// IsConstraintViolation reports whether err is the database refusing a write for a constraint
// (a foreign key whose row is gone, a unique key taken, a check): an answer that repeating the
// same write cannot change, unlike IsUnavailable. PostgreSQL reports SQLSTATE class 23;
// modernc's SQLite reports "constraint failed".
func IsConstraintViolation(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "23")
	}
	return strings.Contains(err.Error(), "constraint failed")
}
