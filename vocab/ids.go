package vocab

import (
	"fmt"
	"strings"
)

// Entity is a kind of lifecycle entity; each has its own workflow type and id prefix.
type Entity string

// The lifecycle entities.
const (
	EntityIdea     Entity = "idea"
	EntityProposal Entity = "proposal"
	EntityTask     Entity = "task"
)

// WorkflowID returns the workflow id of an entity: "<entity>/<uuid>", e.g. "idea/0b6f...".
// Ids read as what they are in the Temporal UI and are derived from the entity's uuid, so a
// create is idempotent.
func WorkflowID(e Entity, uuid string) string { return string(e) + "/" + uuid }

// IdeaID is the workflow id of an idea.
func IdeaID(uuid string) string { return WorkflowID(EntityIdea, uuid) }

// ProposalID is the workflow id of a proposal.
func ProposalID(uuid string) string { return WorkflowID(EntityProposal, uuid) }

// TaskID is the workflow id of a task.
func TaskID(uuid string) string { return WorkflowID(EntityTask, uuid) }

// ParseWorkflowID splits a workflow id made by WorkflowID back into entity and uuid.
func ParseWorkflowID(id string) (Entity, string, error) {
	e, uuid, ok := strings.Cut(id, "/")
	switch Entity(e) {
	case EntityIdea, EntityProposal, EntityTask:
		if ok && uuid != "" {
			return Entity(e), uuid, nil
		}
	}
	return "", "", fmt.Errorf("workflow id %q is not <idea|proposal|task>/<uuid>", id)
}
