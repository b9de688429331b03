package storetest_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"github.com/uptrace/bun"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// countProbes counts the rows of the test's probe table.
func countProbes(ctx context.Context, st *store.Store) (int, error) {
	var n int
	err := st.DB.QueryRowContext(ctx, "SELECT count(*) FROM fault_probe").Scan(&n)
	return n, err
}

// eventually polls f until it returns nil or the deadline passes, and returns f's last error.
func eventually(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

func TestOutage(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st, o := storetest.OpenFaulty(t, dialect)
			require.Equal(t, dialect, st.Dialect())
			_, err := st.DB.ExecContext(ctx, "CREATE TABLE fault_probe (n INTEGER NOT NULL)")
			require.NoError(t, err)
			_, err = st.DB.ExecContext(ctx, "INSERT INTO fault_probe (n) VALUES (1)")
			require.NoError(t, err)

			// Migrations ran through the switch.
			require.NoError(t, st.CheckMigrated(ctx))

			// A transaction open when the database goes down cannot commit, and its write is lost.
			tx, err := st.DB.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, "INSERT INTO fault_probe (n) VALUES (2)")
			require.NoError(t, err)

			// So does a result set being read.
			rows, err := st.DB.QueryContext(ctx, longResult(dialect))
			require.NoError(t, err)
			require.True(t, rows.Next())

			o.Down()
			require.True(t, o.IsDown())
			err = tx.Commit()
			require.Error(t, err)
			require.True(t, storetest.IsOutage(err), "commit: %v", err)
			t.Logf("commit: %v", err)
			n := 1
			for rows.Next() {
				n++
			}
			require.Error(t, rows.Err(), "read %d rows through a cut connection", n)
			require.True(t, storetest.IsOutage(rows.Err()), "rows: %v", rows.Err())
			t.Logf("rows after %d: %v", n, rows.Err())
			_ = rows.Close()

			// While down every call fails, quickly, as a connection problem.
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err = countProbes(callCtx, st)
			require.Error(t, err)
			require.True(t, storetest.IsOutage(err), "query: %v", err)
			_, err = st.DB.ExecContext(callCtx, "INSERT INTO fault_probe (n) VALUES (3)")
			require.True(t, storetest.IsOutage(err), "exec: %v", err)
			err = st.Ping(callCtx)
			require.True(t, storetest.IsOutage(err), "ping: %v", err)
			require.NoError(t, callCtx.Err(), "calls must fail, not hang")
			t.Logf("%s while down: %v (%s)", dialect, err, time.Since(start))

			// After Up the same store works again; nothing written while down is there.
			o.Up()
			require.False(t, o.IsDown())
			var got int
			require.NoError(t, eventually(5*time.Second, func() error {
				got, err = countProbes(ctx, st)
				return err
			}))
			require.Equal(t, 1, got)
			_, err = st.DB.ExecContext(ctx, "INSERT INTO fault_probe (n) VALUES (4)")
			require.NoError(t, err)
			got, err = countProbes(ctx, st)
			require.NoError(t, err)
			require.Equal(t, 2, got)
		})
	}
}

// TestOutageFirstCallAfterUp: every pooled connection died in the outage, yet the calls right
// after Up succeed: each driver reports a dead pooled connection as driver.ErrBadConn before
// sending anything, and database/sql retries on a new connection.
func TestOutageFirstCallAfterUp(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st, o := storetest.OpenFaulty(t, dialect)
			// Fill the pool with idle connections, each used recently (pgx pings a pooled
			// connection before reuse only when it has been idle for more than a second).
			for range 2 {
				conns := make([]bun.Conn, 0, 4)
				for range 4 {
					c, err := st.DB.Conn(ctx)
					require.NoError(t, err)
					_, err = c.ExecContext(ctx, "SELECT 1")
					require.NoError(t, err)
					conns = append(conns, c)
				}
				for _, c := range conns {
					require.NoError(t, c.Close())
				}
			}
			o.Down()
			o.Up()
			var errs []error
			for range 6 {
				_, err := st.DB.ExecContext(ctx, "SELECT 1")
				errs = append(errs, err)
			}
			for i, err := range errs {
				require.NoError(t, err, "call %d after the outage", i+1)
			}
		})
	}
}

func TestOutageDownFor(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st, o := storetest.OpenFaulty(t, dialect)
			done := make(chan struct{})
			go func() {
				o.DownFor(300 * time.Millisecond)
				close(done)
			}()
			require.NoError(t, eventually(5*time.Second, func() error {
				if !o.IsDown() {
					return errors.New("not down yet")
				}
				return nil
			}))
			err := st.Ping(ctx)
			require.True(t, storetest.IsOutage(err), "ping: %v", err)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("DownFor did not return")
			}
			require.NoError(t, eventually(5*time.Second, func() error { return st.Ping(ctx) }))
		})
	}
}

func TestIsOutage(t *testing.T) {
	require.False(t, storetest.IsOutage(nil))
	require.False(t, storetest.IsOutage(store.ErrNotFound))
	require.False(t, storetest.IsOutage(context.Canceled))
	require.False(t, storetest.IsOutage(errors.New("UNIQUE constraint failed")))
	require.True(t, storetest.IsOutage(fmt.Errorf("persist: %w", driver.ErrBadConn)))
}

// TestIsOutageNotForCanceledCalls: a call whose context ended, or that the database refused,
// is no outage, on either dialect.
func TestIsOutageNotForCanceledCalls(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st, _ := storetest.OpenFaulty(t, dialect)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := st.DB.ExecContext(ctx, "SELECT 1")
			require.Error(t, err)
			require.False(t, storetest.IsOutage(err), "%v", err)
			_, err = st.DB.ExecContext(context.Background(), "SELEC 1")
			require.Error(t, err)
			require.False(t, storetest.IsOutage(err), "%v", err)
		})
	}
}

// longResult is a query whose rows do not all arrive in one read.
func longResult(dialect string) string {
	if dialect == "pg" {
		return "SELECT n FROM generate_series(1, 2000000) AS n"
	}
	return "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 2000000) SELECT n FROM s"
}
