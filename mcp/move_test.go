package mcp

import (
	"context"
	"strconv"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// chorus_move_idea and its cascade (docs/rules.md §5.9): rows and workflows follow, in one
// transaction, and agree afterwards whatever fails in between.

// moveWorld is an idea with a child and an approved proposal (documents, three tasks, one
// claimed) in project A, and an empty project B.
type moveWorld struct {
	admin, pm, dev *mcpsdk.ClientSession
	a, b           string
	root, child    string
	proposal       string
	tasks          []string
	documents      []string
}

func newMoveWorld(t *testing.T, e *env) moveWorld {
	t.Helper()
	w := moveWorld{admin: e.client(e.adminKey), pm: e.pmWithIdeaAdmin("PM"), dev: e.client(e.agent("Dev", perm.DeveloperAgent))}
	w.a = createProject(t, w.admin, "Apollo")
	w.b = createProject(t, w.admin, "Borealis")
	w.root = elaboratedIdea(t, w.pm, w.admin, w.a, "Root")
	w.child = createIdea(t, w.pm, w.a, "Child", map[string]any{"parentUuid": w.root})
	w.proposal, _ = fullProposal(t, w.pm, w.a, w.root)
	ok(t, w.pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": w.proposal}, nil)
	var pv ProposalView
	ok(t, w.admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": w.proposal}, &pv)
	for _, m := range pv.MaterializedTasks {
		w.tasks = append(w.tasks, m.TaskUUID)
	}
	for _, m := range pv.MaterializedDocuments {
		w.documents = append(w.documents, m.DocumentUUID)
	}
	ok(t, w.dev, "chorus_claim_task", map[string]any{"taskUuid": w.tasks[0]}, nil)
	return w
}

// requireMovedTo checks every row and every workflow of the world in project p: rows, workflow
// state, the ChorusProjectUuid search attribute and the project's name in the memo.
func (w moveWorld) requireMovedTo(t *testing.T, e *env, p string) {
	t.Helper()
	ctx := context.Background()
	var name string
	require.NoError(t, e.st.DB.NewSelect().Table("projects").Column("name").Where("uuid = ?", p).Scan(ctx, &name))
	projectOf := func(table, uuid string) string {
		var got string
		require.NoError(t, e.st.DB.NewSelect().Table(table).Column("project_uuid").Where("uuid = ?", uuid).Scan(ctx, &got))
		return got
	}
	ids := map[string]string{vocab.IdeaID(w.root): "ideas", vocab.IdeaID(w.child): "ideas", vocab.ProposalID(w.proposal): "proposals"}
	for _, task := range w.tasks {
		ids[vocab.TaskID(task)] = "tasks"
	}
	for id, table := range ids {
		_, uuid, err := vocab.ParseWorkflowID(id)
		require.NoError(t, err)
		require.Equal(t, p, projectOf(table, uuid), "%s row", id)
		requireEventually(t, func() bool {
			d, err := e.tc.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return false
			}
			var attr string
			if f := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.ProjectUUIDKey.GetName()]; f != nil {
				attr = string(f.GetData())
			}
			v, err := e.tc.QueryWorkflow(ctx, id, "", workflows.QueryState)
			if err != nil {
				return false
			}
			var st struct {
				ProjectUUID string `json:"projectUuid"`
			}
			return v.Get(&st) == nil && st.ProjectUUID == p && attr == `"`+p+`"`
		}, "%s follows the move to %s (state and search attribute)", id, p)
		e.requireProjectInMemo(t, id, name)
	}
	for _, d := range w.documents {
		require.Equal(t, p, projectOf("documents", d), "document %s", d)
	}
}

func TestMoveIdeaCascade(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newMoveWorld(t, e)
		ctx := context.Background()
		before64, err := e.st.DB.NewSelect().Table("activities").Where("project_uuid = ?", w.a).Count(ctx)
		before := int(before64)
		require.NoError(t, err)

		// Refusals first: each names the problem and changes nothing.
		require.Equal(t, "Failed to move Idea: Idea is already in the target project",
			fails(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.a}))
		require.Equal(t, "Failed to move Idea: Project not found",
			fails(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": store.NewUUID()}))
		require.Equal(t, "Failed to move Idea: Idea not found",
			fails(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": store.NewUUID(), "targetProjectUuid": w.b}))
		require.Equal(t, "Tool chorus_move_idea not found",
			fails(t, w.dev, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b}), "idea:write gates it")

		args := map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b, "requestId": "move-1"}
		var got MovedIdea
		ok(t, w.pm, "chorus_move_idea", args, &got)
		require.Equal(t, w.root, got.UUID)
		require.Equal(t, ProjectRef{UUID: w.b, Name: "Borealis"}, got.Project)
		require.Equal(t, 2, got.Moved.Ideas)
		require.Equal(t, 1, got.Moved.Proposals)
		require.Equal(t, len(w.documents), got.Moved.Documents)
		require.Equal(t, 3, got.Moved.Tasks)
		require.Equal(t, before, got.Moved.Activities, "every activity of project A was about the moved entities")
		w.requireMovedTo(t, e, w.b)

		// A retry with the same requestId answers the same and moves nothing again.
		var again MovedIdea
		ok(t, w.pm, "chorus_move_idea", args, &again)
		require.Equal(t, got, again)
		require.Equal(t, 1, activityCount(t, e.st, w.root, "moved"))

		// What the reads say: the root lost its parent-less state untouched, the child kept its
		// parent, the task its assignee; project A is empty, the "moved" activity is in B.
		var root IdeaView
		ok(t, w.pm, "chorus_get_idea", map[string]any{"ideaUuid": w.root}, &root)
		require.Equal(t, w.b, root.Project.UUID)
		var child IdeaView
		ok(t, w.pm, "chorus_get_idea", map[string]any{"ideaUuid": w.child}, &child)
		require.Equal(t, w.root, *child.ParentUUID)
		var task TaskView
		ok(t, w.dev, "chorus_get_task", map[string]any{"taskUuid": w.tasks[0]}, &task)
		require.Equal(t, w.b, task.Project.UUID)
		require.NotNil(t, task.Assignee)
		var ideas IdeaList
		ok(t, w.pm, "chorus_get_ideas", map[string]any{"projectUuid": w.a}, &ideas)
		require.Zero(t, ideas.Total)
		var act store.Activity
		require.NoError(t, e.st.DB.NewSelect().Model(&act).Where("target_uuid = ?", w.root).Where("action = 'moved'").Scan(ctx))
		require.Equal(t, w.b, act.ProjectUUID)
		require.JSONEq(t, `{"fromProjectUuid":"`+w.a+`","fromProjectName":"Apollo","toProjectUuid":"`+w.b+
			`","toProjectName":"Borealis","moved":{"ideas":2,"proposals":1,"documents":2,"tasks":3,"activities":`+
			itoa(before)+`}}`, string(act.Value))

		// The moved entities take commands in their new project; their activities land there.
		ok(t, w.dev, "chorus_update_task", map[string]any{"taskUuid": w.tasks[0], "status": "in_progress"}, nil)
		require.NoError(t, e.st.DB.NewSelect().Model(&act).Where("target_uuid = ?", w.tasks[0]).
			Where("action = 'status_changed'").Scan(ctx))
		require.Equal(t, w.b, act.ProjectUUID)
		ok(t, w.pm, "chorus_edit_idea", map[string]any{"ideaUuid": w.child, "title": "Child, moved"}, nil)
		// And the child can move back on its own.
		ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.child, "targetProjectUuid": w.a}, &got)
		require.Equal(t, MovedCountsFor(1, 0, 0, 0), pickCounts(got.Moved))
		e.requireAgreement()
	})
}

