package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/chorus-dev/chorus/store"
)

// ErrDraftsTooLarge is the type of the non-retryable error ApplyProposalChange returns when a
// draft edit would grow the drafts past store.MaxDraftBytes.
const ErrDraftsTooLarge = "chorus.DraftsTooLarge"

// ApplyProposalChange writes one proposal command's change by the write protocol.
func (a *Activities) ApplyProposalChange(ctx context.Context, c store.ProposalChange) error {
	err := a.Store.ApplyProposalChange(ctx, c)
	var big *store.DraftsTooLargeError
	if errors.As(err, &big) {
		return temporal.NewNonRetryableApplicationError(big.Error(), ErrDraftsTooLarge, nil)
	}
	if err != nil {
		return outcome(err)
	}
	if c.SetsStatus() { // submitted, rejected, approved, closed, revoked
		return a.refreshProposalIdeas(ctx, c.UUID)
	}
	return nil
}

// ProposalDrafts reads a proposal with its drafts (docs/rules.md §5.4 validation, §5.6 approval).
func (a *Activities) ProposalDrafts(ctx context.Context, proposalUUID string) (store.Proposal, error) {
	p, err := a.Store.ProposalDrafts(ctx, proposalUUID)
	return p, outcome(err)
}

// LoadInputIdeas reads the input ideas of a proposal, in input order (see store.LoadIdeaFacts).
func (a *Activities) LoadInputIdeas(ctx context.Context, companyUUID string, uuids []string) ([]store.IdeaFacts, error) {
	return a.Store.LoadIdeaFacts(ctx, companyUUID, uuids)
}

// ApplyApproval writes an approval's materialization in one transaction (docs/rules.md §5.6).
func (a *Activities) ApplyApproval(ctx context.Context, ap store.Approval) error {
	if err := a.Store.ApplyApproval(ctx, ap); err != nil {
		return outcome(err)
	}
	return a.refreshProposalIdeas(ctx, ap.Change.UUID)
}

// RevokeCascade applies a revoke (docs/rules.md §5.7) in one transaction and reports what it closed and
// deleted.
func (a *Activities) RevokeCascade(ctx context.Context, c store.ProposalChange, reviewNote *string) (store.Revoked, error) {
	out, err := a.Store.RevokeCascade(ctx, c, reviewNote)
	if err != nil {
		return out, outcome(err)
	}
	return out, a.refreshProposalIdeas(ctx, c.UUID)
}

// WorkflowStart is one workflow to make sure of: its id, type, input (JSON) and what operators
// see before it first runs.
type WorkflowStart struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Input   json.RawMessage `json:"input"`
	Summary string          `json:"summary"`
	// Keywords are keyword search attributes, by name.
	Keywords map[string]string `json:"keywords"`
	Memo     map[string]any    `json:"memo"`
}

// StartWorkflows makes sure each workflow runs: it starts those not started yet, on this
// activity's task queue, and leaves running ones alone (conflict policy "use existing"); one
// that has already closed counts as started. It is retried until every start succeeded, so an
// approval never leaves a task without its workflow (docs/write-path.md).
func (a *Activities) StartWorkflows(ctx context.Context, starts []WorkflowStart) error {
	if a.Temporal == nil {
		return errors.New("no Temporal client: the worker was built without one")
	}
	queue := activity.GetInfo(ctx).TaskQueue
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(startConcurrency)
	for _, s := range starts {
		g.Go(func() error { return a.startWorkflow(gctx, queue, s) })
	}
	return g.Wait()
}

// startConcurrency bounds the starts StartWorkflows has in flight at once: a batch of 100 tasks
// makes 100 StartWorkflowExecution calls, which one after another cost 100 round trips.
const startConcurrency = 8

func (a *Activities) startWorkflow(ctx context.Context, queue string, s WorkflowStart) error {
	var attrs []temporal.SearchAttributeUpdate
	if a.SealKeywords != nil {
		s.Keywords = maps.Clone(s.Keywords)
		a.SealKeywords(s.Keywords)
	}
	for k, v := range s.Keywords {
		attrs = append(attrs, temporal.NewSearchAttributeKeyKeyword(k).ValueSet(v))
	}
	_, err := a.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.ID, TaskQueue: queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:            s.Summary, Memo: s.Memo, TypedSearchAttributes: temporal.NewSearchAttributes(attrs...),
	}, s.Type, s.Input)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start workflow %s: %w", s.ID, err)
	}
	return nil
}
