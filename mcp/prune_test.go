package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// A retry inside the retry window (docs/write-path.md, "Bounded growth") answers exactly once
// after pruning ran: the pruning at the window's last hour deletes what is older, keeps the
// call's ledger row and journal entries, and the retry of a claim the task has since moved past
// (released) gets the claim's first outcome and changes nothing; on SQLite and PostgreSQL.
func TestRetryWithinTheWindowAnswersOnceAfterPruning(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		var first TaskView
		ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, &first)
		require.Equal(t, "assigned", first.Status)
		ok(t, dev, "chorus_release_task", map[string]any{"taskUuid": task, "requestId": "release"}, nil)
		released, err := e.st.TaskRow(ctx, task)
		require.NoError(t, err)

		// A ledger row from before the window, which the pruning deletes.
		var devUUID string
		require.NoError(t, e.st.DB.NewRaw("SELECT agent_uuid FROM tool_requests WHERE request_id = 'claim'").Scan(ctx, &devUUID))
		_, err = e.st.DB.NewInsert().Model(&store.ToolRequest{AgentUUID: devUUID, RequestID: "ancient", Tool: "chorus_claim_task",
			ArgsHash: "h", State: "done", CreatedAt: store.Now().Add(-8 * 24 * time.Hour)}).Exec(ctx)
		require.NoError(t, err)
		r := store.DefaultRetention
		pruned, err := e.st.Prune(ctx, r, store.Now().Add(r.Requests-time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, pruned.Requests, "only the row past the window goes")

		var again TaskView
		ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task, "requestId": "claim"}, &again)
		require.Equal(t, first.Status, again.Status, "the retry gets the first outcome")
		require.Equal(t, first.Assignee, again.Assignee)
		row, err := e.st.TaskRow(ctx, task)
		require.NoError(t, err)
		require.Equal(t, released.Version, row.Version, "the retry changes nothing")
		require.Nil(t, row.AssigneeUUID)
		require.Equal(t, 1, activityCount(t, e.st, task, "assigned"), "claimed once")
		e.requireAgreement()
	})
}