// MovedCountsFor and pickCounts compare the counts of a move without its activity count.
func MovedCountsFor(ideas, proposals, documents, tasks int) [4]int {
	return [4]int{ideas, proposals, documents, tasks}
}

func pickCounts(c store.MoveCounts) [4]int { return [4]int{c.Ideas, c.Proposals, c.Documents, c.Tasks} }

func itoa(n int) string { return strconv.Itoa(n) }

// A command on a moved entity whose workflow has not taken in the move yet (the signals are
// held back): its write meets the moved row, the workflow adopts the move, and the command is
// refused, changing nothing; its retry runs in the new project. Meanwhile chorus ops check
// reports the entities as busy, not as findings.
func TestCommandMeetingAMove(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true, noWorker: true})
			tr := newOpsTrap()
			e.startTrappedWorker(tr)
			w := newMoveWorld(t, e)
			tr.fail("FollowMove", "the signals are held back")
			var got MovedIdea
			done := make(chan struct{})
			go func() {
				defer close(done)
				ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b}, &got)
			}()
			requireEventually(t, func() bool {
				var p string
				_ = e.st.DB.NewSelect().Table("tasks").Column("project_uuid").Where("uuid = ?", w.tasks[0]).Scan(context.Background(), &p)
				return p == w.b
			}, "the cascade commits")
			// (One entity: the held-back signals would soon count as a stuck activity of the root.)
			rep, err := e.ops().CheckReport(context.Background(), vocab.TaskID(w.tasks[1]))
			require.NoError(t, err)
			require.Empty(t, rep.Findings, "a move being delivered is not a finding")
			require.Len(t, rep.Busy, 1)
			require.Contains(t, rep.Busy[0].Reason, "a move of idea/"+w.root)

			msg := fails(t, w.dev, "chorus_update_task", map[string]any{"taskUuid": w.tasks[0], "status": "in_progress",
				"requestId": "start"})
			require.Contains(t, msg, "moved to another project")
			ok(t, w.dev, "chorus_update_task", map[string]any{"taskUuid": w.tasks[0], "status": "in_progress", "requestId": "start"}, nil)
			tr.fail("FollowMove", "")
			<-done
			require.Equal(t, 3, got.Moved.Tasks)
			w.requireMovedTo(t, e, w.b)
			var task TaskView
			ok(t, w.dev, "chorus_get_task", map[string]any{"taskUuid": w.tasks[0]}, &task)
			require.Equal(t, "in_progress", task.Status)
			e.requireAgreement()
		})
	}
}

