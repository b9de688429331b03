package mcp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/wftest"
)

// ideaProgress is the ChorusProgress search attribute of an idea's workflow, as the Temporal UI
// shows it ("" when unset; an error in angle brackets).
func (e *env) ideaProgress(idea string) string {
	d, err := e.tc.DescribeWorkflowExecution(context.Background(), vocab.IdeaID(idea), "")
	if err != nil {
		return "<" + err.Error() + ">"
	}
	f := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.ProgressKey.GetName()]
	if f == nil {
		return ""
	}
	var v string
	if err := converter.GetDefaultDataConverter().FromPayload(f, &v); err != nil {
		return "<" + err.Error() + ">"
	}
	return v
}

// requireProgress waits until the idea's ChorusProgress is want, and checks that it is what
// chorus_get_idea derives from the database.
func (e *env) requireProgress(t *testing.T, s *mcpsdk.ClientSession, idea, want, step string) {
	t.Helper()
	var iv IdeaView
	ok(t, s, "chorus_get_idea", map[string]any{"ideaUuid": idea}, &iv)
	require.Equal(t, want, iv.DerivedStatus, "%s: the derived status", step)
	var got string
	deadline := time.Now().Add(5 * time.Second)
	for got = e.ideaProgress(idea); got != want && time.Now().Before(deadline); got = e.ideaProgress(idea) {
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, want, got, "%s: ChorusProgress of idea %s", step, idea)
}

// smallProposal creates an idea-input proposal on idea with a PRD and one task draft.
func smallProposal(t *testing.T, pm *mcpsdk.ClientSession, project, idea string) string {
	t.Helper()
	var p CreatedProposal
	ok(t, pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Plan",
		"description": "Deliver it", "inputType": "idea", "inputUuids": []string{idea}}, &p)
	ok(t, pm, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": p.UUID, "type": "prd", "title": "PRD",
		"content": longText}, nil)
	ok(t, pm, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": p.UUID, "title": "Build it",
		"acceptanceCriteriaItems": []map[string]any{{"description": "it works"}}}, nil)
	return p.UUID
}

// verify claims, works and verifies a task (dev does the work, admin verifies it).
func verify(t *testing.T, admin, dev *mcpsdk.ClientSession, task string) {
	t.Helper()
	ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
	work(t, dev, task)
	var v TaskView
	ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
	markAll(t, admin, task, v, "passed")
	ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, nil)
}

// finishIdea takes an elaborated idea to done: a small proposal, approved, its task verified.
func finishIdea(t *testing.T, admin, pm, dev *mcpsdk.ClientSession, project, idea string) {
	t.Helper()
	proposal := smallProposal(t, pm, project, idea)
	ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
	var pv ProposalView
	ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
	verify(t, admin, dev, pv.MaterializedTasks[0].TaskUUID)
}

