package workflows

import "github.com/chorus-dev/chorus/vocab"

// TaskQueue is the one task queue every Chorus workflow and activity runs on.
const TaskQueue = "chorus"

// Namespace is the Temporal namespace Chorus uses unless configured otherwise.
const Namespace = "default"

// Entity and the workflow-id helpers live in package vocab. The names below are the
// transitional names, removed once issue 21's branches merge; new code names vocab directly.

// Entity is vocab.Entity (transitional name).
type Entity = vocab.Entity

// Transitional entity names.
const (
	EntityIdea     = vocab.EntityIdea
	EntityProposal = vocab.EntityProposal
	EntityTask     = vocab.EntityTask
)

// WorkflowID is vocab.WorkflowID (transitional name).
func WorkflowID(e Entity, uuid string) string { return vocab.WorkflowID(e, uuid) }

// IdeaID is vocab.IdeaID (transitional name).
func IdeaID(uuid string) string { return vocab.IdeaID(uuid) }

// ProposalID is vocab.ProposalID (transitional name).
func ProposalID(uuid string) string { return vocab.ProposalID(uuid) }

// TaskID is vocab.TaskID (transitional name).
func TaskID(uuid string) string { return vocab.TaskID(uuid) }

// ParseWorkflowID is vocab.ParseWorkflowID (transitional name).
func ParseWorkflowID(id string) (Entity, string, error) { return vocab.ParseWorkflowID(id) }