// The move's writes commit and then report failure: the retries find the cascade applied,
// report what it moved, and the signals are sent again; everything agrees.
func TestMoveCommittedThenReportedFailed(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true})
			w := newMoveWorld(t, e)
			e.faults.FailAfterCommit("MoveIdeaCascade", 1)
			e.faults.FailAfterCommit("FollowMove", 1)
			var got MovedIdea
			ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b, "requestId": "mv"}, &got)
			require.Equal(t, 1, e.faults.Injected("MoveIdeaCascade"))
			require.Equal(t, 1, e.faults.Injected("FollowMove"))
			require.Equal(t, MovedCountsFor(2, 1, 2, 3), pickCounts(got.Moved))
			require.Equal(t, 1, activityCount(t, e.st, w.root, "moved"))
			w.requireMovedTo(t, e, w.b)
			e.requireAgreement()
		})
	}
}

// The worker dies right after the cascade commits (and, in another run, after the signals
// were sent): the next worker retries the activity once the attempt times out, finds the
// cascade applied, sends the signals, and the call's retry with the same requestId gets the
// outcome. ops check ends clean.
func TestWorkerKilledMidMove(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		for _, kind := range []string{"MoveIdeaCascade", "FollowMove"} {
			t.Run(dialect+"/"+kind, func(t *testing.T) {
				t.Parallel()
				e := startEnv(t, dialect, envOptions{flows: true, noWorker: true})
				var mu sync.Mutex
				current := e.startWorker()
				w := newMoveWorld(t, e)
				e.faults.OnceAfter(kind, func() {
					mu.Lock()
					defer mu.Unlock()
					current.Stop()
					current = e.startWorker()
				})
				var got MovedIdea
				ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b, "requestId": "mv"}, &got)
				require.Equal(t, 1, e.faults.Injected(kind))
				var again MovedIdea
				ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b, "requestId": "mv"}, &again)
				require.Equal(t, got, again)
				require.Equal(t, MovedCountsFor(2, 1, 2, 3), pickCounts(got.Moved))
				require.Equal(t, 1, activityCount(t, e.st, w.root, "moved"))
				w.requireMovedTo(t, e, w.b)
				e.requireAgreement()
			})
		}
	}
}

