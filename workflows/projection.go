package workflows

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// What ops check and ops repair need of the workflows (docs/write-path.md, "Check and
// repair"): the state each workflow would start from, given its rows, and a way to start it.

// IdeaStateFromRows is the state an idea's workflow starts from when ops repair restarts it:
// the idea's row and its rounds with their questions.
func IdeaStateFromRows(i store.Idea, rounds []store.ElaborationRound) IdeaState {
	s := IdeaState{Created: true, UUID: i.UUID, CompanyUUID: i.CompanyUUID, ProjectUUID: i.ProjectUUID, Title: i.Title,
		Status: string(i.Status), IsContainer: i.IsContainer,
		ElaborationDepth: deref(i.ElaborationDepth), ElaborationStatus: deref(i.ElaborationStatus),
		CreatedBy: Party{Type: i.CreatedByType, UUID: i.CreatedByUUID}, Row: RowMark{Version: i.Version, ChangeID: i.ChangeID}}
	if i.AssigneeUUID != nil {
		s.Assignee = &Holder{Type: deref(i.AssigneeType), UUID: *i.AssigneeUUID, By: i.AssignedByUUID}
		if i.AssignedAt != nil {
			s.Assignee.At = *i.AssignedAt
		}
	}
	for _, r := range rounds {
		rs := RoundState{UUID: r.UUID, Number: r.RoundNumber, Status: string(r.Status)}
		for _, q := range r.Questions {
			qs := QuestionState{UUID: q.UUID, ID: fingerprint(q.QuestionID), Required: q.Required, Answered: q.AnsweredAt != nil}
			for _, o := range q.Options {
				qs.Options = append(qs.Options, fingerprint(o.ID))
			}
			rs.Questions = append(rs.Questions, qs)
		}
		s.Rounds = append(s.Rounds, rs)
	}
	return s
}

// ProposalStateFromRow is the state a proposal's workflow starts from when ops repair restarts
// it. Approvals counts from zero again: approval ids derive from the approval's change, not the
// count.
func ProposalStateFromRow(p store.Proposal) ProposalState {
	s := ProposalState{Created: true, UUID: p.UUID, CompanyUUID: p.CompanyUUID, ProjectUUID: p.ProjectUUID, Title: p.Title,
		Status: string(p.Status), InputType: p.InputType, InputUUIDs: p.InputUUIDs, CreatedBy: Party{Type: p.CreatedByType, UUID: p.CreatedByUUID},
		ReviewedBy: deref(p.ReviewedByUUID), ReviewedAt: p.ReviewedAt, Row: RowMark{Version: p.Version, ChangeID: p.ChangeID}}
	if s.InputUUIDs == nil {
		s.InputUUIDs = []string{}
	}
	for _, d := range p.DocumentDrafts {
		s.Documents = append(s.Documents, d.UUID)
	}
	for _, t := range p.TaskDrafts {
		s.Tasks = append(s.Tasks, t.UUID)
	}
	return s
}

// StartFromState starts a new run of an entity's workflow from state (an IdeaState,
// ProposalState or TaskState), for ops repair: the workflow is missing, or its last run ended
// (terminated, failed). It refuses when a run is still open.
func (c *Client) StartFromState(ctx context.Context, state any) (string, error) {
	var id, typ string
	var run any
	// The memo holds the state's digest from the start, so the run's first publish need not add it.
	var opts = func(e vocab.Entity, summary, title, project, projectName, status, creator string, version int64,
		checked Checked, err error) client.StartWorkflowOptions {
		return client.StartWorkflowOptions{StaticSummary: summary + title,
			Memo:                  startMemo(withDigest(entityMemo(title, projectName), true, checked, err, version)),
			TypedSearchAttributes: initialAttributes(e, project, title, status, creator, c.SealText)}
	}
	var o client.StartWorkflowOptions
	switch s := state.(type) {
	case IdeaState:
		id, typ, run = vocab.IdeaID(s.UUID), IdeaWorkflowName, IdeaRun{State: &s}
		checked, err := s.Checked()
		o = opts(vocab.EntityIdea, "Idea: ", s.Title, s.ProjectUUID, s.ProjectName, s.Status, s.CreatedBy.UUID, s.Row.Version, checked, err)
	case ProposalState:
		id, typ, run = vocab.ProposalID(s.UUID), ProposalWorkflowName, ProposalRun{State: &s}
		checked, err := s.Checked()
		o = opts(vocab.EntityProposal, "Proposal: ", s.Title, s.ProjectUUID, s.ProjectName, s.Status, s.CreatedBy.UUID, s.Row.Version,
			checked, err)
	case TaskState:
		id, typ, run = vocab.TaskID(s.UUID), TaskWorkflowName, TaskRun{State: &s}
		checked, err := s.Checked()
		o = opts(vocab.EntityTask, "Task: ", s.Title, s.ProjectUUID, s.ProjectName, s.Status, s.CreatedBy.UUID, s.Row.Version, checked, err)
	default:
		return "", fmt.Errorf("no workflow starts from a %T", state)
	}
	o.ID, o.TaskQueue = id, c.TaskQueue
	o.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	o.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	r, err := c.Temporal.ExecuteWorkflow(ctx, o, typ, run)
	if err != nil {
		return "", fmt.Errorf("start %s: %w", id, err)
	}
	if _, ok := state.(IdeaState); ok {
		// The rows do not say the idea's progress: the new run reads it (idea_progress.go). Best
		// effort: the idea's next change asks again.
		_ = c.Temporal.SignalWorkflow(ctx, id, r.GetRunID(), SignalRefreshProgress, nil)
	}
	return r.GetRunID(), nil
}
