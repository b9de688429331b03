package workflows

import (
	"context"
	"errors"
	"io"
	"log/slog"
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
	var writes []activities.IdeaChange
	env.OnActivity(a.PersistIdea, mock.Anything, mock.Anything).Return(func(_ context.Context, c activities.IdeaChange) error {
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
	require.Equal(t, []string{"status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid"}, writes[1].Columns)
	require.Equal(t, "elaborating", writes[1].Row.Status)
	require.Equal(t, int64(2), writes[1].Version)
	require.Equal(t, "assigned", writes[1].Activities[0].Action)
	require.Equal(t, "elaborated", writes[2].Row.Status)
	require.True(t, writes[3].Delete)
}

func TestIdeaWorkflowFailedWriteChangesNothing(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	calls := 0
	env.OnActivity(a.PersistIdea, mock.Anything, mock.Anything).Return(func(_ context.Context, c activities.IdeaChange) error {
		calls++
		if c.Insert == nil && calls < 100 {
			return temporal.NewNonRetryableApplicationError("disk full", "StoreDown", nil)
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
	require.Error(t, claim.failed)
	require.Equal(t, "open", state.Idea.Status, "the claim's write failed, so the state did not move")
	require.Nil(t, state.Idea.AssigneeUUID)
	require.Equal(t, int64(1), state.Idea.Version)
}

func TestIdeaWorkflowContinuesAsNewWithItsState(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.PersistIdea, mock.Anything, mock.Anything).Return(nil)
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
	require.Equal(t, "elaborating", next.State.Idea.Status)
	require.Equal(t, "pm-1", *next.State.Idea.AssigneeUUID)
	require.Len(t, next.State.Rounds, 1)
	require.Equal(t, int64(3), next.State.Idea.Version)
}

func TestTaskWorkflowVerifyNeedsRequiredCriteria(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.PersistTask, mock.Anything, mock.Anything).Return(activities.TaskOutcome{}, nil)
	env.OnActivity(a.Blockers, mock.Anything, mock.Anything).Return([]store.TaskLink{}, nil)
	dev := Actor{Type: "agent", UUID: "dev", Name: "Dev", CompanyUUID: "co"}
	admin := Actor{Type: "agent", UUID: "admin", Name: "Admin", CompanyUUID: "co"}
	st := TaskState{Created: true, Task: store.Task{UUID: "t", CompanyUUID: "co", ProjectUUID: "p", Title: "T", Status: "open",
		Priority: "medium", Version: 1}, Criteria: []CriterionState{
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
	require.Equal(t, "done", state.Task.Status)
}

func TestIdeaWorkflowEndsWhenCreateFails(t *testing.T) {
	env, s := newEnv(t)
	var a *activities.Activities
	env.OnActivity(a.PersistIdea, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("constraint", "StoreDown", nil))
	create := s.send(time.Second, UpdateCreateIdea, CreateIdeaInput{Actor: pm, UUID: "idea-1", ProjectUUID: "p", Title: "Idea"})
	env.ExecuteWorkflow(IdeaWorkflow, IdeaRun{})
	require.Error(t, create.failed)
	require.True(t, env.IsWorkflowCompleted(), "a workflow whose idea was never created does not linger")
	require.NoError(t, env.GetWorkflowError())
}
