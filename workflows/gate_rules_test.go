package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
