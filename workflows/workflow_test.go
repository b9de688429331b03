package workflows

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Unit tests of the workflows against Temporal's test environment, with the store activities
// mocked: updates accepted and rejected, what they persist, and continue-as-new.

var (
	pm    = Actor{Type: "agent", UUID: "pm-1", Name: "PM", CompanyUUID: "co"}
	other = Actor{Type: "agent", UUID: "pm-2", Name: "Other", CompanyUUID: "co"}
)

// updates runs a sequence of updates, one per tick, recording each outcome.
type outcome struct {
	rejected error
	failed   error
	result   any
}

type script struct {
	env      *testsuite.TestWorkflowEnvironment
	outcomes []*outcome
}

func (s *script) send(after time.Duration, name string, arg any) *outcome {
	o := &outcome{}
	s.outcomes = append(s.outcomes, o)
	s.env.RegisterDelayedCallback(func() {
		s.env.UpdateWorkflow(name, name+time.Duration(len(s.outcomes)).String()+after.String(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { o.rejected = err },
			OnComplete: func(r any, err error) {
				o.result, o.failed = r, err
			},
		}, arg)
	}, after)
	return o
}

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *script) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Activities{})
	env.RegisterWorkflowWithOptions(IdeaWorkflow, workflow.RegisterOptions{Name: IdeaWorkflowName})
	env.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: TaskWorkflowName})
	env.RegisterWorkflowWithOptions(ProposalWorkflow, workflow.RegisterOptions{Name: ProposalWorkflowName})
	return env, &script{env: env}
}

func message(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func TestIdeaWorkflowClaimIsExclusive(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	var writes []store.IdeaChange
	env.OnActivity(a.ApplyIdeaChange, mock.Anything, mock.Anything).Return(func(_ context.Context, c store.IdeaChange) error {
		writes = append(writes, c)
		return nil
	})
	create := s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "Idea"})
	claim := s.send(2*time.Second, UpdateClaimIdea, IdeaCommand{Actor: pm})
	stolen := s.send(3*time.Second, UpdateClaimIdea, IdeaCommand{Actor: other})
	release := s.send(4*time.Second, UpdateReleaseIdea, IdeaCommand{Actor: other})
	skip := s.send(5*time.Second, UpdateSkipElaboration, SkipElaborationInput{Actor: pm, Reason: "clear"})
	del := s.send(6*time.Second, UpdateDeleteIdea, IdeaCommand{Actor: pm})
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "a deleted idea's workflow ends")

	require.NoError(t, create.rejected)
	require.NoError(t, claim.failed)
	require.NoError(t, claim.rejected)
	require.Contains(t, message(stolen.rejected), "Can only claim Ideas with open status")
	require.Contains(t, message(release.rejected), "Only the assignee can release a claimed Idea")
	require.NoError(t, skip.rejected)
	require.NoError(t, del.rejected)

	// Rejected updates wrote nothing: create, claim, skip and delete did.
	require.Len(t, writes, 4)
	require.NotNil(t, writes[0].Insert)
	require.Equal(t, store.IdeaPatch{Status: ptr(vocab.IdeaElaborating), Assignee: writes[1].Patch.Assignee}, writes[1].Patch)
	require.Equal(t, "agent", writes[1].Patch.Assignee.Value.Type)
	require.Equal(t, vocab.IdeaElaborating, writes[1].NewStatus())
	require.Equal(t, int64(1), writes[1].Expect, "the claim applies from the create's version")
	require.Equal(t, int64(2), writes[1].Version())
	require.True(t, strings.HasPrefix(writes[1].ID, "default-test-workflow-id#2@"), writes[1].ID)
	require.Equal(t, "assigned", writes[1].Activities[0].Action)
	require.Equal(t, vocab.IdeaElaborated, writes[2].NewStatus())
	require.True(t, writes[3].Delete)
	require.Equal(t, int64(3), writes[3].Expect)
}