// An idea's workflow shows its derived status in ChorusProgress at every step of its life, the
// steps other entities take included (docs/rules.md §5.1).
func TestIdeaProgressSearchAttribute(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")

		idea := createIdea(t, pm, project, "Single sign-on", nil)
		e.requireProgress(t, pm, idea, store.DerivedTodo, "created")
		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "claimed")
		ok(t, pm, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "standard", "questions": twoQuestions()}, nil)
		e.requireProgress(t, pm, idea, store.DerivedHumanConductRequired, "questions asked")
		ok(t, dev, "chorus_answer_elaboration", map[string]any{"ideaUuid": idea,
			"answers": []map[string]any{{"questionId": "q1", "selectedOptionId": "a", "customText": nil}}}, nil)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "answered")
		ok(t, pm, "chorus_pm_validate_elaboration", map[string]any{"ideaUuid": idea}, nil)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "elaborated")

		proposal, _ := fullProposal(t, pm, project, idea)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "a draft proposal does not count")
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		e.requireProgress(t, pm, idea, store.DerivedHumanConductRequired, "proposal pending")
		ok(t, admin, "chorus_pm_reject_proposal", map[string]any{"proposalUuid": proposal, "reviewNote": "more detail"}, nil)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "proposal rejected")
		ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
		e.requireProgress(t, pm, idea, store.DerivedHumanConductRequired, "proposal pending again")
		var pv ProposalView
		ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "approved")

		// The three tasks are chained: each is worked, sent back once, and verified in turn.
		require.Len(t, pv.MaterializedTasks, 3)
		for i, m := range pv.MaterializedTasks {
			task := m.TaskUUID
			ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
			work(t, dev, task)
			e.requireProgress(t, pm, idea, store.DerivedHumanConductRequired, "a task waits for verification")
			if i == 0 {
				ok(t, admin, "chorus_admin_reopen_task", map[string]any{"taskUuid": task}, nil)
				e.requireProgress(t, pm, idea, store.DerivedInProgress, "the task was sent back")
				ok(t, dev, "chorus_submit_for_verify", map[string]any{"taskUuid": task}, nil)
				e.requireProgress(t, pm, idea, store.DerivedHumanConductRequired, "resubmitted")
			}
			var v TaskView
			ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
			markAll(t, admin, task, v, "passed")
			ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, nil)
			if i < 2 {
				e.requireProgress(t, pm, idea, store.DerivedInProgress, "a task verified, others open")
			}
		}
		e.requireProgress(t, pm, idea, store.DerivedDone, "every task done")
		// ChorusStatus keeps the stored status.
		d, err := e.tc.DescribeWorkflowExecution(context.Background(), vocab.IdeaID(idea), "")
		require.NoError(t, err)
		require.Equal(t, `"elaborated"`, string(d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.StatusKey.GetName()].GetData()))

		ok(t, pm, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": proposal}, nil)
		e.requireProgress(t, pm, idea, store.DerivedInProgress, "the approval was revoked")
		e.requireAgreement()
	})
}

// A theme with children shows their roll-up: done only once both children are.
func TestThemeProgressRollsUp(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))
		project := createProject(t, admin, "Apollo")

		theme := createIdea(t, pm, project, "Identity", map[string]any{"isContainer": true})
		e.requireProgress(t, pm, theme, store.DerivedTodo, "a theme without children")
		first := createIdea(t, pm, project, "Single sign-on", map[string]any{"parentUuid": theme})
		second := createIdea(t, pm, project, "Two-factor login", map[string]any{"parentUuid": theme})
		e.requireProgress(t, pm, theme, store.DerivedTodo, "no child started")

		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": first}, nil)
		e.requireProgress(t, pm, theme, store.DerivedInProgress, "a child started")
		ok(t, pm, "chorus_release_idea", map[string]any{"ideaUuid": first}, nil)
		e.requireProgress(t, pm, theme, store.DerivedTodo, "the child was released")

		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": first}, nil)
		ok(t, pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": first, "reason": "clear enough"}, nil)
		finishIdea(t, admin, pm, dev, project, first)
		e.requireProgress(t, pm, first, store.DerivedDone, "the first child")
		e.requireProgress(t, pm, theme, store.DerivedInProgress, "one child of two done")

		ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": second}, nil)
		ok(t, pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": second, "reason": "clear enough"}, nil)
		e.requireProgress(t, pm, theme, store.DerivedInProgress, "the second child elaborated")
		finishIdea(t, admin, pm, dev, project, second)
		e.requireProgress(t, pm, theme, store.DerivedDone, "both children done")

		// Unmarking the theme makes it show its own status again; a new child under a theme
		// that is marked again counts at once.
		ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": theme, "isContainer": false}, nil)
		e.requireProgress(t, pm, theme, store.DerivedTodo, "no longer a theme")
		ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": theme, "isContainer": true}, nil)
		e.requireProgress(t, pm, theme, store.DerivedDone, "a theme again")
		third := createIdea(t, pm, project, "Passkeys", map[string]any{"parentUuid": theme})
		e.requireProgress(t, pm, theme, store.DerivedInProgress, "a new child to do")
		ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": third, "detachParent": true}, nil)
		e.requireProgress(t, pm, theme, store.DerivedDone, "the new child left")
		e.requireAgreement()
	})
}

// flakySignals is a Temporal client whose next refresh_progress signals fail, as when the
// Temporal frontend cannot be reached just after an activity's write committed.
type flakySignals struct {
	client.Client
	mu     sync.Mutex
	fail   int
	failed int
}

func (f *flakySignals) SignalWorkflow(ctx context.Context, id, run, name string, arg any) error {
	if name == workflows.SignalRefreshProgress {
		f.mu.Lock()
		if f.fail > 0 {
			f.fail--
			f.failed++
			f.mu.Unlock()
			return errors.New("injected: the refresh signal was not delivered")
		}
		f.mu.Unlock()
	}
	return f.Client.SignalWorkflow(ctx, id, run, name, arg)
}

