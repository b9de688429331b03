// The rules of human gates (docs/rules.md §6.7): pure checks on the gates an entity's workflow
// keeps, and the separation-of-duties rule; no Temporal calls.

package workflows

import (
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Gate limits: how many gates an entity keeps awaiting at once, and how many decided ones it
// remembers (for a clear answer to a second decision; the row remembers them all).
const (
	maxAwaitingGates = 16
	maxDecidedGates  = 16
)

var gateNotFound = Refuse(KindNotFound, "Gate not found")

// findGate returns the index of the gate uuid in gates, or -1.
func findGate(gates []GateState, uuid string) int {
	return slices.IndexFunc(gates, func(g GateState) bool { return g.UUID == uuid })
}

// awaitingFor returns the index of requester's awaiting gate for command, or -1: a repeated call
// answers with that gate instead of asking again.
func awaitingFor(gates []GateState, command, requester string) int {
	return slices.IndexFunc(gates, func(g GateState) bool {
		return g.Status == vocab.GateAwaiting && g.Command == command && g.RequestedBy.UUID == requester
	})
}

// checkGateRequest: the command is one of the entity's (commands), its input fits, and the
// entity has room for another awaiting gate unless this one repeats one.
func checkGateRequest(gates []GateState, commands []string, in RequestGateInput) error {
	if !slices.Contains(commands, in.Command) {
		return Refuse(KindInvalid, "Input validation error: command %q cannot be gated here (one of %s)", in.Command,
			strings.Join(commands, ", "))
	}
	if len(in.Input) > store.MaxGateInputBytes {
		return Refuse(KindInvalid, "Input validation error: the command's input is %d bytes, over the %d a gate keeps",
			len(in.Input), store.MaxGateInputBytes)
	}
	if awaitingFor(gates, in.Command, in.Actor.UUID) >= 0 {
		return nil
	}
	awaiting := 0
	for _, g := range gates {
		if g.Status == vocab.GateAwaiting {
			awaiting++
		}
	}
	if awaiting >= maxAwaitingGates {
		return Refuse(KindConflict, "This entity already has %d requests awaiting a person; ask one of them to decide first",
			awaiting)
	}
	return nil
}

// checkGateDecision: the gate is known, still awaiting, and a refusal carries a note.
func checkGateDecision(gates []GateState, in DecideGateInput) error {
	i := findGate(gates, in.GateUUID)
	if i < 0 {
		return gateNotFound
	}
	if g := gates[i]; g.Status != vocab.GateAwaiting {
		return GateAlreadyDecided(g.Status)
	}
	if !in.Approve && (in.Note == nil || strings.TrimSpace(*in.Note) == "") {
		return Refuse(KindInvalid, "Input validation error: note is required to refuse a gate (say why, for the agent that asked)")
	}
	return nil
}

// GateAlreadyDecided is the refusal of a decision on a gate that has ended (status applied,
// refused or expired): each gate is decided once.
func GateAlreadyDecided(status string) error {
	return Refuse(KindConflict, "This gate was already decided: it is %s, and a gate is decided only once", status)
}

// SeparationOfDuties is the separation-of-duties rule of docs/rules.md §6.7, for a project whose
// policy asks it: an agent may not approve a proposal it created (creator) nor verify a task it
// worked on (workers: the agents that held or submitted it). actor is the calling agent's uuid;
// people are not held to it.
func SeparationOfDuties(command, actor, creator string, workers []string) error {
	switch {
	case command == vocab.GateApproveProposal && actor == creator:
		return Refuse(KindForbidden, "Separation of duties: you created this proposal, so another agent or a person must approve it "+
			"(this project's policy)")
	case command == vocab.GateVerifyTask && slices.Contains(workers, actor):
		return Refuse(KindForbidden, "Separation of duties: you worked on this task (held or submitted it), so another agent or "+
			"a person must verify it (this project's policy)")
	}
	return nil
}