// A change whose row is not where the workflow expects it is a projection conflict: the
// command is refused as such and the state does not move (docs/write-path.md).
func TestIdeaWorkflowConflictChangesNothing(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.ApplyIdeaChange, mock.Anything, mock.Anything).Return(func(_ context.Context, c store.IdeaChange) error {
		if c.Insert == nil {
			conflict := store.ProjectionConflict{Table: "ideas", UUID: "idea-1", Write: c.Write, Found: true, Version: 2,
				ChangeID: "idea/idea-1#2@another-run", Status: "elaborating"}
			return temporal.NewNonRetryableApplicationError(conflict.Error(), activities.ErrProjectionConflict, nil, conflict)
		}
		return nil
	})
	s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "Idea"})
	claim := s.send(2*time.Second, UpdateClaimIdea, IdeaCommand{Actor: pm})
	var state IdeaState
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&state))
		env.CancelWorkflow()
	}, 3*time.Second)
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})
	require.Contains(t, message(claim.failed), "its stored record and its workflow disagree")
	var app *temporal.ApplicationError
	require.True(t, errors.As(claim.failed, &app))
	require.Equal(t, string(KindDiverged), app.Type())
	require.Equal(t, "open", state.Status, "the claim was not written, so the state did not move")
	require.Nil(t, state.Assignee)
	require.Equal(t, int64(1), state.Row.Version)
}

func TestIdeaWorkflowContinuesAsNewWithItsState(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.ApplyIdeaChange, mock.Anything, mock.Anything).Return(nil)
	s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "Idea"})
	s.send(2*time.Second, UpdateClaimIdea, IdeaCommand{Actor: pm})
	s.send(3*time.Second, UpdateStartElaboration, StartElaborationInput{Actor: pm, Depth: "standard", Questions: []QuestionInput{
		{ID: "q1", Text: "?", Category: "scope", Options: []store.QuestionOption{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}}})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 4*time.Second)
	env.RegisterDelayedCallback(func() {}, 5*time.Second) // wakes the main loop
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})

	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "got %v", env.GetWorkflowError())
	require.Equal(t, IdeaWorkflowName, can.WorkflowType.Name)
	var next IdeaRun
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.Equal(t, "elaborating", next.State.Status)
	require.Equal(t, "pm-1", next.State.Assignee.UUID)
	require.Len(t, next.State.Rounds, 1)
	require.Equal(t, fingerprint("q1"), next.State.Rounds[0].Questions[0].ID)
	require.Equal(t, int64(3), next.State.Row.Version)
	require.Len(t, next.State.Recent, 3, "the updates of this run travel to the next one")
}

func TestTaskWorkflowVerifyNeedsRequiredCriteria(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.ApplyTaskChange, mock.Anything, mock.Anything).Return(store.TaskOutcome{}, nil)
	env.OnActivity(a.Blockers, mock.Anything, mock.Anything).Return([]store.TaskLink{}, nil)
	env.OnActivity(a.ChangeApplied, mock.Anything, mock.Anything, mock.Anything).Return(false, nil)
	dev := Actor{Type: "agent", UUID: "dev", Name: "Dev", CompanyUUID: "co"}
	admin := Actor{Type: "agent", UUID: "admin", Name: "Admin", CompanyUUID: "co"}
	st := TaskState{Created: true, UUID: "t", CompanyUUID: "co", ProjectUUID: "p", Title: "T", Status: "open",
		Priority: "medium", Row: RowMark{Version: 1, ChangeID: "task-batch/b#1@r"}, Criteria: []CriterionState{
			{UUID: "c1", Required: true, Status: "pending", DevStatus: "pending"},
			{UUID: "c2", Required: false, Status: "pending", DevStatus: "pending"}}}
	s.send(time.Second, UpdateClaimTask, TaskCommand{Actor: dev})
	again := s.send(2*time.Second, UpdateClaimTask, TaskCommand{Actor: dev})
	s.send(3*time.Second, UpdateUpdateTask, UpdateTaskInput{Actor: dev, Status: ptr("in_progress")})
	s.send(4*time.Second, UpdateSubmitForVerify, SubmitInput{Actor: dev})
	early := s.send(5*time.Second, UpdateVerifyTask, TaskCommand{Actor: admin})
	s.send(6*time.Second, UpdateMarkCriteria, MarkCriteriaInput{Actor: admin, Marks: []CriterionMark{{UUID: "c1", Status: "passed"}}})
	done := s.send(7*time.Second, UpdateVerifyTask, TaskCommand{Actor: admin})
	var state TaskState
	env.RegisterDelayedCallback(func() {
		v, _ := env.QueryWorkflow(QueryState)
		_ = v.Get(&state)
		env.CancelWorkflow()
	}, 8*time.Second)
	env.ExecuteWorkflow(TaskWorkflow, TaskRun{State: &st})

	require.NoError(t, again.rejected)
	require.True(t, again.result.(TaskResult).Unchanged, "re-claiming your own task is a no-op")
	require.Equal(t, "Cannot verify task: Not all required acceptance criteria are passed. Required: 1, Passed: 0, Failed: 0, Pending: 1. "+
		"Mark them with chorus_mark_acceptance_criteria, or reopen the task.", message(early.rejected))
	require.NoError(t, done.rejected)
	require.Equal(t, "done", state.Status)
	require.Equal(t, int64(6), state.Row.Version)
}

