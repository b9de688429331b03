package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// An idea's derived status (docs/rules.md §5.1) for operators: the idea workflow shows it in its
// ChorusProgress search attribute, beside ChorusStatus, the stored status. While the idea is
// open or elaborating it follows from the workflow's own state, so every command publishes it
// at once. Once the idea is elaborated, or when it is a theme with children, it follows from
// rows other workflows write (proposals, tasks, child ideas): the activities writing those rows
// signal SignalRefreshProgress once they committed (activities/progress.go), and the workflow
// reads the status from the database. A refresh that changes the status asks the idea's parent
// to refresh in turn (the theme roll-up). The app never reads this: its reads derive the status
// from the database themselves.

// SignalRefreshProgress asks an idea's workflow to read its derived status again.
const SignalRefreshProgress = activities.SignalRefreshProgress

// progress is the derived status to show: from the state where the state decides it (an open or
// elaborating idea that does not roll up from children), else what the database said last ("" for
// an idea not read yet, e.g. one elaborated before ChorusProgress existed, until its next refresh).
func (s IdeaState) progress() string {
	switch {
	case s.Deleted || !s.Created:
		return ""
	case s.ProgressRollup:
	case s.status() == vocab.IdeaOpen:
		return store.DerivedTodo
	case s.status() == vocab.IdeaElaborating:
		if s.ElaborationStatus == "pending_answers" {
			return store.DerivedHumanConductRequired
		}
		return store.DerivedInProgress
	}
	return s.Progress
}

// receiveRefreshes runs refreshProgress for SignalRefreshProgress, in its own coroutine.
func (w *ideaWorkflow) receiveRefreshes(ctx workflow.Context) {
	w.refreshes = workflow.GetSignalChannel(ctx, SignalRefreshProgress)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			// Await and ReceiveAsync, not Receive, which would take a signal at its delivery, out
			// of sight of pendingRefreshes (receiveSignals says more).
			if err := workflow.Await(ctx, func() bool { return w.refreshes.Len() > 0 }); err != nil {
				return
			}
			if w.refreshes.ReceiveAsync(nil) {
				w.refreshProgress(ctx)
			}
		}
	})
}

// pendingRefreshes, before continuing as new, waits for a refresh under way and answers the
// signals still buffered, so none is lost.
func (w *ideaWorkflow) pendingRefreshes(ctx workflow.Context) error {
	for {
		if err := workflow.Await(ctx, func() bool { return !w.refreshing }); err != nil {
			return err
		}
		if !w.refreshes.ReceiveAsync(nil) {
			return nil
		}
		w.refreshProgress(ctx)
	}
}

// refreshProgress reads the idea's derived status from the database, under the command lock so
// it never interleaves with a command, and publishes it when it changed. One reading answers
// every refresh asked before it: the signals buffered meanwhile are taken with it.
func (w *ideaWorkflow) refreshProgress(ctx workflow.Context) {
	w.refreshing = true
	defer func() { w.refreshing = false }()
	if err := w.mu.Lock(ctx); err != nil {
		return
	}
	defer w.mu.Unlock()
	for w.refreshes.ReceiveAsync(nil) {
	}
	if !w.state.Created || w.state.Deleted {
		return
	}
	var a *activities.Activities
	var p store.IdeaProgress
	if err := read(ctx, a.IdeaProgress, w.state.UUID, w.state.Progress).Get(ctx, &p); err != nil || !p.Found {
		return // the idea is being deleted, or the read gave up: the next refresh reads again
	}
	before, rollup := w.state.Progress, w.state.ProgressRollup
	w.state.Progress, w.state.ProgressRollup = p.Status, p.Rollup
	w.state.Progress = w.state.progress() // what it shows (the same, but while a row disagrees)
	// The first refresh of a run publishes even when the reading did not change: a run begun
	// before ChorusProgress existed replays its old commands with this code, which computes the
	// progress in memory, but the server never got it (version progressShownVersion).
	first := workflow.GetVersion(ctx, progressShownChange, workflow.DefaultVersion, progressShownVersion) ==
		progressShownVersion && !w.progressShown
	if w.state.Progress != before || p.Rollup != rollup || first {
		w.publish(ctx)
		w.progressShown = true
	}
}

// progressShownChange is the workflow.GetVersion change id of "the first refresh of a run
// publishes"; histories recorded before it publish only a changed reading.
const (
	progressShownChange  = "progress-first-refresh-publishes"
	progressShownVersion = workflow.Version(1)
)
