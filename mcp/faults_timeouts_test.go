package mcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
)

// shortWrite applies one task change with a start-to-close timeout of 6 s and no retry.
func shortWrite(ctx workflow.Context, c store.TaskChange) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 6 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var a *activities.Activities
	return workflow.ExecuteActivity(ctx, a.ApplyTaskChange, c).Get(ctx, nil)
}

// A write whose database does not answer (its row or the database is locked by another
// transaction) ends its transaction before its activity's start-to-close timeout, and fails, to
// be retried: the server never times an attempt out and starts the next one while the first's
// transaction still holds its locks (docs/write-path.md, "One write protocol"). Once the lock is
// gone, the write applies.
func TestWriteEndsItsTransactionBeforeItsActivityTimesOut(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := newFlowEnvNoWorker(t, dialect)
			ctx := context.Background()
			w := workflows.NewWorker(e.tc, e.queue, activities.New(e.st, e.tc), worker.Options{
				Interceptors: []interceptor.WorkerInterceptor{e.faults}})
			w.RegisterWorkflow(shortWrite)
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)
			admin := e.client(e.adminKey)
			project := createProject(t, admin, "Apollo")
			task := createTask(t, admin, project)
			row, err := e.st.TaskRow(ctx, task)
			require.NoError(t, err)
			title := "Renamed"
			change := store.TaskChange{Write: store.Write{ID: "test/x#2@k", Expect: row.Version, At: store.Now()},
				UUID: task, CompanyUUID: row.CompanyUUID, ProjectUUID: project, Patch: store.TaskPatch{Title: &title}}
			run := func() error {
				r, err := e.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: e.queue}, shortWrite, change)
				require.NoError(t, err)
				return r.Get(ctx, nil)
			}

			// Another transaction holds the row (PostgreSQL) or the database's write lock (SQLite).
			tx, err := e.st.DB.BeginTx(ctx, nil)
			require.NoError(t, err)
			if dialect == "pg" {
				_, err = tx.NewRaw("SELECT uuid FROM tasks WHERE uuid = ? FOR UPDATE", task).Exec(ctx)
			} else {
				_, err = tx.NewUpdate().Table("projects").Set("updated_at = updated_at").Where("uuid = ?", project).Exec(ctx)
			}
			require.NoError(t, err)
			err = run()
			require.Error(t, err)
			var timeout *temporal.TimeoutError
			require.False(t, errors.As(err, &timeout), "the attempt ended by itself, not by its timeout: %v", err)
			require.NoError(t, tx.Rollback())
			got, err := e.st.TaskRow(ctx, task)
			require.NoError(t, err)
			require.Equal(t, row.Version, got.Version, "the failed attempt wrote nothing")

			require.NoError(t, run(), "with the lock gone the write applies")
			got, err = e.st.TaskRow(ctx, task)
			require.NoError(t, err)
			require.Equal(t, title, got.Title)
			require.Equal(t, row.Version+1, got.Version)
		})
	}
}
