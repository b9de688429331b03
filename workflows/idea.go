package workflows

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

// IdeaWorkflowName is the registered type of IdeaWorkflow.
const IdeaWorkflowName = "IdeaWorkflow"

// Update names of IdeaWorkflow, one per tool (docs/rules.md §4.4, §2.1, §2.2).
const (
	UpdateCreateIdea          = "chorus_pm_create_idea"
	UpdateClaimIdea           = "chorus_claim_idea"
	UpdateAssignIdea          = "chorus_pm_assign_idea"
	UpdateReleaseIdea         = "chorus_release_idea"
	UpdateEditIdea            = "chorus_edit_idea"
	UpdateStartElaboration    = "chorus_pm_start_elaboration"
	UpdateAnswerElaboration   = "chorus_answer_elaboration"
	UpdateValidateElaboration = "chorus_pm_validate_elaboration"
	UpdateSkipElaboration     = "chorus_pm_skip_elaboration"
	UpdateDeleteIdea          = "chorus_admin_delete_idea"
)

// IdeaState is everything IdeaWorkflow knows; it is what continue-as-new carries. It holds
// what the state machine needs and nothing of the idea's text but its title
// (docs/write-path.md, "Bounded state and payloads"): the content lives in the database, and
// questions and options are kept as fingerprints of their ids. The parent is the row's alone: a
// parent's deletion detaches its children in the parent's transaction (docs/rules.md §5.5).
type IdeaState struct {
	Created     bool    `json:"created"`
	Deleted     bool    `json:"deleted,omitempty"`
	UUID        string  `json:"uuid"`
	CompanyUUID string  `json:"companyUuid"`
	ProjectUUID string  `json:"projectUuid"`
	ProjectName string  `json:"projectName,omitempty"` // for the memo; "" in older histories
	Title       string  `json:"title"`
	Status      string  `json:"status"`
	Assignee    *Holder `json:"assignee,omitempty"`
	IsContainer bool    `json:"isContainer,omitempty"`
	// ElaborationDepth and ElaborationStatus are "" where the row has null.
	ElaborationDepth  string       `json:"elaborationDepth,omitempty"`
	ElaborationStatus string       `json:"elaborationStatus,omitempty"`
	CreatedBy         Party        `json:"createdBy"`
	Rounds            []RoundState `json:"rounds,omitempty"`
	Row               RowMark      `json:"row"`
	Recent            Recent       `json:"recent,omitempty"`
	// Progress is the idea's derived status as its ChorusProgress search attribute shows it
	// (docs/rules.md §5.1; idea_progress.go); ProgressRollup: the database last said it rolls up
	// from children (a theme with children).
	Progress       string `json:"progress,omitempty"`
	ProgressRollup bool   `json:"progressRollup,omitempty"`
}

// RoundState is what the workflow keeps of an elaboration round.
type RoundState struct {
	UUID      string          `json:"uuid"`
	Number    int             `json:"number"`
	Status    string          `json:"status"` // pending_answers | answered
	Questions []QuestionState `json:"questions"`
}

// QuestionState is what the workflow keeps of a question: fingerprints of its id and of its
// options' ids (the ids may be long; the database has them).
type QuestionState struct {
	UUID     string   `json:"uuid"`
	ID       string   `json:"id"`
	Required bool     `json:"required"`
	Options  []string `json:"options"`
	Answered bool     `json:"answered,omitempty"`
}

func (s IdeaState) clone() IdeaState {
	c := s
	if s.Assignee != nil {
		h := *s.Assignee
		c.Assignee = &h
	}
	c.Rounds = make([]RoundState, len(s.Rounds))
	for i, r := range s.Rounds {
		r.Questions = slices.Clone(r.Questions)
		for j := range r.Questions {
			r.Questions[j].Options = slices.Clone(r.Questions[j].Options)
		}
		c.Rounds[i] = r
	}
	c.Recent = slices.Clone(s.Recent)
	return c
}

func (s IdeaState) status() IdeaStatus { return IdeaStatus(s.Status) }

// pendingRounds lists the rounds still waiting for answers.
func (s IdeaState) pendingRounds() []*RoundState {
	var out []*RoundState
	for i := range s.Rounds {
		if s.Rounds[i].Status == "pending_answers" {
			out = append(out, &s.Rounds[i])
		}
	}
	return out
}

// isAssignee: the actor is the idea's assignee agent, or (withOwner) its owner user is.
func (s IdeaState) isAssignee(a Actor, withOwner bool) bool {
	if s.Assignee == nil {
		return false
	}
	switch s.Assignee.Type {
	case "agent":
		return s.Assignee.UUID == a.UUID
	case "user":
		return withOwner && a.OwnerUUID != "" && s.Assignee.UUID == a.OwnerUUID
	}
	return false
}

// assigneeText names the assignee for refusals: "agent <uuid>".
func (s IdeaState) assigneeText() string {
	if s.Assignee == nil {
		return "nobody"
	}
	return s.Assignee.Type + " " + s.Assignee.UUID
}

