package mcp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Every error a tool can end with gets the outcome and kind its metrics carry; refusals are the
// answers agentMessage words, errors are the ones operators must look at.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err           error
		outcome, kind string
	}{
		{nil, outcomeOK, ""},
		{invalid("title is required"), outcomeRefused, "invalid_input"},
		{refuse("Target Agent not found"), outcomeRefused, "precondition"},
		{refuseAs("forbidden", "Only the assignee can release a task"), outcomeRefused, "forbidden"},
		{refuseAs("invalid_input", "Invalid reference type: blog"), outcomeRefused, "invalid_input"},
		{app.Refuse(vocab.RefusedPrecondition, "Only group admins can manage this group"), outcomeRefused, "precondition"},
		{app.Refuse(vocab.RefusedPrecondition, "Cannot delete the group's projects"), outcomeRefused, "precondition"},
		{&store.NotFoundError{Entity: "Task"}, outcomeRefused, "not_found"},
		{fmt.Errorf("wrapped: %w", store.ErrForbidden), outcomeRefused, "forbidden"},
		{workflows.Refuse(workflows.KindConflict, "Cannot verify"), outcomeRefused, "conflict"},
		{workflows.Refuse(workflows.KindInvalid, "bad"), outcomeRefused, "invalid_input"},
		{workflows.Refuse(workflows.KindNotFound, "gone"), outcomeRefused, "not_found"},
		{workflows.Refuse(workflows.KindForbidden, "not yours"), outcomeRefused, "forbidden"},
		{workflows.Refuse(workflows.KindDiverged, "disagree"), outcomeRefused, "diverged"},
		{workflows.ErrAlreadyApplied, outcomeRefused, "already_applied"},
		{workflows.ErrStillRunning, outcomeError, "still_running"},
		{context.DeadlineExceeded, outcomeError, "still_running"},
		{errors.New("boom"), outcomeError, "internal"},
	} {
		outcome, kind := classify(tc.err)
		require.Equal(t, tc.outcome, outcome, "%v", tc.err)
		require.Equal(t, tc.kind, kind, "%v", tc.err)
		if outcome == outcomeRefused {
			require.Contains(t, RefusalKinds, kind, "a refusal kind chorus_refusals_total exports from the start")
		}
	}
}
