package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// What operators see of a workflow in the Temporal UI (docs/operations.md "The Temporal UI"): its memo and its
// custom search attributes, as DescribeWorkflowExecution reads them from the workflow's own record.

// operatorView is a workflow's memo and custom search attributes, decoded; a key that is unset is
// absent.
type operatorView struct {
	memo  map[string]any
	attrs map[string]string
}

// describe reads workflow id's operator view (its current run).
func (e *env) describe(id string) (operatorView, error) {
	d, err := e.tc.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		return operatorView{}, err
	}
	v := operatorView{memo: map[string]any{}, attrs: map[string]string{}}
	decode := func(p *commonpb.Payload, into any) error { return workflows.DataConverter().FromPayload(p, into) }
	for k, p := range d.GetWorkflowExecutionInfo().GetMemo().GetFields() {
		var x any
		if err := decode(p, &x); err != nil {
			return operatorView{}, err
		}
		v.memo[k] = x
	}
	for k, p := range d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields() {
		if !strings.HasPrefix(k, "Chorus") {
			continue // Temporal's own, such as BuildIds
		}
		var s string
		if err := decode(p, &s); err != nil {
			return operatorView{}, err
		}
		v.attrs[k] = s
	}
	return v, nil
}

// requireProjectInMemo polls until workflow id's memo names project (by name).
func (e *env) requireProjectInMemo(t *testing.T, id, project string) {
	t.Helper()
	requireEventually(t, func() bool {
		v, err := e.describe(id)
		return err == nil && v.memo["project"] == project
	}, "%s's memo names project %q", id, project)
}

// Ideas, proposals, tasks and task batches show operators their project's name in the memo, and
// the creator in ChorusCreator; ChorusAssignee is an idea's or a task's assignee and a proposal
// has none. A move of the idea renames the project in every moved workflow's memo.
func TestOperatorViewsNameProjectAndCreator(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newMoveWorld(t, e)
		pm, dev, admin := e.agentID("PM"), e.agentID("Dev"), e.agentID("Admin Agent")
		var quick CreatedTasks
		ok(t, w.admin, "chorus_create_tasks", map[string]any{"projectUuid": w.a, "requestId": "views-1", "tasks": []map[string]any{
			{"title": "Quick", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &quick)
		batch := workflows.TaskBatchID(workflows.DerivedUUID("create-tasks", admin, "views-1", "0"))

		type want struct {
			title, creator string
			assignee       *string // nil: the attribute must be unset
		}
		none, pmHolds, devHolds := "", pm, dev
		wants := map[string]want{vocab.IdeaID(w.root): {"Root", pm, &pmHolds}, vocab.IdeaID(w.child): {"Child", pm, &none}, vocab.ProposalID(w.proposal): {"SSO rollout", pm, nil}, vocab.TaskID(w.tasks[0]): {"Schema", pm, &devHolds}, vocab.TaskID(w.tasks[1]): {"API", pm, &none}, vocab.TaskID(quick.Tasks[0].UUID): {"Quick", admin, &none}}
		for id, wt := range wants {
			var v operatorView
			requireEventually(t, func() bool {
				var err error
				v, err = e.describe(id)
				_, hasAssignee := v.attrs[workflows.AssigneeKey.GetName()]
				return err == nil && v.attrs[workflows.CreatorKey.GetName()] == wt.creator && hasAssignee == (wt.assignee != nil)
			}, "%s shows its creator, and an assignee unless it is a proposal", id)
			require.Equal(t, wt.title, v.memo["title"], id)
			require.Equal(t, "Apollo", v.memo["project"], id)
			require.Len(t, v.memo[workflows.MemoDigest], 16, "%s keeps the digest ops check compares", id)
			require.Positive(t, v.memo[workflows.MemoVersion], "%s keeps its row version", id)
			require.Len(t, v.memo, 4, id)
			require.Equal(t, w.a, v.attrs[workflows.ProjectUUIDKey.GetName()], id)
			if wt.assignee != nil {
				require.Equal(t, *wt.assignee, v.attrs[workflows.AssigneeKey.GetName()], id)
			}
		}
		v, err := e.describe(batch)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"projectUuid": w.a, "project": "Apollo", "tasks": float64(1)}, v.memo)

		ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b}, nil)
		w.requireMovedTo(t, e, w.b) // (memos included)
		for id, wt := range wants {
			v, err := e.describe(id)
			require.NoError(t, err)
			project := "Borealis"
			if id == vocab.TaskID(quick.Tasks[0].UUID) {
				project = "Apollo" // not part of the idea's cascade
			}
			require.Equal(t, wt.title, v.memo["title"], id)
			require.Equal(t, project, v.memo["project"], id)
			require.Len(t, v.memo[workflows.MemoDigest], 16, id)
			require.Equal(t, wt.creator, v.attrs[workflows.CreatorKey.GetName()], "%s: a move keeps the creator", id)
		}
	})
}