// Projection is the idea's row as far as the workflow owns it: the columns ops repair rewrites and
// ops check compares (IdeaColumns, with version and change_id).
func (s IdeaState) Projection() store.Idea {
	i := store.Idea{UUID: s.UUID, CompanyUUID: s.CompanyUUID, ProjectUUID: s.ProjectUUID, Title: s.Title, Status: IdeaStatus(s.Status),
		ElaborationDepth: nilIfBlank(s.ElaborationDepth), ElaborationStatus: nilIfBlank(s.ElaborationStatus),
		IsContainer: s.IsContainer, CreatedByType: s.CreatedBy.Type,
		CreatedByUUID: s.CreatedBy.UUID, Version: s.Row.Version, ChangeID: s.Row.ChangeID}
	if h := s.Assignee; h != nil {
		at := h.At
		i.AssigneeType, i.AssigneeUUID, i.AssignedAt, i.AssignedByUUID = &h.Type, &h.UUID, &at, h.By
	}
	return i
}

// IdeaColumns are the columns of an idea row its workflow owns (IdeaState.row).
var IdeaColumns = []string{"project_uuid", "title", "status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid",
	"is_container", "elaboration_depth", "elaboration_status"}

func nilIfBlank(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- inputs and results ----

// IdeaRun is IdeaWorkflow's input: empty for a new idea, the state when continuing as new.
type IdeaRun struct {
	State *IdeaState
}

// CreateIdeaInput creates the idea (update-with-start).
type CreateIdeaInput struct {
	Actor       Actor
	UUID        string
	ProjectUUID string
	ProjectName string
	Title       string
	Content     *string
	ParentUUID  *string
	IsContainer bool
}

// IdeaCommand is the input of commands that need only the actor.
type IdeaCommand struct {
	Actor Actor
}

// AssignIdeaInput makes an agent or a user of the company the idea's assignee
// (chorus_pm_assign_idea); who may be assigned is checked by the caller.
type AssignIdeaInput struct {
	Actor      Actor
	TargetType string // agent | user
	TargetUUID string
	TargetName string
}

// EditIdeaInput edits an idea; nil fields are left alone. SetParent with ParentUUID nil detaches.
type EditIdeaInput struct {
	Actor       Actor
	Title       *string
	Content     *string
	SetParent   bool
	ParentUUID  *string
	IsContainer *bool
}

// QuestionInput is one question of chorus_pm_start_elaboration.
type QuestionInput struct {
	ID       string
	Text     string
	Category string
	Options  []store.QuestionOption
	Required *bool
}

// StartElaborationInput starts an elaboration round.
type StartElaborationInput struct {
	Actor     Actor
	Depth     string
	Questions []QuestionInput
}

// AnswerInput is one answer of chorus_answer_elaboration.
type AnswerInput struct {
	QuestionID       string
	SelectedOptionID *string
	CustomText       *string
}

// AnswerElaborationInput answers questions of a round (the single pending one when RoundUUID is nil).
type AnswerElaborationInput struct {
	Actor     Actor
	RoundUUID *string
	Answers   []AnswerInput
}

// SkipElaborationInput skips elaboration with a reason.
type SkipElaborationInput struct {
	Actor  Actor
	Reason string
}

// IdeaResult is what idea updates return; callers read the full view from the database, which
// already holds the change when the update completes.
type IdeaResult struct {
	UUID        string
	Status      string
	RoundUUID   string `json:",omitempty"`
	RoundNumber int    `json:",omitempty"`
	// Moved counts what chorus_move_idea moved.
	Moved *store.MoveCounts `json:",omitempty"`
}

// ---- the workflow ----

// current is the state, for the rules bound with on.
func (w *ideaWorkflow) current() IdeaState { return w.state }

type ideaWorkflow struct {
	state IdeaState
	mu    *commandLock
	// memo is the mark of the memo this run last published (publishShown).
	memo memoMark
	// abandoned: the create update failed, so this run holds no idea and ends.
	abandoned bool
	// refreshes receives SignalRefreshProgress; refreshing: a refresh is under way.
	refreshes  workflow.ReceiveChannel
	refreshing bool
	// progressShown: a refresh of this run published the progress (refreshProgress).
	progressShown bool
}

// createWindow is how long a workflow started by update-with-start waits for its create to be
// accepted; one that holds no idea after it ends (docs/write-path.md, "Every row has its
// workflow").
const createWindow = 10 * time.Second

// IdeaWorkflow is the long-lived workflow of one idea (id "idea/<uuid>"): it owns the idea's
// status, assignee and elaboration rounds, accepts one update per idea tool, and persists each
// accepted change (rows, activity, notifications) through an activity before returning.
func IdeaWorkflow(ctx workflow.Context, in IdeaRun) error {
	w := &ideaWorkflow{mu: newCommandLock(ctx)}
	if in.State != nil {
		w.state = *in.State
	}
	if err := w.register(ctx); err != nil {
		return err
	}
	pendingMoves := receiveMoves(ctx, w.mu, w.followMove)
	w.receiveRefreshes(ctx)
	if w.state.Created {
		w.publish(ctx)
	} else if created, err := awaitCreated(ctx, func() bool { return w.state.Created || w.abandoned }); err != nil || !created {
		return err
	}
	again, err := awaitContinueAsNew(ctx, w.mu, func() bool { return w.state.Deleted || w.abandoned })
	if err != nil || !again {
		return err
	}
	pendingMoves(ctx) // do not lose a move that arrived just now
	if err := w.pendingRefreshes(ctx); err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, IdeaWorkflowName, IdeaRun{State: &w.state})
}