func (f *flakySignals) arm(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

func (f *flakySignals) failures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// An activity whose write committed but whose refresh signal failed is retried: the write is
// recognised as applied and the signal sent, so the progress still arrives. For a deleted idea
// the retry no longer finds the row; the parent it had was kept in the activity's heartbeat.
func TestProgressArrivesWhenItsSignalFails(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			e := newFlowEnvNoWorker(t, d)
			flaky := &flakySignals{Client: e.tc}
			w := workflows.NewWorker(e.tc, e.queue, activities.New(e.st, flaky),
				worker.Options{Interceptors: []interceptor.WorkerInterceptor{e.faults}})
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)
			admin := e.client(e.adminKey)
			pm := e.pmWithIdeaAdmin("PM")
			dev := e.client(e.agent("Dev", perm.DeveloperAgent))
			project := createProject(t, admin, "Apollo")

			// A task verified: its write commits, the refresh of the proposal's idea fails once.
			idea := createIdea(t, pm, project, "Single sign-on", nil)
			ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
			ok(t, pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": idea, "reason": "clear enough"}, nil)
			proposal := smallProposal(t, pm, project, idea)
			ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": proposal}, nil)
			var pv ProposalView
			ok(t, admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": proposal}, &pv)
			task := pv.MaterializedTasks[0].TaskUUID
			ok(t, dev, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
			work(t, dev, task)
			e.requireProgress(t, pm, idea, store.DerivedHumanConductRequired, "the task waits for verification")
			var v TaskView
			ok(t, admin, "chorus_get_task", map[string]any{"taskUuid": task}, &v)
			markAll(t, admin, task, v, "passed")
			applyTask := wftest.ActivityName((*activities.Activities)(nil).ApplyTaskChange)
			runs := e.faults.Runs(applyTask)
			flaky.arm(1)
			ok(t, admin, "chorus_admin_verify_task", map[string]any{"taskUuid": task}, nil)
			require.Equal(t, 1, flaky.failures(), "the refresh signal failed once")
			require.Equal(t, runs+2, e.faults.Runs(applyTask), "the verification's write ran again after its signal failed")
			e.requireProgress(t, pm, idea, store.DerivedDone, "verified, despite the lost signal")

			// A child idea deleted under a theme: the refresh of its former parent fails once.
			theme := createIdea(t, pm, project, "Identity", map[string]any{"isContainer": true})
			ok(t, pm, "chorus_edit_idea", map[string]any{"ideaUuid": idea, "parentUuid": theme}, nil)
			open := createIdea(t, pm, project, "Two-factor login", map[string]any{"parentUuid": theme})
			e.requireProgress(t, pm, theme, store.DerivedInProgress, "one child of two done")
			applyIdea := wftest.ActivityName((*activities.Activities)(nil).ApplyIdeaChange)
			runs = e.faults.Runs(applyIdea)
			flaky.arm(1)
			ok(t, admin, "chorus_admin_delete_idea", map[string]any{"ideaUuid": open}, nil)
			require.Equal(t, 2, flaky.failures())
			require.Equal(t, runs+2, e.faults.Runs(applyIdea), "the delete ran again after its signal failed")
			e.requireProgress(t, pm, theme, store.DerivedDone, "its one remaining child is done")

			// The acknowledgement of a proposal's write is lost after it committed (and signalled).
			second := createIdea(t, pm, project, "Passkeys", nil)
			ok(t, pm, "chorus_claim_idea", map[string]any{"ideaUuid": second}, nil)
			ok(t, pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": second, "reason": "clear enough"}, nil)
			p2 := smallProposal(t, pm, project, second)
			applyProposal := wftest.ActivityName((*activities.Activities)(nil).ApplyProposalChange)
			e.faults.FailAfterCommit(applyProposal, 1)
			ok(t, pm, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": p2}, nil)
			require.Equal(t, 1, e.faults.Injected(applyProposal))
			e.requireProgress(t, pm, second, store.DerivedHumanConductRequired, "submitted, its acknowledgement lost once")
			e.requireAgreement()
		})
	}
}
