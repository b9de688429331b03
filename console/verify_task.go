package console

import (
	"context"
	"encoding/json"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A task's page (issue 22, "Verification"): the task, its links, dependencies, acceptance criteria
// with both sets of marks, the agent's work reports and the submission summary, all read through
// app use cases as the person (a hidden task is "Task not found", as chorus_get_task says).

// taskHistoryRows is how many of a task's latest activities the page reads for its work reports and
// its submission: the page shows those and says when there are more.
const taskHistoryRows = 50

// taskPageData is what templates/task.html shows.
type taskPageData struct {
	Task     *store.Task
	Project  *store.ProjectView
	Assignee *store.ActorRef
	Proposal *store.Proposal
	Ideas    []taskPageIdea
	// Criteria are the acceptance criteria with who marked them.
	Criteria []taskCriterion
	Summary  store.AcceptanceSummary
	Accept   string // the acceptance status (docs/rules.md §5.2)
	// DependsOn are the tasks this one is blocked by; DependedBy those it blocks; Blockers how
	// many of DependsOn are not resolved (done or closed).
	DependsOn, DependedBy           []store.TaskLink
	DependsOnCount, DependedByCount int
	Blockers                        int
	// Reports are the assignee's work reports (newest first) among the latest taskHistoryRows
	// activities; Submission the latest submission; Verified the verification, if any.
	Reports    []taskEvent
	Submission *taskEvent
	Verified   *taskEvent
	MoreEvents bool
	Comments   int
	// CanAct: the person may change the task (editor or admin of its project); a viewer reads.
	CanAct bool
	// BlockedBy lists the blockers a refused reopen named (docs/rules.md §5.3).
	BlockedBy []taskBlocker
	// Thread is the task's comments and the form to add one (templates/_comments.html).
	Thread commentsView
}

type taskPageIdea struct{ UUID, Title string }

// taskCriterion is one criterion with the names of who marked it.
type taskCriterion struct {
	store.AcceptanceCriterion
	Index      int
	DevMarker  *store.ActorRef
	Marker     *store.ActorRef
	StatusText string
}

// taskEvent is one entry of the task's history the page shows: who, when, and the text.
type taskEvent struct {
	Actor   *store.ActorRef
	At      string
	Text    string
	Status  string // a work report's status change, if it made one
	Session *string
}

// taskBlocker is one unresolved dependency as a refused reopen lists it (docs/rules.md §5.3).
type taskBlocker struct {
	UUID   string `json:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// loadTaskPage reads everything the task's page shows, as the person.
func (c *Console) loadTaskPage(ctx echo.Context, taskUUID string) (*taskPageData, error) {
	rctx, r := ctxOf(ctx), c.request(ctx)
	r.RequestID = "" // a read: the form's requestId is the action's, not this read's
	d, err := c.app.GetTask(rctx, r, taskUUID, nil)
	if err != nil {
		return nil, err
	}
	v := &taskPageData{Task: d.Task, Project: d.Project, CanAct: d.Project.Level() >= store.AccessEditor,
		DependsOn: d.Relations.DependsOn, DependsOnCount: d.Relations.DependsOnCount,
		DependedBy: d.Relations.DependedBy, DependedByCount: d.Relations.DependedByCount, Comments: d.Relations.CommentCount}
	v.Summary, v.Accept = store.Summarize(d.Relations.Criteria)
	for _, l := range v.DependsOn {
		if l.Status != "done" && l.Status != "closed" {
			v.Blockers++
		}
	}
	names := c.app.Store.NewNamer()
	v.Assignee = names.Ref(rctx, strOrEmpty(d.Task.AssigneeType), d.Task.AssigneeUUID)
	for i, cr := range d.Relations.Criteria {
		v.Criteria = append(v.Criteria, taskCriterion{AcceptanceCriterion: cr, Index: i,
			DevMarker: names.Ref(rctx, strOrEmpty(cr.DevMarkedByType), cr.DevMarkedBy),
			Marker:    names.Ref(rctx, strOrEmpty(cr.MarkedByType), cr.MarkedBy)})
	}
	if err := c.loadTaskHistory(rctx, r, v, names); err != nil {
		return nil, err
	}
	if err := c.loadTaskOrigin(rctx, r, v); err != nil {
		return nil, err
	}
	if v.Thread, err = c.commentsFor(ctx, "task", v.Task.UUID); err != nil {
		return nil, err
	}
	return v, nil
}

// loadTaskHistory reads the task's latest activities for its work reports (comment_added with a
// report, docs/rules.md §7.1), its latest submission (with its summary) and its verification.
func (c *Console) loadTaskHistory(ctx context.Context, r app.Request, v *taskPageData, names *store.Namer) error {
	target := v.Task.UUID
	acts, total, err := c.app.ListActivity(ctx, r, app.ActivityQuery{ProjectUUID: v.Task.ProjectUUID, TargetType: "task",
		TargetUUID: &target}, taskHistoryRows, 0)
	if err != nil {
		return err
	}
	v.MoreEvents = total > len(acts)
	for _, a := range acts { // newest first
		var val struct {
			Report        *string `json:"report"`
			StatusUpdated *string `json:"statusUpdated"`
			Summary       *string `json:"summary"`
		}
		_ = json.Unmarshal(a.Value, &val)
		entry := taskEvent{Actor: names.Ref(ctx, a.ActorType, &a.ActorUUID), At: a.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"),
			Session: a.SessionName}
		switch {
		case a.Action == "comment_added" && val.Report != nil:
			entry.Text, entry.Status = *val.Report, strOrEmpty(val.StatusUpdated)
			v.Reports = append(v.Reports, entry)
		case a.Action == "submitted" && v.Submission == nil:
			entry.Text = strOrEmpty(val.Summary)
			v.Submission = &entry
		case a.Action == "verified" && v.Verified == nil:
			v.Verified = &entry
		}
	}
	return nil
}

// loadTaskOrigin reads the task's proposal and the ideas it was made from, when the person can see
// them (a proposal or idea they cannot see is left out).
func (c *Console) loadTaskOrigin(ctx context.Context, r app.Request, v *taskPageData) error {
	if v.Task.ProposalUUID == nil {
		return nil
	}
	p, err := c.app.GetProposal(ctx, r, *v.Task.ProposalUUID)
	if err != nil {
		return hiddenIsNothing(err)
	}
	v.Proposal = p.Proposal
	if p.Proposal.InputType != "idea" {
		return nil
	}
	for _, id := range p.Proposal.InputUUIDs[:min(3, len(p.Proposal.InputUUIDs))] {
		idea, err := c.app.GetIdea(ctx, r, id)
		if err != nil {
			if err := hiddenIsNothing(err); err != nil {
				return err
			}
			continue
		}
		v.Ideas = append(v.Ideas, taskPageIdea{UUID: id, Title: idea.Idea.Title})
	}
	return nil
}

// hiddenIsNothing is nil for a not-found refusal (something the person cannot see, left out of
// the page), and err otherwise.
func hiddenIsNothing(err error) error {
	if v := app.Classify(err); v.Outcome == vocab.OutcomeRefused && v.Kind == string(vocab.RefusedNotFound) {
		return nil
	}
	return err
}

// blockersOf reads the blockers of a refused reopen's JSON answer (docs/rules.md §5.3): its
// message, and the tasks it lists; ok is false for any other refusal.
func blockersOf(msg string) (text string, blockers []taskBlocker, ok bool) {
	var b struct {
		Error    string        `json:"error"`
		Message  string        `json:"message"`
		Blockers []taskBlocker `json:"blockers"`
	}
	if json.Unmarshal([]byte(msg), &b) != nil || b.Error != "blocked_by_dependencies" {
		return "", nil, false
	}
	return b.Message, b.Blockers, true
}

func strOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
