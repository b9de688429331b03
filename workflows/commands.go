package workflows

import "context"

// Command declares one command of an entity's workflow once: its update name (the tool's), the
// entity it goes to, its input and its result. The workflow registers its handler with it and
// the client sends it with it, so a handler and a caller that disagree on the name, the input or
// the result do not compile.
type Command[In, Out any] struct {
	Name   string
	Entity Entity
}

// The commands, one per lifecycle tool.
var (
	CreateIdea          = Command[CreateIdeaInput, IdeaResult]{UpdateCreateIdea, EntityIdea}
	ClaimIdea           = Command[IdeaCommand, IdeaResult]{UpdateClaimIdea, EntityIdea}
	ReleaseIdea         = Command[IdeaCommand, IdeaResult]{UpdateReleaseIdea, EntityIdea}
	AssignIdea          = Command[AssignIdeaInput, IdeaResult]{UpdateAssignIdea, EntityIdea}
	EditIdea            = Command[EditIdeaInput, IdeaResult]{UpdateEditIdea, EntityIdea}
	StartElaboration    = Command[StartElaborationInput, IdeaResult]{UpdateStartElaboration, EntityIdea}
	AnswerElaboration   = Command[AnswerElaborationInput, IdeaResult]{UpdateAnswerElaboration, EntityIdea}
	ValidateElaboration = Command[IdeaCommand, IdeaResult]{UpdateValidateElaboration, EntityIdea}
	SkipElaboration     = Command[SkipElaborationInput, IdeaResult]{UpdateSkipElaboration, EntityIdea}
	DeleteIdea          = Command[IdeaCommand, IdeaResult]{UpdateDeleteIdea, EntityIdea}
	CreateProposal      = Command[CreateProposalInput, ProposalResult]{UpdateCreateProposal, EntityProposal}
	AddDocumentDraft    = Command[DocumentDraftInput, ProposalResult]{UpdateAddDocumentDraft, EntityProposal}
	AddTaskDraft        = Command[TaskDraftInput, ProposalResult]{UpdateAddTaskDraft, EntityProposal}
	UpdateDocumentDraft = Command[DocumentDraftInput, ProposalResult]{UpdateUpdateDocumentDraft, EntityProposal}
	UpdateTaskDraft     = Command[TaskDraftInput, ProposalResult]{UpdateUpdateTaskDraft, EntityProposal}
	RemoveDocumentDraft = Command[RemoveDraftInput, ProposalResult]{UpdateRemoveDocumentDraft, EntityProposal}
	RemoveTaskDraft     = Command[RemoveDraftInput, ProposalResult]{UpdateRemoveTaskDraft, EntityProposal}
	SubmitProposal      = Command[ProposalCommand, ProposalResult]{UpdateSubmitProposal, EntityProposal}
	RejectProposal      = Command[ProposalCommand, ProposalResult]{UpdateRejectProposal, EntityProposal}
	ApproveProposal     = Command[ProposalCommand, ProposalResult]{UpdateApproveProposal, EntityProposal}
	CloseProposal       = Command[ProposalCommand, ProposalResult]{UpdateCloseProposal, EntityProposal}
	RevokeProposal      = Command[ProposalCommand, ProposalResult]{UpdateRevokeProposal, EntityProposal}
	ClaimTask           = Command[TaskCommand, TaskResult]{UpdateClaimTask, EntityTask}
	ClaimNextTask       = Command[TaskCommand, TaskResult]{UpdateClaimNextTask, EntityTask}
	ReleaseTask         = Command[TaskCommand, TaskResult]{UpdateReleaseTask, EntityTask}
	AssignTask          = Command[AssignTaskInput, TaskResult]{UpdateAssignTask, EntityTask}
	UpdateTask          = Command[UpdateTaskInput, TaskResult]{UpdateUpdateTask, EntityTask}
	ReportWork          = Command[ReportWorkInput, TaskResult]{UpdateReportWork, EntityTask}
	SelfCheck           = Command[MarkCriteriaInput, TaskResult]{UpdateSelfCheck, EntityTask}
	SubmitForVerify     = Command[SubmitInput, TaskResult]{UpdateSubmitForVerify, EntityTask}
	MarkCriteria        = Command[MarkCriteriaInput, TaskResult]{UpdateMarkCriteria, EntityTask}
	VerifyTask          = Command[TaskCommand, TaskResult]{UpdateVerifyTask, EntityTask}
	ReopenTask          = Command[ReopenInput, TaskResult]{UpdateReopenTask, EntityTask}
	CloseTask           = Command[TaskCommand, TaskResult]{UpdateCloseTask, EntityTask}
	DeleteTask          = Command[TaskCommand, TaskResult]{UpdateDeleteTask, EntityTask}
)

// Send sends cmd to the workflow of the entity uuid, on behalf of the agent actorUUID, and waits
// for its result. Transient refusals are retried with the same update id (see Client.update); a
// call whose deadline passes first returns ErrStillRunning.
func Send[In, Out any](ctx context.Context, c *Client, cmd Command[In, Out], uuid string, call Call, actorUUID string, in In) (Out, error) {
	var out Out
	err := c.update(ctx, cmd.Entity, uuid, cmd.Name, call, updateID(actorUUID, cmd.Name, call), in, &out)
	return out, err
}
