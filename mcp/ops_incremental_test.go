package mcp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// chorus ops check --incremental (docs/write-path.md, "Check and repair"): after a full pass, a
// pass compares only what moved since (a row written, a workflow reset or ended, a row changed
// by hand) and finds what a full pass would find there; what did not move is not compared.
func TestIncrementalCheckComparesWhatMoved(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		var created CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "A", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "B", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "C", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "D", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
		a, b, c, d := created.Tasks[0].UUID, created.Tasks[1].UUID, created.Tasks[2].UUID, created.Tasks[3].UUID
		idea := createIdea(t, admin, project, "Idea", nil)
		x := e.ops()

		r, p, err := x.CheckPass(ctx)
		require.NoError(t, err)
		require.Empty(t, r.Findings)
		require.Equal(t, 5, p.Entities)
		require.Equal(t, 5, p.Compared)
		require.Equal(t, []string{"read rows", "list running workflows", "compare", "recount unresolved dependencies",
			"record check marks"}, stageNames(p))
		r, p, err = x.CheckIncremental(ctx)
		require.NoError(t, err)
		require.Empty(t, r.Findings)
		require.Zero(t, p.Compared, "nothing moved since the full pass")
		require.Equal(t, []string{"read rows", "list running workflows", "find what moved", "compare",
			"recount unresolved dependencies", "record check marks"}, stageNames(p))
		var sum time.Duration
		for _, st := range p.Stages {
			sum += st.Duration
		}
		require.LessOrEqual(t, sum, p.Duration, "the stages are parts of the pass")

		// A command moves a row: compared, in agreement.
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": a}, nil)
		r, p, err = x.CheckIncremental(ctx)
		require.NoError(t, err)
		require.Empty(t, r.Findings)
		require.Equal(t, 1, p.Compared)

		// A reset that drops an update (a new run), a row edited by hand, a workflow terminated:
		// each is compared and found; the idea, which did not move, is not compared.
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": b}, nil)
		_, _, err = x.CheckIncremental(ctx) // b's claim is in agreement
		require.NoError(t, err)
		rollBack(t, e, vocab.TaskID(b), 1)
		_, err = e.st.DB.NewUpdate().Table("tasks").Set("version = version + 1").Where("uuid = ?", c).Exec(ctx)
		require.NoError(t, err)
		require.NoError(t, e.tc.TerminateWorkflow(ctx, vocab.TaskID(d), "", "test"))
		requireEventually(t, func() bool {
			var s workflows.TaskState
			v, err := e.tc.QueryWorkflow(ctx, vocab.TaskID(b), "", workflows.QueryState)
			return err == nil && v.Get(&s) == nil && s.Status == "open"
		}, "the reset workflow is back at open")
		// Visibility lists b's new run and d's end a moment after they happen; until then a pass
		// takes them for what its marks say (the next pass compares them).
		requireEventually(t, func() bool {
			r, p, err = x.CheckIncremental(ctx)
			require.NoError(t, err)
			return p.Compared == 3
		}, "b, c and d moved; a and the idea did not")
		kinds := map[string]string{}
		for _, f := range r.Findings {
			kinds[f.WorkflowID] = f.Kind
		}
		require.Equal(t, map[string]string{vocab.TaskID(b): ops.Diverged, vocab.TaskID(c): ops.Diverged, vocab.TaskID(d): ops.ClosedWorkflow}, kinds)
		full, err := x.Check(ctx, "")
		require.NoError(t, err)
		require.Len(t, full, 3, "a full pass finds the same")

		// Findings stay compared until they are repaired.
		for _, f := range full {
			_, err := x.Repair(ctx, f)
			require.NoError(t, err)
		}
		e.requireAgreement()
		_, p, err = x.CheckIncremental(ctx)
		require.NoError(t, err)
		require.Zero(t, p.Compared, "repaired and found in agreement by the last pass")
		_ = idea
	})
}

// stageNames lists the names of a pass's stages, in order.
func stageNames(p ops.Pass) []string {
	var names []string
	for _, st := range p.Stages {
		names = append(names, st.Name)
	}
	return names
}

// A full check pass compares each row with the digest its workflow keeps in its memo
// (workflows.MemoDigest) and queries a workflow only where the two differ (ops.Pass.Queried):
// after a lifecycle driven through the tools (an elaborated idea, its approved proposal with its
// drafts, tasks with criteria) it queries none; a column or an owned row changed by hand, with
// version and change id kept, still differs and is found by the query it then makes.
func TestFullCheckQueriesOnlyWhereTheDigestDiffers(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		_, tasks := approvedIdea(t, pm, admin, project)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": tasks[0]}, nil)
		x := e.ops()

		var r ops.Report
		var p ops.Pass
		requireEventually(t, func() bool {
			var err error
			r, p, err = x.CheckPass(ctx)
			require.NoError(t, err)
			return len(r.Findings) == 0 && len(r.Busy) == 0 && p.Queried == 0
		}, "a full pass after the lifecycle queries no workflow")
		require.Equal(t, 1+1+len(tasks), p.Compared, "the idea, the proposal and the tasks")

		d, err := e.tc.DescribeWorkflowExecution(ctx, vocab.TaskID(tasks[0]), "")
		require.NoError(t, err)
		var version int64
		require.NoError(t, workflows.DataConverter().FromPayload(
			d.GetWorkflowExecutionInfo().GetMemo().GetFields()[workflows.MemoVersion], &version))
		row, err := e.st.TaskRow(ctx, tasks[0])
		require.NoError(t, err)
		require.Equal(t, row.Version, version, "the memo shows the row version")

		_, err = e.st.DB.NewUpdate().Table("tasks").Set("title = ?", "Edited by hand").Where("uuid = ?", tasks[1]).Exec(ctx)
		require.NoError(t, err)
		_, err = e.st.DB.NewUpdate().Table("acceptance_criteria").Set("status = ?", "passed").
			Where("task_uuid = ?", tasks[2]).Exec(ctx)
		require.NoError(t, err)
		r, p, err = x.CheckPass(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, p.Queried, "only the two edited tasks")
		columns := map[string][]string{}
		for _, f := range r.Findings {
			require.Equal(t, ops.Diverged, f.Kind)
			for _, d := range f.Differences {
				if c := strings.Fields(d.Column)[0]; !slices.Contains(columns[f.WorkflowID], c) {
					columns[f.WorkflowID] = append(columns[f.WorkflowID], c)
				}
			}
		}
		require.Equal(t, map[string][]string{vocab.TaskID(tasks[1]): {"title"}, vocab.TaskID(tasks[2]): {"criterion"}}, columns)
	})
}
