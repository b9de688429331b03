package ops

import (
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Kinds of finding.
const (
	// Diverged: the workflow runs, and some of the columns it owns differ from its row.
	Diverged = "diverged"
	// MissingWorkflow: the row exists and its workflow was never started.
	MissingWorkflow = "missing-workflow"
	// ClosedWorkflow: the row exists and its workflow's last run ended (terminated, failed,
	// timed out, or completed while the entity still exists).
	ClosedWorkflow = "closed-workflow"
	// MissingRow: the workflow runs and holds an entity whose row does not exist.
	MissingRow = "missing-row"
	// StuckActivity: the workflow runs and one of its activities (a write) has failed attempt
	// after attempt (Ops.StuckAttempts, Ops.StuckAfter). The workflow holds its entity's lock
	// meanwhile, so every command on the entity answers "Still in progress". Repair cannot fix it:
	// fix what the failure names, or terminate the workflow and run repair, which restarts it from
	// its rows.
	StuckActivity = "stuck-activity"
	// LostRows: rows the entity owns besides its own (a task's acceptance criteria, an idea's
	// elaboration rounds) are missing while its workflow holds them, typically because the entity's
	// row was deleted behind Chorus's back and took them with it. Their text lived only in the
	// database, so repair cannot recreate them: restore them from a backup.
	LostRows = "lost-rows"
	// UnresolvedCount: a task's kept count of unresolved dependencies (store/unresolved.go), which
	// chorus_get_unblocked_tasks reads, differs from what its dependencies say. Every write keeps
	// it in its own transaction, so this is never a write in flight: a row written behind
	// Chorus's back, or a writer that failed to keep it. Repair recounts it.
	UnresolvedCount = "unresolved-count"
)

// Kinds lists every kind of finding, in the order reports count them.
var Kinds = []string{Diverged, MissingWorkflow, ClosedWorkflow, MissingRow, StuckActivity, LostRows, UnresolvedCount}

// Repairable reports whether Repair can resolve findings of kind (StuckActivity and LostRows
// need an operator).
func Repairable(kind string) bool { return kind != StuckActivity && kind != LostRows }

// Difference is one column whose row value and workflow value differ.
type Difference struct {
	Column   string `json:"column"`
	Row      string `json:"row"`
	Workflow string `json:"workflow"`
}

// Finding is one disagreement between an entity's workflow and its rows.
type Finding struct {
	WorkflowID  string       `json:"workflowId"`
	Kind        string       `json:"kind"`
	Detail      string       `json:"detail"`
	Differences []Difference `json:"differences,omitempty"`
	// Activity is the activity a StuckActivity finding is about (nil for other kinds).
	Activity *Activity `json:"activity,omitempty"`
}

// Activity is a pending activity of a workflow, as Temporal describes it.
type Activity struct {
	// Type is the activity's name, e.g. "ApplyTaskChange".
	Type string `json:"type"`
	// Attempt is the attempt running or due next, counted from 1.
	Attempt int32 `json:"attempt"`
	// LastFailure is the message of the last failed attempt's error ("" when none failed).
	LastFailure string `json:"lastFailure,omitempty"`
	// LastFailedAt is when the last failed attempt ended (nil when none failed).
	LastFailedAt *time.Time `json:"lastFailedAt,omitempty"`
}

// Busy is an entity check could not compare with its workflow because one of them kept changing
// through every attempt (a command, or a stream of them, was being applied). It is not a
// disagreement: check it again later.
type Busy struct {
	WorkflowID string `json:"workflowId"`
	// Reason says what was moving, e.g. "a change is being applied (ApplyTaskChange is pending)".
	Reason string `json:"reason"`
}

// Report is what one check found.
type Report struct {
	Findings []Finding
	Busy     []Busy
}

// Ops checks and repairs over one store and one Temporal namespace. Only Store and Flows are
// required; the zero values of the others mean the defaults given.
type Ops struct {
	Store *store.Store
	Flows *workflows.Client
	// Converters are those of Flows' Temporal client (payload keys): ReplayHistory replays with
	// them, and a pass opens the digest in each workflow's memo with them. Nil: payloads in the
	// clear (a sealed digest cannot be read, so every workflow is queried).
	Converters *workflows.Converters

	// Attempts is how many times an entity is observed before it is called busy (default 6).
	Attempts int
	// Pause is the wait before observing an entity again; it doubles after each attempt, up to
	// one second (default 50 ms).
	Pause time.Duration
	// StuckAttempts and StuckAfter make an activity that has failed at least once stuck: when it
	// is at attempt StuckAttempts or later (default 5), or its last failed attempt ended StuckAfter
	// ago or longer (default one minute).
	StuckAttempts int32
	StuckAfter    time.Duration
	// Concurrency is how many entities a pass compares at once (default 8).
	Concurrency int
}

func (o *Ops) attempts() int {
	if o.Attempts > 0 {
		return o.Attempts
	}
	return 6
}

func (o *Ops) pause() time.Duration {
	if o.Pause > 0 {
		return o.Pause
	}
	return 50 * time.Millisecond
}

func (o *Ops) stuckAttempts() int32 {
	if o.StuckAttempts > 0 {
		return o.StuckAttempts
	}
	return 5
}

func (o *Ops) stuckAfter() time.Duration {
	if o.StuckAfter > 0 {
		return o.StuckAfter
	}
	return time.Minute
}

func (o *Ops) concurrency() int {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	return 8
}