func (w *ideaWorkflow) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (IdeaState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The idea's workflow state: status, assignee, rounds, row version."}); err != nil {
		return err
	}
	recent := func() *Recent { return &w.state.Recent }
	return firstErr(
		registerUpdate(ctx, w.mu, recent, CreateIdea, on(w.current, IdeaState.checkCreate), w.create),
		registerUpdate(ctx, w.mu, recent, ClaimIdea, on(w.current, IdeaState.checkClaim), w.claim),
		registerUpdate(ctx, w.mu, recent, ReleaseIdea, on(w.current, IdeaState.checkRelease), w.release),
		registerUpdate(ctx, w.mu, recent, AssignIdea, on(w.current, IdeaState.checkAssign), w.assign),
		registerUpdate(ctx, w.mu, recent, EditIdea, on(w.current, IdeaState.checkEdit), w.edit),
		registerUpdate(ctx, w.mu, recent, StartElaboration, on(w.current, IdeaState.checkStart), w.startElaboration),
		registerUpdate(ctx, w.mu, recent, AnswerElaboration, on(w.current, IdeaState.checkAnswer), w.answer),
		registerUpdate(ctx, w.mu, recent, ValidateElaboration, on(w.current, IdeaState.checkValidate), w.validateElaboration),
		registerUpdate(ctx, w.mu, recent, SkipElaboration, on(w.current, IdeaState.checkSkip), w.skip),
		registerUpdate(ctx, w.mu, recent, DeleteIdea, on(w.current, IdeaState.checkDelete), w.delete),
		registerUpdate(ctx, w.mu, recent, MoveIdea, on(w.current, IdeaState.checkMove), w.move),
	)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var notFoundIdea = Refuse(KindNotFound, "Idea not found")

// exists refuses commands on an idea that was never created or is deleted.
func (s IdeaState) exists() error {
	if !s.Created || s.Deleted {
		return notFoundIdea
	}
	return nil
}

// next starts a change: a copy of the state, and the write that will move the row.
func (w *ideaWorkflow) next(ctx workflow.Context) (IdeaState, store.Write) {
	return w.state.clone(), nextWrite(ctx, w.state.Row, stamp(ctx))
}

// commit persists change (made on n by the write wr), then makes n the state and tells
// operators. A projection conflict becomes a refusal (docs/write-path.md).
func (w *ideaWorkflow) commit(ctx workflow.Context, n IdeaState, wr store.Write, change store.IdeaChange) error {
	var a *activities.Activities
	change.Write, change.UUID, change.CompanyUUID, change.ProjectUUID = wr, n.UUID, n.CompanyUUID, n.ProjectUUID
	if err := persist(ctx, a.ApplyIdeaChange, change).Get(ctx, nil); err != nil {
		// The parent changed between the workflow's check and the write (docs/rules.md §5.5).
		if l, ok := activities.AsLineageChanged(err); ok && change.Parent != nil {
			refusal := checkParent(n.UUID, n.ProjectUUID, *change.Parent, l)
			if refusal == nil {
				refusal = Refuse(KindConflict, "The parent idea changed meanwhile")
			}
			if change.Insert == nil {
				refusal = Refuse(refusal.Kind, "Failed to edit Idea: %s", refusal.Message)
			}
			return refusal
		}
		if refusal := w.adoptMove(ctx, err); refusal != nil {
			return refusal
		}
		if err = diverged(ctx, EntityIdea, err); isChorusError(err) {
			return err
		}
		return fmt.Errorf("could not save the idea: %w", err)
	}
	n.Row = mark(wr)
	w.state = n
	w.publish(ctx)
	return nil
}

// set is a change that sets the given columns of the idea to n's values.
func set(n IdeaState, cols ...string) store.IdeaChange {
	return store.IdeaChange{Set: n.Projection(), Columns: cols}
}

// activity builds an audit row of this idea for the change wr.
func (w *ideaWorkflow) activity(n IdeaState, wr store.Write, a Actor, action string, value any) store.Activity {
	return store.Activity{UUID: derivedFrom(wr, "activity", action), CompanyUUID: n.CompanyUUID, ProjectUUID: n.ProjectUUID,
		TargetType: "idea", TargetUUID: n.UUID, ActorType: a.Type, ActorUUID: a.UUID, Action: action,
		Value: activities.MarshalValue(value), CreatedAt: wr.At}
}

func (w *ideaWorkflow) notify(n IdeaState, wr store.Write, a Actor, action, message string, to ...store.Recipient) store.NotifySpec {
	return store.NotifySpec{Seed: derivedFrom(wr, "notify", action), ProjectUUID: n.ProjectUUID, Action: action,
		EntityType: "idea", EntityUUID: n.UUID, EntityTitle: n.Title, Message: message, ActorType: a.Type, ActorUUID: a.UUID,
		ActorName: a.Name, Recipients: to}
}

