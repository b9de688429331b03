package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

func TestGateRules(t *testing.T) {
	agent := Actor{Type: "agent", UUID: "a1"}
	awaiting := GateState{UUID: "g1", Command: vocab.GateApproveProposal, RequestedBy: agent, Status: vocab.GateAwaiting}
	applied := GateState{UUID: "g2", Command: vocab.GateApproveProposal, RequestedBy: agent, Status: vocab.GateApplied}
	gates := []GateState{awaiting, applied}
	cmds := []string{vocab.GateApproveProposal}

	require.ErrorContains(t, checkGateRequest(nil, cmds, RequestGateInput{Actor: agent, Command: vocab.GateVerifyTask}),
		`command "verify_task" cannot be gated here`)
	big := json.RawMessage(`"` + strings.Repeat("x", store.MaxGateInputBytes) + `"`)
	require.ErrorContains(t, checkGateRequest(nil, cmds, RequestGateInput{Actor: agent, Command: vocab.GateApproveProposal, Input: big}),
		"over the 16384 a gate keeps")
	require.Equal(t, 0, awaitingFor(gates, vocab.GateApproveProposal, "a1"), "a repeat finds the awaiting gate")
	require.Equal(t, -1, awaitingFor(gates, vocab.GateApproveProposal, "a2"))
	full := make([]GateState, maxAwaitingGates)
	for i := range full {
		full[i] = GateState{UUID: string(rune('a' + i)), Command: vocab.GateApproveProposal, Status: vocab.GateAwaiting,
			RequestedBy: Actor{UUID: string(rune('A' + i))}}
	}
	require.ErrorContains(t, checkGateRequest(full, cmds, RequestGateInput{Actor: agent, Command: vocab.GateApproveProposal}),
		"already has 16 requests awaiting a person")

	note := "because"
	require.ErrorIs(t, checkGateDecision(gates, DecideGateInput{GateUUID: "nope", Approve: true}), gateNotFound)
	require.ErrorContains(t, checkGateDecision(gates, DecideGateInput{GateUUID: "g2", Approve: true}), "already decided: it is applied")
	require.ErrorContains(t, checkGateDecision(gates, DecideGateInput{GateUUID: "g1"}), "note is required to refuse a gate")
	require.NoError(t, checkGateDecision(gates, DecideGateInput{GateUUID: "g1", Note: &note}))
	require.NoError(t, checkGateDecision(gates, DecideGateInput{GateUUID: "g1", Approve: true}))
}

func TestSeparationOfDuties(t *testing.T) {
	require.ErrorContains(t, SeparationOfDuties(vocab.GateApproveProposal, "a1", "a1", nil), "you created this proposal")
	require.NoError(t, SeparationOfDuties(vocab.GateApproveProposal, "a2", "a1", []string{"a2"}))
	require.ErrorContains(t, SeparationOfDuties(vocab.GateVerifyTask, "a2", "a1", []string{"a3", "a2"}), "you worked on this task")
	require.NoError(t, SeparationOfDuties(vocab.GateVerifyTask, "a1", "a1", []string{"a3"}), "creating a task is not working on it")
	require.NoError(t, SeparationOfDuties(vocab.GateResolveElaboration, "a1", "a1", []string{"a1"}))
}

func TestKeepDecidedBoundsTheDecidedGates(t *testing.T) {
	var gates []GateState
	for i := 0; i < maxDecidedGates+3; i++ {
		gates = append(gates, GateState{UUID: string(rune('a' + i)), Status: vocab.GateRefused})
	}
	gates = append(gates, GateState{UUID: "z", Status: vocab.GateAwaiting}, GateState{UUID: "y", Status: vocab.GateAwaiting})
	out := keepDecided(gates, GateState{UUID: "z", Status: vocab.GateApplied})
	require.Len(t, out, maxDecidedGates+1, "the decided ones past the bound go, oldest first; the awaiting one stays")
	require.Equal(t, "y", out[len(out)-1].UUID)
	require.Equal(t, vocab.GateApplied, out[len(out)-2].Status)
	require.Equal(t, string(rune('a'+4)), out[0].UUID)
}

// An awaiting gate travels through continue-as-new, and the next run's timer expires it on time.
func TestGateExpiresAcrossContinueAsNew(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	admin := Actor{Type: "agent", UUID: "admin", Name: "Admin", CompanyUUID: "co"}
	st := TaskState{Created: true, UUID: "t", CompanyUUID: "co", ProjectUUID: "p", Title: "T", Status: "to_verify",
		Priority: "medium", Row: RowMark{Version: 4, ChangeID: "task/t#4@r"}, Criteria: []CriterionState{
			{UUID: "c1", Required: true, Status: "passed", DevStatus: "passed"}}}
	input, err := json.Marshal(TaskCommand{Actor: admin})
	require.NoError(t, err)

	env, s := newEnv(t)
	env.SetStartTime(t0)
	var a *activities.Activities
	env.OnActivity(a.RecordGate, mock.Anything, mock.Anything).Return(nil)
	req := s.send(time.Second, UpdateRequestGate, RequestGateInput{Actor: admin, Command: vocab.GateVerifyTask, Input: input,
		ExpireAfter: 10 * time.Second})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Second)
	env.RegisterDelayedCallback(func() {}, 6*time.Second)
	env.ExecuteWorkflow(TaskWorkflow, TaskRun{State: &st})
	require.NoError(t, req.rejected)
	require.NoError(t, req.failed)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "got %v", env.GetWorkflowError())
	var next TaskRun
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Len(t, next.State.Gates, 1)
	require.Equal(t, vocab.GateAwaiting, next.State.Gates[0].Status)
	require.Equal(t, t0.Add(11*time.Second), *next.State.Gates[0].ExpiresAt)

	env, _ = newEnv(t)
	env.SetStartTime(t0.Add(6 * time.Second))
	var settled []store.GateSettle
	env.OnActivity(a.SettleGate, mock.Anything, mock.Anything).Return(func(_ context.Context, o activities.GateOutcome) error {
		settled = append(settled, o.Settle)
		return nil
	})
	var state TaskState
	env.RegisterDelayedCallback(func() {
		v, _ := env.QueryWorkflow(QueryState)
		_ = v.Get(&state)
		env.CancelWorkflow()
	}, 30*time.Second)
	env.ExecuteWorkflow(TaskWorkflow, next)
	require.Len(t, settled, 1)
	require.Equal(t, vocab.GateExpired, settled[0].Status)
	require.Equal(t, t0.Add(11*time.Second), settled[0].At, "the next run's timer fires when the gate expires")
	require.Equal(t, vocab.GateExpired, state.Gates[0].Status)
	require.Equal(t, "to_verify", state.Status, "an expired gate changes nothing")
}
