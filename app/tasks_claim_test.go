package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Only a real miss of the target agent reads "Target Agent not found"; a database that cannot
// answer is an outage, never a missing agent (issue 21, item 3).
func TestAssignableAgentNotFoundOnlyOnARealMiss(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "chorus.db"))
	require.NoError(t, err)
	_, err = s.Migrate(ctx)
	require.NoError(t, err)
	a := &App{Store: s}
	r := Request{Who: Principal{Caller: store.Caller{CompanyUUID: store.NewUUID(), AgentUUID: store.NewUUID()}}}

	_, err = a.AssignableAgent(ctx, r, store.NewUUID(), perm.TaskWrite, store.NewUUID(), "task")
	var refusal *Refusal
	require.ErrorAs(t, err, &refusal)
	assert.Equal(t, vocab.RefusedNotFound, refusal.Kind)
	assert.Equal(t, "Target Agent not found", refusal.Msg)

	require.NoError(t, s.DB.Close()) // the database is gone
	_, err = a.AssignableAgent(ctx, r, store.NewUUID(), perm.TaskWrite, store.NewUUID(), "task")
	require.Error(t, err)
	assert.NotErrorAs(t, err, &refusal, "an outage must not read as a refusal: %v", err)
	assert.NotContains(t, err.Error(), "not found")
}
