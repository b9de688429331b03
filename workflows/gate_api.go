// The API of human gates (docs/rules.md §6.7): the two updates every entity workflow with a
// gateable command takes, their inputs and results, and the gate as the state keeps it.

package workflows

import (
	"encoding/json"
	"time"

	"github.com/chorus-dev/chorus/vocab"
)

// Update names of the gate commands. They are no tools: app sends request_gate for an agent's
// call of a gated command, and decide_gate for a person's decision.
const (
	UpdateRequestGate = "request_gate"
	UpdateDecideGate  = "decide_gate"
)

// The gate commands of each entity that has a gateable command.
var (
	RequestProposalGate = Command[RequestGateInput, GateResult]{UpdateRequestGate, vocab.EntityProposal}
	DecideProposalGate  = Command[DecideGateInput, GateResult]{UpdateDecideGate, vocab.EntityProposal}
	RequestTaskGate     = Command[RequestGateInput, GateResult]{UpdateRequestGate, vocab.EntityTask}
	DecideTaskGate      = Command[DecideGateInput, GateResult]{UpdateDecideGate, vocab.EntityTask}
	RequestIdeaGate     = Command[RequestGateInput, GateResult]{UpdateRequestGate, vocab.EntityIdea}
	DecideIdeaGate      = Command[DecideGateInput, GateResult]{UpdateDecideGate, vocab.EntityIdea}
)

// GateCommands are the gate commands of an entity (request, decide); ok is false for an entity
// without gateable commands.
func GateCommands(e vocab.Entity) (request Command[RequestGateInput, GateResult], decide Command[DecideGateInput, GateResult], ok bool) {
	switch e {
	case vocab.EntityProposal:
		return RequestProposalGate, DecideProposalGate, true
	case vocab.EntityTask:
		return RequestTaskGate, DecideTaskGate, true
	case vocab.EntityIdea:
		return RequestIdeaGate, DecideIdeaGate, true
	}
	return request, decide, false
}

// GateEntity is the entity whose workflow holds the gates of command (vocab.GateCommands).
func GateEntity(command string) vocab.Entity {
	switch command {
	case vocab.GateApproveProposal:
		return vocab.EntityProposal
	case vocab.GateVerifyTask:
		return vocab.EntityTask
	}
	return vocab.EntityIdea
}

// RequestGateInput is an agent's call of a gated command, held for a person: the command
// (vocab.GateCommands), the command's own input as the workflow's update takes it (at most
// store.MaxGateInputBytes of JSON), and how long the request waits (0: until decided).
type RequestGateInput struct {
	Actor       Actor           `json:"actor"`
	Command     string          `json:"command"`
	Input       json.RawMessage `json:"input"`
	ExpireAfter time.Duration   `json:"expireAfter,omitempty"`
}

// DecideGateInput is a person's decision on an awaiting gate: approve applies the command with
// the person as its actor; a refusal needs a note.
type DecideGateInput struct {
	Actor    Actor   `json:"actor"`
	GateUUID string  `json:"gateUuid"`
	Approve  bool    `json:"approve"`
	Note     *string `json:"note,omitempty"`
}

// GateState is one gate as its entity's workflow keeps it: awaiting ones, and the latest decided.
type GateState struct {
	UUID        string          `json:"uuid"`
	Command     string          `json:"command"`
	Input       json.RawMessage `json:"input"`
	RequestedBy Actor           `json:"requestedBy"`
	RequestedAt time.Time       `json:"requestedAt"`
	ExpiresAt   *time.Time      `json:"expiresAt,omitempty"`
	Status      string          `json:"status"` // vocab.GateAwaiting, ...
	DecidedBy   *Party          `json:"decidedBy,omitempty"`
	DecidedAt   *time.Time      `json:"decidedAt,omitempty"`
	// Note is the person's note, or for a gate refused because its command no longer applied,
	// that command's refusal.
	Note *string `json:"note,omitempty"`
}

// GateResult is what both gate updates return: the gate as it stands.
type GateResult struct {
	UUID        string     `json:"uuid"`
	Command     string     `json:"command"`
	Status      string     `json:"status"`
	RequestedBy string     `json:"requestedBy"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	Note        *string    `json:"note,omitempty"`
	// Repeated: the request found the same requester's awaiting gate for the command.
	Repeated bool `json:"repeated,omitempty"`
}

func (g GateState) result() GateResult {
	return GateResult{UUID: g.UUID, Command: g.Command, Status: g.Status, RequestedBy: g.RequestedBy.UUID,
		ExpiresAt: g.ExpiresAt, Note: g.Note}
}