// creator and assignee as notification recipients (docs/rules.md §8.7: the creator is reached as
// what it is).
func creatorOf(s IdeaState) store.Recipient {
	return store.Recipient{Type: s.CreatedBy.Type, UUID: s.CreatedBy.UUID}
}

func assigneeOf(s IdeaState) store.Recipient {
	if s.Assignee == nil {
		return store.Recipient{}
	}
	t := s.Assignee.Type
	if t == "agent_instance" {
		t = "agent"
	}
	return store.Recipient{Type: t, UUID: s.Assignee.UUID}
}

func result(s IdeaState) IdeaResult { return IdeaResult{UUID: s.UUID, Status: s.Status} }

// publish keeps what operators see current: search attributes (with the progress,
// idea_progress.go), memo and current details.
func (w *ideaWorkflow) publish(ctx workflow.Context) {
	w.state.Progress = w.state.progress()
	s := w.state
	assignee := ""
	if s.Assignee != nil {
		assignee = s.Assignee.UUID
	}
	status := s.Status
	if s.Deleted {
		status = "deleted"
	}
	assigneeName := ""
	if s.Assignee != nil {
		assigneeName = s.Assignee.Name
		if assigneeName == "" {
			assigneeName = assignee
		}
	}
	checked, err := s.Checked()
	holds := s.Created && !s.Deleted && err == nil
	memo := withDigest(publishedMemo(s.Title, s.ProjectName), holds, checked, err, s.Row.Version)
	publishShown(ctx, shown{memo: memo, mark: newMemoMark(s.Title, s.ProjectName, s.Row.Version, holds), last: &w.memo,
		keywords: map[string]string{
			ProjectUUIDKey.GetName(): s.ProjectUUID, EntityKey.GetName(): string(EntityIdea), StatusKey.GetName(): status,
			AssigneeKey.GetName(): assignee, CreatorKey.GetName(): s.CreatedBy.UUID, ProgressKey.GetName(): s.Progress,
			TitleKey.GetName(): keywordValue(s.Title), AssigneeNameKey.GetName(): keywordValue(assigneeName)}})
	details := fmt.Sprintf("**Idea** %q is **%s**", s.Title, status)
	if s.Assignee != nil {
		name := s.Assignee.Name
		if name == "" {
			name = assignee
		}
		details += ", assigned to " + name
	}
	if s.ElaborationStatus != "" {
		details += fmt.Sprintf("; elaboration %s (%d round(s), %d pending)", s.ElaborationStatus,
			len(s.Rounds), len(s.pendingRounds()))
	}
	if s.Progress != "" {
		details += "; progress " + s.Progress
	}
	workflow.SetCurrentDetails(ctx, details+fmt.Sprintf(" (row version %d)", s.Row.Version))
}

// ---- create ----

func (s IdeaState) checkCreate(in CreateIdeaInput) error {
	if s.Created {
		return nil // a retried create returns the idea
	}
	return CheckTitle("", "title", &in.Title)
}

