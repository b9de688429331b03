package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store/storetest"
)

// The agent's text and the metrics' labels come from one classifier (app.Classify), so they
// agree for every error.
func TestAgentMessageAndClassifyAgree(t *testing.T) {
	for _, err := range []error{invalid("title is required"), refuse("Target Agent not found"),
		refuseAs("forbidden", "Only the assignee can release a task"), toolNotFound("chorus_fly")} {
		msg, known := agentMessage(err)
		outcome, _ := classify(err)
		require.True(t, known)
		require.Equal(t, outcomeRefused, outcome)
		require.Equal(t, err.Error(), msg)
	}
}

// An outage while finding the target of an assignment reads as an outage, never as "Target Agent
// not found" (issue 21).
func TestClosedDatabaseIsNotTargetNotFound(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			st := storetest.Open(t, d)
			require.NoError(t, st.DB.Close())
			const id = "6f0a4b6e-5c1d-4d7e-9a43-3f2b8c1d9e70"
			call := &Call{}
			call.Who.Caller.CompanyUUID = id
			_, err := (&Deps{Store: st}).app().AssignableAgent(context.Background(), call.Request, id, perm.TaskWrite, id, "task")
			require.Error(t, err)
			msg, known := agentMessage(err)
			require.True(t, known)
			require.Contains(t, msg, "cannot reach its database")
			outcome, kind := classify(err)
			require.Equal(t, outcomeError, outcome)
			require.Equal(t, "unavailable", kind)
		})
	}
}
