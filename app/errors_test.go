package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Classify's verdicts: the outcome and kind the metrics carry and the sentence the agent reads.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err     error
		outcome vocab.Outcome
		kind    string
		msg     string
	}{
		{nil, vocab.OutcomeOK, "", ""},
		{app.Refuse(vocab.RefusedForbidden, "Only the assignee can %s", "release"), vocab.OutcomeRefused, "forbidden",
			"Only the assignee can release"},
		{fmt.Errorf("in a transaction: %w", app.Refuse(vocab.RefusedPrecondition, "Only group admins can manage this group")),
			vocab.OutcomeRefused, "precondition", "Only group admins can manage this group"},
		{fmt.Errorf("read: %w", store.NotFound("Task")), vocab.OutcomeRefused, "not_found", "Task not found"},
		{fmt.Errorf("wrapped: %w", store.ErrForbidden), vocab.OutcomeRefused, "forbidden", store.ErrForbidden.Error()},
		{workflows.Refuse(workflows.KindConflict, "Cannot verify"), vocab.OutcomeRefused, "conflict", "Cannot verify"},
		{workflows.Refuse(workflows.KindInvalid, "bad"), vocab.OutcomeRefused, "invalid_input", "bad"},
		{workflows.Refuse(workflows.KindNotFound, "gone"), vocab.OutcomeRefused, "not_found", "gone"},
		{workflows.Refuse(workflows.KindForbidden, "not yours"), vocab.OutcomeRefused, "forbidden", "not yours"},
		{workflows.Refuse(workflows.KindDiverged, "disagree"), vocab.OutcomeRefused, "diverged", "disagree"},
		{workflows.Refuse(workflows.KindRolledBack, "undone"), vocab.OutcomeRefused, "rolled_back", "undone"},
		{workflows.Refuse("chorus.Unheard", "odd"), vocab.OutcomeRefused, "conflict", "odd"},
		{workflows.ErrAlreadyApplied, vocab.OutcomeRefused, "already_applied", workflows.ErrAlreadyApplied.Error()},
		{workflows.ErrStillRunning, vocab.OutcomeError, "still_running", ""},
		{store.ErrRequestInProgress, vocab.OutcomeError, "still_running", ""},
		{context.DeadlineExceeded, vocab.OutcomeError, "still_running", ""},
		{errors.New("boom"), vocab.OutcomeError, "internal", ""},
	} {
		v := app.Classify(tc.err)
		require.Equal(t, tc.outcome, v.Outcome, "%v", tc.err)
		require.Equal(t, tc.kind, v.Kind, "%v", tc.err)
		if tc.outcome == vocab.OutcomeRefused {
			require.Equal(t, tc.msg, v.Msg, "%v", tc.err)
		}
		require.Equal(t, tc.outcome != vocab.OutcomeOK && tc.kind != "internal", v.Known(), "%v", tc.err)
	}
	require.Contains(t, app.Classify(workflows.ErrStillRunning).Msg, "Still in progress")
}

// Every workflow refusal kind has its refusal kind in the one table.
func TestWorkflowKindsMapToRefusalKinds(t *testing.T) {
	for k, want := range map[workflows.Kind]vocab.RefusalKind{
		workflows.KindInvalid: vocab.RefusedInvalid, workflows.KindNotFound: vocab.RefusedNotFound,
		workflows.KindForbidden: vocab.RefusedForbidden, workflows.KindConflict: vocab.RefusedConflict,
		workflows.KindDiverged: vocab.RefusedDiverged, workflows.KindAlreadyApplied: vocab.RefusedAlreadyApplied,
		workflows.KindRolledBack: vocab.RefusedRolledBack,
	} {
		require.Equal(t, want, app.RefusalKindOf(k), k)
	}
}

// A lookup on a closed database is an outage: the agent reads "cannot reach its database", not
// "not found" (issue 21).
func TestClosedDatabaseIsUnavailableNotNotFound(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			st := storetest.Open(t, d)
			require.NoError(t, st.DB.Close())
			const id = "6f0a4b6e-5c1d-4d7e-9a43-3f2b8c1d9e70"
			_, err := st.GetAgent(context.Background(), id, id)
			require.Error(t, err)
			require.NotErrorIs(t, err, store.ErrNotFound)
			v := app.Classify(err)
			require.Equal(t, vocab.OutcomeError, v.Outcome)
			require.Equal(t, string(vocab.FailedUnavailable), v.Kind)
			require.Contains(t, v.Msg, "cannot reach its database")
			require.NotContains(t, v.Msg, "not found")
		})
	}
}
