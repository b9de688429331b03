package workflows

import (
	"context"
	"github.com/chorus-dev/chorus/vocab"
)

// Command declares one command of an entity's workflow once: its update name (the tool's), the
// entity it goes to, its input and its result. The workflow registers its handler with it and
// the client sends it with it, so a handler and a caller that disagree on the name, the input or
// the result do not compile.
type Command[In, Out any] struct {
	Name   string
	Entity vocab.Entity
}

// The commands, one per lifecycle tool.
var (
	CreateIdea          = Command[CreateIdeaInput, IdeaResult]{UpdateCreateIdea, vocab.EntityIdea}
	ClaimIdea           = Command[IdeaCommand, IdeaResult]{UpdateClaimIdea, vocab.EntityIdea}
	ReleaseIdea         = Command[IdeaCommand, IdeaResult]{UpdateReleaseIdea, vocab.EntityIdea}
	AssignIdea          = Command[AssignIdeaInput, IdeaResult]{UpdateAssignIdea, vocab.EntityIdea}
	EditIdea            = Command[EditIdeaInput, IdeaResult]{UpdateEditIdea, vocab.EntityIdea}
	StartElaboration    = Command[StartElaborationInput, IdeaResult]{UpdateStartElaboration, vocab.EntityIdea}
	AnswerElaboration   = Command[AnswerElaborationInput, IdeaResult]{UpdateAnswerElaboration, vocab.EntityIdea}
	ValidateElaboration = Command[IdeaCommand, IdeaResult]{UpdateValidateElaboration, vocab.EntityIdea}
	SkipElaboration     = Command[SkipElaborationInput, IdeaResult]{UpdateSkipElaboration, vocab.EntityIdea}
	DeleteIdea          = Command[IdeaCommand, IdeaResult]{UpdateDeleteIdea, vocab.EntityIdea}
	CreateProposal      = Command[CreateProposalInput, ProposalResult]{UpdateCreateProposal, vocab.EntityProposal}
	AddDocumentDraft    = Command[DocumentDraftInput, ProposalResult]{UpdateAddDocumentDraft, vocab.EntityProposal}
	AddTaskDraft        = Command[TaskDraftInput, ProposalResult]{UpdateAddTaskDraft, vocab.EntityProposal}
	UpdateDocumentDraft = Command[DocumentDraftInput, ProposalResult]{UpdateUpdateDocumentDraft, vocab.EntityProposal}
	UpdateTaskDraft     = Command[TaskDraftInput, ProposalResult]{UpdateUpdateTaskDraft, vocab.EntityProposal}
	RemoveDocumentDraft = Command[RemoveDraftInput, ProposalResult]{UpdateRemoveDocumentDraft, vocab.EntityProposal}
	RemoveTaskDraft     = Command[RemoveDraftInput, ProposalResult]{UpdateRemoveTaskDraft, vocab.EntityProposal}
	SubmitProposal      = Command[ProposalCommand, ProposalResult]{UpdateSubmitProposal, vocab.EntityProposal}
	RejectProposal      = Command[ProposalCommand, ProposalResult]{UpdateRejectProposal, vocab.EntityProposal}
	ApproveProposal     = Command[ProposalCommand, ProposalResult]{UpdateApproveProposal, vocab.EntityProposal}
	CloseProposal       = Command[ProposalCommand, ProposalResult]{UpdateCloseProposal, vocab.EntityProposal}
	RevokeProposal      = Command[ProposalCommand, ProposalResult]{UpdateRevokeProposal, vocab.EntityProposal}
	ClaimTask           = Command[TaskCommand, TaskResult]{UpdateClaimTask, vocab.EntityTask}
	ClaimNextTask       = Command[TaskCommand, TaskResult]{UpdateClaimNextTask, vocab.EntityTask}
	ReleaseTask         = Command[TaskCommand, TaskResult]{UpdateReleaseTask, vocab.EntityTask}
	AssignTask          = Command[AssignTaskInput, TaskResult]{UpdateAssignTask, vocab.EntityTask}
	UpdateTask          = Command[UpdateTaskInput, TaskResult]{UpdateUpdateTask, vocab.EntityTask}
	ReportWork          = Command[ReportWorkInput, TaskResult]{UpdateReportWork, vocab.EntityTask}
	SelfCheck           = Command[MarkCriteriaInput, TaskResult]{UpdateSelfCheck, vocab.EntityTask}
	SubmitForVerify     = Command[SubmitInput, TaskResult]{UpdateSubmitForVerify, vocab.EntityTask}
	MarkCriteria        = Command[MarkCriteriaInput, TaskResult]{UpdateMarkCriteria, vocab.EntityTask}
	VerifyTask          = Command[TaskCommand, TaskResult]{UpdateVerifyTask, vocab.EntityTask}
	ReopenTask          = Command[ReopenInput, TaskResult]{UpdateReopenTask, vocab.EntityTask}
	CloseTask           = Command[TaskCommand, TaskResult]{UpdateCloseTask, vocab.EntityTask}
	DeleteTask          = Command[TaskCommand, TaskResult]{UpdateDeleteTask, vocab.EntityTask}
)

// Send sends cmd to the workflow of the entity uuid, on behalf of the agent actorUUID, and waits
// for its result. Transient refusals are retried with the same update id (see Client.update); a
// call whose deadline passes first returns ErrStillRunning.
func Send[In, Out any](ctx context.Context, c *Client, cmd Command[In, Out], uuid string, call Call, actorUUID string, in In) (Out, error) {
	var out Out
	err := c.update(ctx, cmd.Entity, uuid, cmd.Name, call, updateID(actorUUID, cmd.Name, call), in, &out)
	return out, err
}