func (w *ideaWorkflow) create(ctx workflow.Context, in CreateIdeaInput) (IdeaResult, error) {
	if w.state.Created {
		if w.state.Deleted {
			return IdeaResult{}, notFoundIdea
		}
		return result(w.state), nil
	}
	if in.ParentUUID != nil {
		applied, err := alreadyApplied(ctx, in.UUID, RowMark{})
		if err != nil {
			w.abandoned = true
			return IdeaResult{}, err
		}
		if !applied {
			lineage, err := w.lineage(ctx, in.Actor, in.UUID, *in.ParentUUID)
			if err != nil {
				w.abandoned = true
				return IdeaResult{}, err
			}
			if err := checkParent(in.UUID, in.ProjectUUID, *in.ParentUUID, lineage); err != nil {
				w.abandoned = true
				return IdeaResult{}, err
			}
		}
	}
	wr := nextWrite(ctx, RowMark{}, stamp(ctx))
	n := IdeaState{Created: true, UUID: in.UUID, CompanyUUID: in.Actor.CompanyUUID, ProjectUUID: in.ProjectUUID,
		ProjectName: in.ProjectName, Title: strings.TrimSpace(in.Title), Status: string(IdeaOpen), CreatedBy: Party{Type: in.Actor.Type, UUID: in.Actor.UUID},
		IsContainer: in.IsContainer, Recent: w.state.Recent}
	row := n.Projection()
	row.Content, row.ParentUUID = emptyToNil(in.Content), in.ParentUUID
	row.CreatedAt, row.UpdatedAt = wr.At, wr.At
	if err := w.commit(ctx, n, wr, store.IdeaChange{Insert: &row, Parent: in.ParentUUID}); err != nil {
		w.abandoned = true // nothing was created: end rather than linger as an empty workflow
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// lineage reads, for docs/rules.md §5.5, the idea's current parent and what the database knows of a
// proposed one (parentUUID "" reads only the current parent).
func (w *ideaWorkflow) lineage(ctx workflow.Context, a Actor, ideaUUID, parentUUID string) (store.Lineage, error) {
	var acts *activities.Activities
	var refs store.Lineage
	if err := read(ctx, acts.IdeaLineage, a.CompanyUUID, ideaUUID, parentUUID).Get(ctx, &refs); err != nil {
		return refs, fmt.Errorf("could not check the parent idea: %w", err)
	}
	return refs, nil
}

// checkParent applies docs/rules.md §5.5 to a proposed parent, given its lineage.
func checkParent(ideaUUID, projectUUID, parentUUID string, refs store.Lineage) *Error {
	switch {
	case parentUUID == ideaUUID:
		return Refuse(KindInvalid, "An idea cannot be its own parent")
	case !refs.ParentFound:
		return Refuse(KindNotFound, "Parent idea not found")
	case refs.ParentProject != projectUUID:
		return Refuse(KindInvalid, "Parent idea must be in the same project")
	case refs.ParentIsDescendant:
		return Refuse(KindConflict, "Cannot set parent: would create a cycle (the new parent is this idea's descendant)")
	}
	return nil
}

func emptyToNil(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// ---- claim / release ----

func (s IdeaState) checkClaim(in IdeaCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if s.Assignee != nil {
		if s.isAssignee(in.Actor, false) {
			return Refuse(KindConflict, "Can only claim Ideas with open status: you already hold this idea (status %s)", s.Status)
		}
		return Refuse(KindConflict, "Can only claim Ideas with open status: this idea is %s and already assigned (%s). "+
			"Ask the assignee to release it, or pick another idea with chorus_get_available_ideas.", s.Status, s.assigneeText())
	}
	if s.status() == IdeaElaborated {
		return Refuse(KindConflict, "Cannot claim an elaborated Idea: its elaboration is resolved; create a proposal from it instead")
	}
	if _, err := s.status().Next(IdeaClaim); err != nil {
		return Refuse(KindConflict, "Can only claim Ideas with open status (current status: %s)", s.Status)
	}
	return nil
}

func (w *ideaWorkflow) claim(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(IdeaClaim)
	n.Status = string(to)
	n.Assignee = &Holder{Type: "agent", UUID: in.Actor.UUID, Name: in.Actor.Name, At: wr.At}
	change := set(n, "status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid")
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "assigned", map[string]string{"assigneeType": "agent", "assigneeUuid": in.Actor.UUID})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "idea_claimed",
		fmt.Sprintf("%s claimed idea %q", in.Actor.Name, n.Title), creatorOf(n), assigneeOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// checkAssign: any idea that exists may be assigned, held or not (docs/rules.md §4.4).
func (s IdeaState) checkAssign(in AssignIdeaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.TargetType != "agent" && in.TargetType != "user" {
		return Refuse(KindInvalid, "assigneeType must be agent or user, got %q", in.TargetType)
	}
	return nil
}

// assign makes the target the assignee, as assigned by the actor: an open idea moves to
// elaborating like a claim, any other keeps its status. The assignee and the creator are
// notified (idea_claimed, the notification a claim sends).
func (w *ideaWorkflow) assign(ctx workflow.Context, in AssignIdeaInput) (IdeaResult, error) {
	if a := w.state.Assignee; a != nil && a.Type == in.TargetType && a.UUID == in.TargetUUID {
		return result(w.state), nil // already theirs: nothing changes
	}
	n, wr := w.next(ctx)
	if to, err := w.state.status().Next(IdeaClaim); err == nil {
		n.Status = string(to)
	}
	n.Assignee = &Holder{Type: in.TargetType, UUID: in.TargetUUID, Name: in.TargetName, At: wr.At, By: ptr(in.Actor.UUID)}
	change := set(n, "status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid")
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "assigned",
		map[string]string{"assigneeType": in.TargetType, "assigneeUuid": in.TargetUUID, "assignedBy": in.Actor.UUID})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "idea_claimed",
		fmt.Sprintf("%s assigned idea %q to %s", in.Actor.Name, n.Title, in.TargetName), creatorOf(n), assigneeOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

func (s IdeaState) checkRelease(in IdeaCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor, true) {
		if s.Assignee == nil {
			return Refuse(KindForbidden, "Only the assignee can release a claimed Idea: this idea is not claimed (status %s)", s.Status)
		}
		return Refuse(KindForbidden, "Only the assignee can release a claimed Idea (assignee: %s)", s.assigneeText())
	}
	if s.status() == IdeaElaborated {
		return Refuse(KindConflict, "Cannot release an elaborated Idea: its elaboration is resolved and it stays with its assignee")
	}
	return nil
}

func (w *ideaWorkflow) release(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	to, err := w.state.status().Next(IdeaRelease)
	if err != nil {
		return IdeaResult{}, Refuse(KindConflict, "Cannot release an Idea in status %s", w.state.Status)
	}
	n, wr := w.next(ctx)
	n.Status, n.Assignee, n.ElaborationDepth, n.ElaborationStatus = string(to), nil, "", ""
	change := set(n, "status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid",
		"elaboration_depth", "elaboration_status")
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "released", nil)}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// ---- edit ----

func (s IdeaState) checkEdit(in EditIdeaInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if in.Title == nil && in.Content == nil && !in.SetParent && in.IsContainer == nil {
		return Refuse(KindInvalid, "Provide at least one of title, content, parentUuid, detachParent, or isContainer to edit.")
	}
	if err := CheckTitle("Failed to edit Idea", "title", in.Title); err != nil {
		return err
	}
	if in.SetParent && in.ParentUUID != nil && *in.ParentUUID == s.UUID {
		return Refuse(KindInvalid, "Failed to edit Idea: An idea cannot be its own parent")
	}
	return nil
}

// edit changes the title and theme flag (state and row) and the content and parent (row only).
// The checks of docs/rules.md §5.5 read the lineage first, with the current parent, so "reparented" is
// recorded only for a real move.
func (w *ideaWorkflow) edit(ctx workflow.Context, in EditIdeaInput) (IdeaResult, error) {
	var current *string
	applied := false
	if in.SetParent {
		var err error
		if applied, err = alreadyApplied(ctx, w.state.UUID, w.state.Row); err != nil {
			return IdeaResult{}, err
		}
	}
	if in.SetParent && !applied {
		lineage, err := w.lineage(ctx, in.Actor, w.state.UUID, deref(in.ParentUUID))
		if err != nil {
			return IdeaResult{}, err
		}
		if in.ParentUUID != nil {
			if err := checkParent(w.state.UUID, w.state.ProjectUUID, *in.ParentUUID, lineage); err != nil {
				return IdeaResult{}, Refuse(err.Kind, "Failed to edit Idea: %s", err.Message)
			}
		}
		current = lineage.CurrentParent
	}
	n, wr := w.next(ctx)
	var cols, changed []string
	var acts []store.Activity
	if in.SetParent && deref(in.ParentUUID) != deref(current) {
		cols = append(cols, "parent_uuid")
		acts = append(acts, w.activity(n, wr, in.Actor, "reparented", map[string]*string{"fromParentUuid": current, "toParentUuid": in.ParentUUID}))
	}
	if in.Title != nil {
		n.Title = strings.TrimSpace(*in.Title)
		cols, changed = append(cols, "title"), append(changed, "title")
	}
	var mentions *store.MentionText
	if in.Content != nil {
		cols, changed = append(cols, "content"), append(changed, "content")
		// Only mentions the old content did not have are new (docs/rules.md §7.3).
		mentions = &store.MentionText{Seed: wr.ID + "/mentions", Text: *in.Content, PreviousColumn: "content",
			SourceType: "idea", SourceUUID: n.UUID, TargetType: "idea", TargetUUID: n.UUID, TargetTitle: n.Title,
			ProjectUUID: n.ProjectUUID, ActorType: in.Actor.Type, ActorUUID: in.Actor.UUID, ActorName: in.Actor.Name, At: wr.At}
	}
	if in.IsContainer != nil {
		n.IsContainer = *in.IsContainer
		cols = append(cols, "is_container")
	}
	change := set(n, cols...)
	change.Set.Content, change.Set.ParentUUID = emptyToNil(in.Content), in.ParentUUID
	if slices.Contains(cols, "parent_uuid") {
		change.Parent = in.ParentUUID
	}
	change.Activities = acts
	change.Mentions = mentions
	if len(changed) > 0 {
		change.Activities = append(change.Activities, w.activity(n, wr, in.Actor, "edited", map[string][]string{"changedFields": changed}))
	}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// ---- elaboration ----

// maxRounds and the question limits of docs/rules.md §2.2.
const (
	maxRounds       = 10
	maxQuestions    = 15
	minOptions      = 2
	maxOptions      = 5
	startErrPrefix  = "Failed to start elaboration: "
	answerErrPrefix = "Failed to answer elaboration: "
)

func (s IdeaState) checkStart(in StartElaborationInput) error {
	fail := func(kind Kind, format string, args ...any) error {
		return Refuse(kind, startErrPrefix+format, args...)
	}
	// 1. question format
	switch {
	case len(in.Questions) == 0:
		return fail(KindInvalid, "At least 1 question is required")
	case len(in.Questions) > maxQuestions:
		return fail(KindInvalid, "Maximum %d questions per round", maxQuestions)
	}
	seen := map[string]bool{}
	for _, q := range in.Questions {
		if strings.TrimSpace(q.ID) == "" {
			return fail(KindInvalid, "Every question needs a non-empty id (answers refer to it)")
		}
		if strings.TrimSpace(q.Text) == "" {
			return fail(KindInvalid, "Question '%s' has empty text", q.ID)
		}
		if n := len(q.Options); n < minOptions || n > maxOptions {
			return fail(KindInvalid, "Question '%s' must have %d-%d options, got %d", q.ID, minOptions, maxOptions, n)
		}
		optSeen := map[string]bool{}
		for _, o := range q.Options {
			if strings.TrimSpace(o.ID) == "" || strings.TrimSpace(o.Label) == "" {
				return fail(KindInvalid, "Question '%s' has an option with missing id or label", q.ID)
			}
			if optSeen[o.ID] {
				return fail(KindInvalid, "Question '%s' has two options with id '%s'", q.ID, o.ID)
			}
			optSeen[o.ID] = true
		}
		if seen[q.ID] {
			return fail(KindInvalid, "Duplicate question id '%s'", q.ID)
		}
		seen[q.ID] = true
	}
	// 2. idea exists
	if err := s.exists(); err != nil {
		return err
	}
	// 3. assignee
	if !s.isAssignee(in.Actor, false) {
		return fail(KindForbidden, "Only the assigned agent can start elaboration (claim the idea first with chorus_claim_idea)")
	}
	// 4. status
	if _, err := s.status().Next(IdeaStartElaboration); err != nil {
		return fail(KindConflict, "Cannot start elaboration from status '%s'. Idea must be in 'elaborating' or 'elaborated' status (claim it first).", s.Status)
	}
	// 5. round cap
	if len(s.Rounds)+1 > maxRounds {
		return fail(KindConflict, "Maximum %d elaboration rounds per Idea", maxRounds)
	}
	return nil
}

func (w *ideaWorkflow) startElaboration(ctx workflow.Context, in StartElaborationInput) (IdeaResult, error) {
	n, wr := w.next(ctx)
	number := len(n.Rounds) + 1
	appended := w.state.status() == IdeaElaborated
	round := store.ElaborationRound{UUID: derivedFrom(wr, "round"), CompanyUUID: n.CompanyUUID, IdeaUUID: n.UUID,
		RoundNumber: number, Status: "pending_answers", IsAppended: appended, CreatedByType: in.Actor.Type,
		CreatedByUUID: in.Actor.UUID, CreatedAt: wr.At, UpdatedAt: wr.At}
	rs := RoundState{UUID: round.UUID, Number: number, Status: string(round.Status)}
	for i, q := range in.Questions {
		required := q.Required == nil || *q.Required
		row := store.ElaborationQuestion{UUID: DerivedUUID(round.UUID, "question", strconv.Itoa(i)), RoundUUID: round.UUID,
			QuestionID: q.ID, Text: q.Text, Category: q.Category, Options: q.Options, Required: required, SortOrder: i}
		round.Questions = append(round.Questions, row)
		qs := QuestionState{UUID: row.UUID, ID: fingerprint(q.ID), Required: required}
		for _, o := range q.Options {
			qs.Options = append(qs.Options, fingerprint(o.ID))
		}
		rs.Questions = append(rs.Questions, qs)
	}
	n.Rounds = append(n.Rounds, rs)
	n.ElaborationDepth = in.Depth
	cols := []string{"elaboration_depth"}
	if !appended {
		n.Status, n.ElaborationStatus = string(IdeaElaborating), "pending_answers"
		cols = append(cols, "status", "elaboration_status")
	}
	change := set(n, cols...)
	change.NewRound = &round
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_started",
		map[string]any{"depth": in.Depth, "questionCount": len(in.Questions), "roundNumber": number})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "elaboration_requested",
		fmt.Sprintf("%s requested elaboration on idea %q", in.Actor.Name, n.Title),
		creatorOf(n), store.Recipient{Type: "user", UUID: in.Actor.OwnerUUID})}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	r := result(w.state)
	r.RoundUUID, r.RoundNumber = round.UUID, number
	return r, nil
}