// A move whose signal never reached an entity's workflow (it was not running when the move was
// sent, and an operator restarted it from an older state) is a finding; repair makes the
// workflow adopt the move instead of undoing it for that entity.
func TestRepairAdoptsAMoveTheWorkflowMissed(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newMoveWorld(t, e)
		ctx := context.Background()
		// Take the child's row back to where its workflow stands, then move the root: the
		// child's row moves on. Its workflow is then told nothing (the signal is dropped by
		// terminating and restarting it from its old state).
		var st workflows.IdeaState
		v, err := e.tc.QueryWorkflow(ctx, vocab.IdeaID(w.child), "", workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
		var got MovedIdea
		ok(t, w.pm, "chorus_move_idea", map[string]any{"ideaUuid": w.root, "targetProjectUuid": w.b}, &got)
		w.requireMovedTo(t, e, w.b)
		require.NoError(t, e.tc.TerminateWorkflow(ctx, vocab.IdeaID(w.child), "", "test: lose the move"))
		_, err = e.deps.Flows.StartFromState(ctx, st)
		require.NoError(t, err)
		f, did := e.repairOnly(t, "diverged")
		require.Equal(t, vocab.IdeaID(w.child), f.WorkflowID)
		require.Contains(t, did, "told the workflow")
		e.requireAgreement()
		var child IdeaView
		ok(t, w.pm, "chorus_get_idea", map[string]any{"ideaUuid": w.child}, &child)
		require.Equal(t, w.b, child.Project.UUID)
		e.requireProjectInMemo(t, vocab.IdeaID(w.child), "Borealis") // repair's signal names the project
	})
}

// approvedIdea is an elaborated idea of project whose full proposal (fullProposal: three
// chained tasks) pm submitted and admin approved; it returns the idea and the tasks in order.
func approvedIdea(t *testing.T, pm, admin *mcpsdk.ClientSession, project string) (string, []string) {
	t.Helper()
	idea := elaboratedIdea(t, pm, admin, project, "Root")
	proposal, _ := fullProposal(t, pm, project, idea)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	var pv ProposalView
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	var tasks []string
	for _, m := range pv.MaterializedTasks {
		tasks = append(tasks, m.TaskUUID)
	}
	return idea, tasks
}

// A move keeps dependency edges (docs/rules.md §5.9), so a moved task can depend on a task left
// in the old project. Reads and the blocked refusal show such a task without its title, assignee
// or session: the reader may not see that project. Found by trying a move out of a private project.
func TestMovedTaskDoesNotRevealItsDependencyElsewhere(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		stranger := e.otherOwnersAgent("Stranger", perm.DeveloperAgent)
		private := createPrivateProject(t, admin, "Private")
		public := createProject(t, admin, "Public")
		idea, tasks := approvedIdea(t, pm, admin, private)
		first := tasks[0]
		var ct CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": private, "tasks": []map[string]any{
			{"title": "Rotate the Zeus launch codes", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &ct)
		secret := ct.Tasks[0].UUID
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": first, "addDependsOn": []string{secret}}, nil)
		ok(t, admin, "chorus_claim_task", map[string]any{"taskUuid": secret}, nil)
		ok(t, admin, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": public}, nil)

		var v TaskView
		ok(t, stranger, "chorus_get_task", map[string]any{"taskUuid": first}, &v)
		require.Contains(t, v.DependsOn, TaskLinkView{UUID: secret, Title: store.ElsewhereTitle, Status: "assigned"})
		ok(t, stranger, "chorus_claim_task", map[string]any{"taskUuid": first}, nil)
		msg := fails(t, stranger, "chorus_update_task", map[string]any{"taskUuid": first, "status": "in_progress"})
		require.Contains(t, msg, `"`+store.ElsewhereTitle+`" (status: assigned, assignee: none`)
		require.NotContains(t, msg, "Zeus")
		require.NotContains(t, msg, "Admin Agent")
		// From the other side too: the task left behind shows the moved one the same way.
		ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": secret}, &v)
		require.Contains(t, v.DependedBy, TaskLinkView{UUID: first, Title: store.ElsewhereTitle, Status: "assigned"})
		e.requireAgreement()
	})
}
