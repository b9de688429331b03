package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable reports whether err is what a store call returns when its database is
// unreachable or its connection broke, on either dialect: driver.ErrBadConn, a refused, reset or
// broken connection, an unexpected EOF, an I/O error (SQLite), a pgx connect error, a pgx
// error that pgx itself marks safe to retry (nothing reached the server, e.g. "conn closed"), or
// a store whose database handle is closed (database/sql's "sql: database is closed"). It
// is false for nil, for errors the database answered with (constraint violations, syntax), for
// the store's sentinels such as ErrNotFound, and for a call that ended because its context did.
// Callers use it to tell an agent "retry shortly" instead of "internal error".
//
// Measured with storetest.OpenFaulty: while PostgreSQL is down a call fails with a pgx
// ConnectError ("dial tcp ...: connect: connection refused"), a Commit in flight with "conn
// closed", a result set being read with "unexpected EOF"; on SQLite a new call fails with "open
// <file>: input/output error" and one on an existing connection with "driver: bad connection:
// write <file>: input/output error".
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	var opErr *net.OpError
	return errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.EIO) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.As(err, &connectErr) ||
		errors.As(err, &opErr) ||
		// database/sql's answer once the store is closed (shutting down); it has no exported value.
		strings.Contains(err.Error(), "sql: database is closed") ||
		// pgx also marks a call refused because its context had already ended as safe to retry.
		pgconn.SafeToRetry(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