// locateRound finds the round an answer call targets (docs/rules.md §2.2).
func (s IdeaState) locateRound(in AnswerElaborationInput) (*RoundState, error) {
	if in.RoundUUID != nil {
		for i := range s.Rounds {
			if s.Rounds[i].UUID == *in.RoundUUID {
				r := &s.Rounds[i]
				if r.Status != "pending_answers" {
					return nil, Refuse(KindConflict, answerErrPrefix+"Round is '%s', expected 'pending_answers' (round %d is already answered; "+
						"ask for a new round with chorus_pm_start_elaboration)", r.Status, r.Number)
				}
				return r, nil
			}
		}
		return nil, Refuse(KindNotFound, answerErrPrefix+"Elaboration round not found")
	}
	pending := s.pendingRounds()
	switch len(pending) {
	case 0:
		return nil, Refuse(KindConflict, answerErrPrefix+"no active round to answer (every round of this idea is answered)")
	case 1:
		return pending[0], nil
	}
	return nil, Refuse(KindInvalid, answerErrPrefix+"multiple active rounds; specify roundUuid (see chorus_get_elaboration)")
}

func (s IdeaState) checkAnswer(in AnswerElaborationInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	r, err := s.locateRound(in)
	if err != nil {
		return err
	}
	if len(in.Answers) == 0 {
		return Refuse(KindInvalid, answerErrPrefix+"answers must contain at least one answer")
	}
	for _, a := range in.Answers {
		qi := slices.IndexFunc(r.Questions, func(q QuestionState) bool { return q.ID == fingerprint(a.QuestionID) })
		if qi < 0 {
			return Refuse(KindInvalid, answerErrPrefix+"Question '%s' not found in round", a.QuestionID)
		}
		if a.SelectedOptionID != nil {
			if !slices.Contains(r.Questions[qi].Options, fingerprint(*a.SelectedOptionID)) {
				return Refuse(KindInvalid, answerErrPrefix+"Invalid option '%s' for question '%s': it is not one of the "+
					"question's option ids (chorus_get_elaboration lists them)", *a.SelectedOptionID, a.QuestionID)
			}
		} else if a.CustomText == nil || strings.TrimSpace(*a.CustomText) == "" {
			return Refuse(KindInvalid, answerErrPrefix+"Question '%s': custom text is required when no option is selected", a.QuestionID)
		}
	}
	return nil
}

