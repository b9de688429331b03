package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

func TestIdeaProgressFromState(t *testing.T) {
	for _, c := range []struct {
		name string
		s    IdeaState
		want string
	}{
		{"open", IdeaState{Created: true, Status: "open"}, store.DerivedTodo},
		{"open, an old reading ignored", IdeaState{Created: true, Status: "open", Progress: store.DerivedDone}, store.DerivedTodo},
		{"questions wait", IdeaState{Created: true, Status: "elaborating", ElaborationStatus: "pending_answers"}, store.DerivedHumanConductRequired},
		{"answers wait for validation", IdeaState{Created: true, Status: "elaborating", ElaborationStatus: "validating"}, store.DerivedInProgress},
		{"claimed, no round yet", IdeaState{Created: true, Status: "elaborating"}, store.DerivedInProgress},
		{"elaborated: the database's", IdeaState{Created: true, Status: "elaborated", Progress: store.DerivedDone}, store.DerivedDone},
		{"elaborated, not read yet", IdeaState{Created: true, Status: "elaborated"}, ""},
		{"a theme rolls up from its children", IdeaState{Created: true, Status: "open", ProgressRollup: true, Progress: store.DerivedInProgress}, store.DerivedInProgress},
		{"deleted", IdeaState{Created: true, Deleted: true, Status: "open"}, ""},
		{"not created", IdeaState{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) { require.Equal(t, c.want, c.s.progress()) })
	}
}

// The activities signal idea workflows by id without importing this package.
func TestIdeaWorkflowIDsAgree(t *testing.T) {
	u := "0b6f3c1e-8a4d-4c57-9d0e-2f1a6b7c8d9e"
	require.Equal(t, vocab.IdeaID(u), activities.IdeaWorkflowID(u))
}

// A refresh reads the progress, told what the idea showed, and the progress travels to the next
// run. (The test environment delivers each signal on its own and ends a run before signals sent
// with the continue-as-new, so it cannot show buffered refreshes taken together, or taken before
// continuing as new by pendingRefreshes.)
func TestIdeaWorkflowRefreshesProgressBeforeContinuingAsNew(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.ApplyIdeaChange, mock.Anything, mock.Anything).Return(nil)
	var reads []string
	env.OnActivity(a.IdeaProgress, mock.Anything, "idea-1", mock.Anything).Return(
		func(_ context.Context, _, previous string) (store.IdeaProgress, error) {
			reads = append(reads, previous)
			return store.IdeaProgress{Found: true, Status: store.DerivedDone, ParentUUID: "theme-1"}, nil
		})
	s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "Idea"})
	s.send(2*time.Second, UpdateClaimIdea, IdeaCommand{Actor: pm})
	s.send(3*time.Second, UpdateSkipElaboration, SkipElaborationInput{Actor: pm, Reason: "clear"})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalRefreshProgress, nil)
		env.SignalWorkflow(SignalRefreshProgress, nil)
	}, 4*time.Second)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 4500*time.Millisecond)
	env.RegisterDelayedCallback(func() {}, 5*time.Second) // wakes the main loop
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "got %v", env.GetWorkflowError())
	var next IdeaRun
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "elaborated", next.State.Status)
	require.Equal(t, store.DerivedDone, next.State.Progress)
	require.NotEmpty(t, reads)
	require.Equal(t, store.DerivedInProgress, reads[0], "the first reading is told what the idea showed before")
	for _, r := range reads[1:] {
		require.Equal(t, store.DerivedDone, r)
	}
}

// A run's start publishes the progress; refreshes whose reading is unchanged add nothing to the
// history, the first one included: a run of this code upserts only what changed
// (publishChangesOnly). A run begun before ChorusProgress existed, whose search attributes never
// got it, publishes everything at every change (it replays on DefaultVersion of
// publishChangesOnly), so its first refresh still sends the progress.
func TestFirstRefreshOfARunPublishesTheProgress(t *testing.T) {
	env, _ := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.IdeaProgress, mock.Anything, "idea-1", mock.Anything).Return(
		store.IdeaProgress{Found: true, Status: store.DerivedInProgress}, nil)
	var shown []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		p, _ := sa.GetKeyword(ProgressKey)
		shown = append(shown, p)
	}).Return(nil)
	env.OnUpsertMemo(mock.Anything).Return(nil)
	st := IdeaState{UUID: "idea-1", ProjectUUID: "p", Title: "Idea", Created: true, Status: "elaborated",
		Progress: store.DerivedInProgress}
	for i := range 3 {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalRefreshProgress, nil) }, time.Duration(i+1)*time.Second)
	}
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 4*time.Second)
	env.RegisterDelayedCallback(func() {}, 5*time.Second)
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{State: &st})

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "got %v", env.GetWorkflowError())
	require.Equal(t, []string{store.DerivedInProgress}, shown,
		"the run's start publishes; the unchanged refreshes do not")
}
