package mcp

import (
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/vocab"
)

// AwaitingHuman is the answer of a gated command an agent called (docs/rules.md §6.7): nothing
// was applied; the call waits as a gate until a person decides it or it expires, and the agent
// is notified either way.
type AwaitingHuman struct {
	GateUUID     string     `json:"gateUuid" jsonschema:"the gate the call waits at"`
	Command      string     `json:"command" jsonschema:"the gated command: approve_proposal, verify_task or resolve_elaboration"`
	Status       string     `json:"status" jsonschema:"awaiting while no person has decided; then applied, refused or expired"`
	WhoMayDecide string     `json:"whoMayDecide" jsonschema:"who can decide the gate"`
	ExpiresAt    *time.Time `json:"expiresAt" jsonschema:"when the gate expires undecided; null: it waits until decided"`
	Message      string     `json:"message" jsonschema:"what happened and what to do next"`
}

// awaitingHuman is the tool's view of the gate a call waits at (nil: the call was not held). A
// call retried with its requestId after a person decided answers the gate as it ended.
func awaitingHuman(g *app.Gate) *AwaitingHuman {
	if g == nil {
		return nil
	}
	var msg string
	switch g.Status {
	case vocab.GateAwaiting:
		msg = "Not applied yet: this project's policy has a person decide this command. It waits at gate " + g.UUID +
			"; you will get a notification when a person approves or refuses it"
		if g.ExpiresAt != nil {
			msg += " or when it expires"
		}
		msg += ". Calling the command again answers with the same gate."
	case vocab.GateApplied:
		msg = "A person approved gate " + g.UUID + ": the command was applied in their name."
	case vocab.GateRefused:
		msg = "A person refused gate " + g.UUID + ": the command was not applied. Reason: " + deref(g.Note)
	default:
		msg = "Gate " + g.UUID + " expired before a person decided it: the command was not applied. Call it again to ask again."
	}
	return &AwaitingHuman{GateUUID: g.UUID, Command: g.Command, Status: g.Status, WhoMayDecide: g.WhoMayDecide,
		ExpiresAt: g.ExpiresAt, Message: msg}
}

// ApproveOut is chorus_admin_approve_proposal's result: the proposal, and awaitingHuman when
// the project's policy holds the approval for a person.
type ApproveOut struct {
	ProposalView
	AwaitingHuman *AwaitingHuman `json:"awaitingHuman,omitempty" jsonschema:"set when the approval waits for a person (docs/rules.md §6.7): nothing changed yet"`
}

// VerifyOut is chorus_admin_verify_task's result: the task's status, and awaitingHuman when the
// project's policy holds verification for a person.
type VerifyOut struct {
	StatusOut
	AwaitingHuman *AwaitingHuman `json:"awaitingHuman,omitempty" jsonschema:"set when verification waits for a person (docs/rules.md §6.7): nothing changed yet"`
}

// ResolveOut is chorus_pm_validate_elaboration's result: the elaboration, and awaitingHuman
// when the project's policy holds resolving for a person.
type ResolveOut struct {
	ElaborationView
	AwaitingHuman *AwaitingHuman `json:"awaitingHuman,omitempty" jsonschema:"set when resolving waits for a person (docs/rules.md §6.7): nothing changed yet"`
}