func (w *ideaWorkflow) answer(ctx workflow.Context, in AnswerElaborationInput) (IdeaResult, error) {
	n, wr := w.next(ctx)
	cur, _ := w.state.locateRound(in)
	ri := slices.IndexFunc(n.Rounds, func(r RoundState) bool { return r.UUID == cur.UUID })
	r := &n.Rounds[ri]
	change := store.IdeaChange{}
	for _, a := range in.Answers {
		qi := slices.IndexFunc(r.Questions, func(q QuestionState) bool { return q.ID == fingerprint(a.QuestionID) })
		r.Questions[qi].Answered = true
		custom := a.CustomText
		if custom != nil && strings.TrimSpace(*custom) == "" {
			custom = nil
		}
		change.Answers = append(change.Answers, store.ElaborationQuestion{UUID: r.Questions[qi].UUID,
			SelectedOptionID: a.SelectedOptionID, CustomText: custom, AnsweredAt: &wr.At,
			AnsweredByType: ptr(in.Actor.Type), AnsweredByUUID: ptr(in.Actor.UUID)})
	}
	complete := !slices.ContainsFunc(r.Questions, func(q QuestionState) bool { return q.Required && !q.Answered })
	if complete {
		r.Status = "answered"
		change.RoundStatus = map[string]string{r.UUID: "answered"}
		if n.ElaborationStatus != "resolved" {
			n.ElaborationStatus = "validating"
			change.Columns = []string{"elaboration_status"}
		}
	}
	change.Set = n.Projection()
	answered := 0
	for _, q := range r.Questions {
		if q.Answered {
			answered++
		}
	}
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_answered",
		map[string]int{"roundNumber": r.Number, "answeredCount": answered})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "elaboration_answered",
		fmt.Sprintf("%s answered elaboration questions for idea %q", in.Actor.Name, n.Title),
		assigneeOf(n), creatorOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	res := result(w.state)
	res.RoundUUID, res.RoundNumber = r.UUID, r.Number
	return res, nil
}