func TestIdeaWorkflowEndsWhenCreateFails(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.ApplyIdeaChange, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("constraint", "StoreDown", nil))
	create := s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "Idea"})
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})
	require.Error(t, create.failed)
	require.True(t, env.IsWorkflowCompleted(), "a workflow whose idea was never created does not linger")
	require.NoError(t, env.GetWorkflowError())
}

// A workflow started by update-with-start whose create never comes (or is rejected by the
// validator) ends instead of lingering as an empty workflow.
func TestIdeaWorkflowEndsWhenNoCreateArrives(t *testing.T) {
	env, s := newEnv(t)
	blank := s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "  "})
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})
	require.Contains(t, message(blank.rejected), "title must not be blank")
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// An update id applied in an earlier run (before continue-as-new) returns its recorded result
// and is not applied again (docs/write-path.md, "Exactly once").
func TestRecentUpdatesSurviveContinueAsNew(t *testing.T) {
	env, _ := newEnv(t)
	var a *activities.Activities
	writes := 0
	env.OnActivity(a.ApplyIdeaChange, mock.Anything, mock.Anything).Return(func(context.Context, store.IdeaChange) error {
		writes++
		return nil
	})
	st := IdeaState{Created: true, UUID: "idea-1", CompanyUUID: "co", ProjectUUID: "p", Title: "Idea", Status: "elaborating",
		Assignee: &Holder{Type: "agent", UUID: pm.UUID}, Row: RowMark{Version: 2, ChangeID: "idea/idea-1#2@old"}}
	st.Recent.add("chorus_claim_idea/pm-1/r1/0", IdeaResult{UUID: "idea-1", Status: "elaborating"})
	var replayedResult any
	var replayedErr error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateClaimIdea, "chorus_claim_idea/pm-1/r1/0", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { replayedErr = err },
			OnComplete: func(r any, err error) { replayedResult, replayedErr = r, err },
		}, IdeaCommand{Actor: pm})
	}, time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 2*time.Second)
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{State: &st})
	require.NoError(t, replayedErr, "the repeated claim is answered, not refused as a second claim")
	require.Equal(t, IdeaResult{UUID: "idea-1", Status: "elaborating"}, replayedResult)
	require.Zero(t, writes, "nothing is applied again")

	var r Recent
	for i := range maxRecent + 5 {
		r.add(strings.Repeat("x", i), IdeaResult{})
	}
	require.Len(t, r, maxRecent, "the list is bounded")
	r.add("big", strings.Repeat("y", maxRecentResult+1))
	big, ok := r.find("big")
	require.True(t, ok)
	require.Nil(t, big.Result, "a large result is not kept")
}
