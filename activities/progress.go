package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// An idea's workflow shows the idea's derived status (docs/rules.md §5.1) to operators in its
// ChorusProgress search attribute. The status follows from rows other workflows write (proposals,
// tasks, child ideas), so the activities that write those rows ask the ideas concerned to read
// it again, after their transaction committed: SignalRefreshProgress. Signals are delivered at
// least once and a refresh only reads, so an activity retried after its write committed simply
// sends them again. A signal that cannot be delivered fails the activity, which is retried.

// SignalRefreshProgress asks an idea's workflow to read its derived status from the database
// again (no payload).
const SignalRefreshProgress = "refresh_progress"

// IdeaWorkflowID is the workflow id of an idea (workflows.IdeaID, which a test holds to it).
func IdeaWorkflowID(uuid string) string { return "idea/" + uuid }

// IdeaProgress reads an idea's derived status for its workflow (a local activity). When it
// differs from previous, what the workflow shows now, the idea's parent is asked to refresh
// too: a theme's status rolls up from its children.
func (a *Activities) IdeaProgress(ctx context.Context, ideaUUID, previous string) (store.IdeaProgress, error) {
	p, err := a.Store.IdeaProgress(ctx, ideaUUID)
	if err != nil || !p.Found {
		return p, err
	}
	if p.Status != previous && p.ParentUUID != "" {
		if err := a.refreshIdeas(ctx, p.ParentUUID); err != nil {
			return p, err
		}
	}
	return p, nil
}

// refreshIdeas sends SignalRefreshProgress to each idea's workflow, once per idea. An idea whose
// workflow does not run (deleted, or ended under its row, which ops repair restarts) is skipped.
func (a *Activities) refreshIdeas(ctx context.Context, uuids ...string) error {
	if a.Temporal == nil {
		return nil // a worker without Temporal (workflow unit tests) has no idea workflows to tell
	}
	var done []string
	for _, u := range uuids {
		if u == "" || slices.Contains(done, u) {
			continue
		}
		done = append(done, u)
		err := a.Temporal.SignalWorkflow(ctx, IdeaWorkflowID(u), "", SignalRefreshProgress, nil)
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			return fmt.Errorf("ask idea %s to refresh its progress: %w", u, err)
		}
	}
	return nil
}

// refreshProposalIdeas refreshes the input ideas of the given proposals (those of idea input).
func (a *Activities) refreshProposalIdeas(ctx context.Context, proposalUUIDs ...string) error {
	if a.Temporal == nil {
		return nil
	}
	ideas, err := a.Store.ProposalInputIdeas(ctx, proposalUUIDs...)
	if err != nil {
		return err
	}
	return a.refreshIdeas(ctx, ideas...)
}

// formerParent is an idea's parent before a change that may detach it (a delete, a new parent, a
// move): read before the write and kept in the activity's heartbeat details, which Temporal hands
// to every later attempt, so a retry after the write committed still knows it.
func (a *Activities) formerParent(ctx context.Context, ideaUUID string) (string, error) {
	if !activity.IsActivity(ctx) {
		return a.Store.IdeaParent(ctx, ideaUUID)
	}
	if activity.HasHeartbeatDetails(ctx) {
		var p string
		if err := activity.GetHeartbeatDetails(ctx, &p); err == nil {
			return p, nil
		}
	}
	p, err := a.Store.IdeaParent(ctx, ideaUUID)
	if err != nil {
		return "", err
	}
	activity.RecordHeartbeat(ctx, p)
	return p, nil
}

// ideaRefreshes is who an idea change asks to refresh once it committed: the idea's parents for
// anything that can move the idea's own status or its place among their children (the theme
// roll-up), and the idea itself when the database decides its status (elaborated) or whether it
// rolls up (the theme flag).
func (a *Activities) ideaRefreshes(ctx context.Context, c store.IdeaChange, former string) error {
	var uuids []string
	switch {
	case c.Delete:
		uuids = []string{former}
	case c.Insert != nil:
		if c.Insert.ParentUUID != nil {
			uuids = []string{*c.Insert.ParentUUID}
		}
	case c.SetsProgress():
		parent, err := a.Store.IdeaParent(ctx, c.UUID)
		if err != nil {
			return err
		}
		uuids = []string{parent, former}
		if c.NewStatus() == "elaborated" || c.SetsTheme() {
			uuids = append(uuids, c.UUID)
		}
	}
	return a.refreshIdeas(ctx, uuids...)
}

// taskRefreshes: a task's status matters to its proposal's input ideas when it enters or leaves
// to_verify, done or closed (docs/rules.md §5.1). Every such move lands in one of these statuses
// (leaving to_verify is to done, closed or, reopened, in_progress); in_progress is also a start,
// for which the refresh finds nothing changed.
var taskRefreshes = []vocab.TaskStatus{vocab.TaskInProgress, vocab.TaskToVerify, vocab.TaskDone, vocab.TaskClosed}
