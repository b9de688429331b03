package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/ops"
)

// Repairs and the answers agents were given (docs/write-path.md, "Check and repair", "Exactly
// once").

// A command its workflow refuses as a divergence (its write met a row moved behind Chorus's
// back, and wrote nothing) does not pin its requestId: Temporal keeps that refusal for the
// update's id in the run, so the requestId moves to its next generation, and after ops repair the
// retry with the same requestId runs instead of getting the refusal again for ever.
func TestDivergedRefusalDoesNotPinTheRequestID(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		_, err := e.st.DB.NewUpdate().Table("tasks").Set("version = version + 1").Set("change_id = 'by-hand'").
			Where("uuid = ?", task).Exec(ctx)
		require.NoError(t, err)

		args := map[string]any{"taskUuid": task, "status": "in_progress", "requestId": "start"}
		require.Contains(t, fails(t, admin, "chorus_update_task", args), "its stored record and its workflow disagree")
		e.repairOnly(t, ops.Diverged)
		var v TaskView
		ok(t, admin, "chorus_update_task", args, &v)
		require.Equal(t, "in_progress", v.Status, "after the repair, the same requestId runs")
		ok(t, admin, "chorus_update_task", args, &v)
		require.Equal(t, 1, activityCount(t, e.st, task, "status_changed"), "and its retry answers, once")
		e.requireAgreement()
	})
}