const resolveErrPrefix = "Failed to resolve elaboration: "

func (s IdeaState) checkValidate(in IdeaCommand) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor, false) {
		return Refuse(KindForbidden, resolveErrPrefix+"Only the assigned agent can resolve elaboration")
	}
	if len(s.Rounds) == 0 {
		return Refuse(KindConflict, resolveErrPrefix+"Cannot resolve: the Idea has no elaboration rounds (start one with "+
			"chorus_pm_start_elaboration, or skip elaboration with chorus_pm_skip_elaboration)")
	}
	if p := len(s.pendingRounds()); p > 0 {
		return Refuse(KindConflict, resolveErrPrefix+"Cannot resolve: %d round(s) still have unanswered questions "+
			"(answer them with chorus_answer_elaboration first)", p)
	}
	return nil
}

func (w *ideaWorkflow) validateElaboration(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(IdeaValidate)
	n.Status, n.ElaborationStatus = string(to), "resolved"
	change := set(n, "status", "elaboration_status")
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_resolved", map[string]int{"totalRounds": len(n.Rounds)})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "elaboration_answered",
		fmt.Sprintf("%s resolved the elaboration of idea %q", in.Actor.Name, n.Title), assigneeOf(n), creatorOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

const skipErrPrefix = "Failed to skip elaboration: "

func (s IdeaState) checkSkip(in SkipElaborationInput) error {
	if err := s.exists(); err != nil {
		return err
	}
	if !s.isAssignee(in.Actor, false) {
		return Refuse(KindForbidden, skipErrPrefix+"Only the assigned agent can skip elaboration (claim the idea first)")
	}
	if _, err := s.status().Next(IdeaSkipElaboration); err != nil {
		return Refuse(KindConflict, skipErrPrefix+"Cannot skip elaboration from status '%s' (only an elaborating idea can skip)", s.Status)
	}
	return nil
}

func (w *ideaWorkflow) skip(ctx workflow.Context, in SkipElaborationInput) (IdeaResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(IdeaSkipElaboration)
	n.Status, n.ElaborationDepth, n.ElaborationStatus = string(to), "minimal", "resolved"
	change := set(n, "status", "elaboration_depth", "elaboration_status")
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_skipped", map[string]string{"reason": in.Reason})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "elaboration_answered",
		fmt.Sprintf("%s skipped the elaboration of idea %q", in.Actor.Name, n.Title), assigneeOf(n), creatorOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// ---- delete ----

func (s IdeaState) checkDelete(in IdeaCommand) error { return s.exists() }

func (w *ideaWorkflow) delete(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, wr := w.next(ctx)
	n.Deleted = true
	if err := w.commit(ctx, n, wr, store.IdeaChange{Delete: true}); err != nil {
		return IdeaResult{}, err
	}
	return IdeaResult{UUID: n.UUID, Status: "deleted"}, nil
}

// asError is errors.As for *Error, also unwrapping Temporal application errors of a Chorus kind.
func asError(err error, target **Error) bool {
	if e, ok := FromTemporal(err).(*Error); ok {
		*target = e
		return true
	}
	return false
}
