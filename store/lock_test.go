package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// The project lock (store/unresolved.go) serializes the writes that recount unresolved
// dependencies or check rows across a project, and nothing else: a write whose new row only
// refers to the project (an idea, a task batch, a document) goes on while another transaction
// holds it (PostgreSQL FOR NO KEY UPDATE; a foreign key check takes FOR KEY SHARE, which FOR
// UPDATE would have blocked until the holder committed). SQLite has one writer at a time and no
// row locks, so this is PostgreSQL's alone.
func TestProjectLockLetsReferringInsertsThrough(t *testing.T) {
	st := storetest.Open(t, "pg")
	ctx := context.Background()
	b, p := bootProject(t, st)
	holder, err := st.DB.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback() }()
	require.NoError(t, store.LockProject(ctx, holder, p.UUID))

	// A row that refers to the project is written while the lock is held (a blocked insert
	// would run into this deadline, with the holder still open).
	insertCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	at := time.Now().UTC().Truncate(time.Microsecond)
	idea := store.Idea{UUID: store.NewUUID(), CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Title: "I", Status: "open",
		CreatedByType: "agent", CreatedByUUID: b.Agent.UUID, CreatedAt: at, UpdatedAt: at}
	require.NoError(t, st.ApplyIdeaChange(insertCtx, store.IdeaChange{Write: store.Write{ID: "idea/x#1@k", At: at},
		UUID: idea.UUID, CompanyUUID: b.Company.UUID, ProjectUUID: p.UUID, Insert: &idea}))

	// Another holder still waits for the first: its lock times out while the first holds it.
	err = st.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '200ms'"); err != nil {
			return err
		}
		return store.LockProject(ctx, tx, p.UUID)
	})
	require.ErrorContains(t, err, "lock timeout")
	require.NoError(t, holder.Commit())
	require.NoError(t, st.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return store.LockProject(ctx, tx, p.UUID)
	}), "free once the first committed")
}
