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

// Update names of IdeaWorkflow, one per tool (SPEC 3.4, 2.1, 2.2).
const (
	UpdateCreateIdea          = "chorus_pm_create_idea"
	UpdateClaimIdea           = "chorus_claim_idea"
	UpdateReleaseIdea         = "chorus_release_idea"
	UpdateEditIdea            = "chorus_edit_idea"
	UpdateStartElaboration    = "chorus_pm_start_elaboration"
	UpdateAnswerElaboration   = "chorus_answer_elaboration"
	UpdateValidateElaboration = "chorus_pm_validate_elaboration"
	UpdateSkipElaboration     = "chorus_pm_skip_elaboration"
	UpdateDeleteIdea          = "chorus_admin_delete_idea"
)

// IdeaState is everything IdeaWorkflow knows; it is what continue-as-new carries.
type IdeaState struct {
	Created bool
	Deleted bool
	// Idea is the row as this workflow last wrote it. Content, parent and isContainer are data
	// the workflow writes but does not decide on; the database is their source of truth.
	Idea   store.Idea
	Rounds []RoundState
	// AssigneeName is the assignee's name, for what operators see.
	AssigneeName string
}

// RoundState is what the workflow keeps of an elaboration round.
type RoundState struct {
	UUID      string
	Number    int
	Status    string // pending_answers | answered
	Questions []QuestionState
}

// QuestionState is what the workflow keeps of a question.
type QuestionState struct {
	UUID      string
	ID        string
	Required  bool
	OptionIDs []string
	Answered  bool
}

func (s IdeaState) clone() IdeaState {
	c := s
	c.Rounds = make([]RoundState, len(s.Rounds))
	for i, r := range s.Rounds {
		r.Questions = slices.Clone(r.Questions)
		for j := range r.Questions {
			r.Questions[j].OptionIDs = slices.Clone(r.Questions[j].OptionIDs)
		}
		c.Rounds[i] = r
	}
	return c
}

func (s IdeaState) status() IdeaStatus { return IdeaStatus(s.Idea.Status) }

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
	i := s.Idea
	if i.AssigneeUUID == nil || i.AssigneeType == nil {
		return false
	}
	switch *i.AssigneeType {
	case "agent":
		return *i.AssigneeUUID == a.UUID
	case "user":
		return withOwner && a.OwnerUUID != "" && *i.AssigneeUUID == a.OwnerUUID
	}
	return false
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
	Title       string
	Content     *string
	ParentUUID  *string
	IsContainer bool
}

// IdeaCommand is the input of commands that need only the actor.
type IdeaCommand struct {
	Actor Actor
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
}

// ---- the workflow ----

type ideaWorkflow struct {
	state IdeaState
	mu    workflow.Mutex
	// abandoned: the create update failed, so this run holds no idea and ends.
	abandoned bool
}

// IdeaWorkflow is the long-lived workflow of one idea (id "idea/<uuid>"): it owns the idea's
// status, assignee and elaboration rounds, accepts one update per idea tool, and persists each
// accepted change (rows, activity, notifications) through an activity before returning.
func IdeaWorkflow(ctx workflow.Context, in IdeaRun) error {
	w := &ideaWorkflow{mu: workflow.NewMutex(ctx)}
	if in.State != nil {
		w.state = *in.State
	}
	if err := w.register(ctx); err != nil {
		return err
	}
	if w.state.Created {
		w.publish(ctx)
	}
	again, err := awaitContinueAsNew(ctx, func() bool { return w.state.Deleted || w.abandoned })
	if err != nil || !again {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, IdeaWorkflowName, IdeaRun{State: &w.state})
}

func (w *ideaWorkflow) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (IdeaState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The idea's workflow state: row, rounds and questions."}); err != nil {
		return err
	}
	return firstErr(
		registerUpdate(ctx, w.mu, UpdateCreateIdea, w.validateCreate, w.create),
		registerUpdate(ctx, w.mu, UpdateClaimIdea, w.validateClaim, w.claim),
		registerUpdate(ctx, w.mu, UpdateReleaseIdea, w.validateRelease, w.release),
		registerUpdate(ctx, w.mu, UpdateEditIdea, w.validateEdit, w.edit),
		registerUpdate(ctx, w.mu, UpdateStartElaboration, w.validateStart, w.startElaboration),
		registerUpdate(ctx, w.mu, UpdateAnswerElaboration, w.validateAnswer, w.answer),
		registerUpdate(ctx, w.mu, UpdateValidateElaboration, w.validateValidate, w.validateElaboration),
		registerUpdate(ctx, w.mu, UpdateSkipElaboration, w.validateSkip, w.skip),
		registerUpdate(ctx, w.mu, UpdateDeleteIdea, w.validateDelete, w.delete),
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
func (w *ideaWorkflow) exists() error {
	if !w.state.Created || w.state.Deleted {
		return notFoundIdea
	}
	return nil
}

// commit persists a change computed on next, then makes next the state and tells operators.
func (w *ideaWorkflow) commit(ctx workflow.Context, next IdeaState, change activities.IdeaChange) error {
	var a *activities.Activities
	change.UUID, change.CompanyUUID, change.Version = next.Idea.UUID, next.Idea.CompanyUUID, next.Idea.Version
	if err := persist(ctx, a.PersistIdea, change).Get(ctx, nil); err != nil {
		if isChorusError(err) {
			return err
		}
		return fmt.Errorf("could not save the idea: %w", err)
	}
	w.state = next
	w.publish(ctx)
	return nil
}

// next starts a change: a copy of the state with the version bumped and updatedAt set.
func (w *ideaWorkflow) next(ctx workflow.Context) (IdeaState, time.Time) {
	n := w.state.clone()
	now := stamp(ctx)
	n.Idea.Version++
	n.Idea.UpdatedAt = now
	return n, now
}

// activity builds an audit row of this idea for the change at version v.
func (w *ideaWorkflow) activity(n IdeaState, at time.Time, a Actor, action string, value any) activities.ActivityRecord {
	return activities.ActivityRecord{UUID: DerivedUUID("idea", n.Idea.UUID, strconv.FormatInt(n.Idea.Version, 10), action),
		CompanyUUID: n.Idea.CompanyUUID, ProjectUUID: n.Idea.ProjectUUID, TargetType: "idea", TargetUUID: n.Idea.UUID,
		ActorType: a.Type, ActorUUID: a.UUID, Action: action, Value: activities.MarshalValue(value), CreatedAt: at}
}

func (w *ideaWorkflow) notify(n IdeaState, a Actor, action, message string, to ...activities.Recipient) activities.Notify {
	return activities.Notify{Seed: DerivedUUID("idea", n.Idea.UUID, strconv.FormatInt(n.Idea.Version, 10), action),
		ProjectUUID: n.Idea.ProjectUUID, Action: action, EntityType: "idea", EntityUUID: n.Idea.UUID,
		EntityTitle: n.Idea.Title, Message: message, ActorType: a.Type, ActorUUID: a.UUID, ActorName: a.Name, Recipients: to}
}

// creator and assignee as notification recipients (SPEC D7: the creator is reached as what it is).
func creatorOf(i store.Idea) activities.Recipient {
	return activities.Recipient{Type: i.CreatedByType, UUID: i.CreatedByUUID}
}

func assigneeOf(i store.Idea) activities.Recipient {
	if i.AssigneeUUID == nil || i.AssigneeType == nil {
		return activities.Recipient{}
	}
	t := *i.AssigneeType
	if t == "agent_instance" {
		t = "agent"
	}
	return activities.Recipient{Type: t, UUID: *i.AssigneeUUID}
}

func result(s IdeaState) IdeaResult { return IdeaResult{UUID: s.Idea.UUID, Status: s.Idea.Status} }

// publish keeps what operators see current: search attributes, memo and current details.
func (w *ideaWorkflow) publish(ctx workflow.Context) {
	i := w.state.Idea
	assignee := ""
	if i.AssigneeUUID != nil {
		assignee = *i.AssigneeUUID
	}
	status := i.Status
	if w.state.Deleted {
		status = "deleted"
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		ProjectUUIDKey.ValueSet(i.ProjectUUID), EntityKey.ValueSet(string(EntityIdea)),
		StatusKey.ValueSet(status), AssigneeKey.ValueSet(assignee))
	_ = workflow.UpsertMemo(ctx, map[string]any{"title": i.Title})
	details := fmt.Sprintf("**Idea** %q is **%s**", i.Title, status)
	if i.AssigneeUUID != nil {
		name := w.state.AssigneeName
		if name == "" {
			name = assignee
		}
		details += ", assigned to " + name
	}
	if i.ElaborationStatus != nil {
		details += fmt.Sprintf("; elaboration %s (%d round(s), %d pending)", *i.ElaborationStatus,
			len(w.state.Rounds), len(w.state.pendingRounds()))
	}
	workflow.SetCurrentDetails(ctx, details)
}

// ---- create ----

func (w *ideaWorkflow) validateCreate(in CreateIdeaInput) error {
	if w.state.Created {
		return nil // a retried create returns the idea
	}
	if strings.TrimSpace(in.Title) == "" {
		return Refuse(KindInvalid, "Input validation error: title must not be blank")
	}
	return nil
}

func (w *ideaWorkflow) create(ctx workflow.Context, in CreateIdeaInput) (IdeaResult, error) {
	if w.state.Created {
		if w.state.Deleted {
			return IdeaResult{}, notFoundIdea
		}
		return result(w.state), nil
	}
	if in.ParentUUID != nil {
		if err := w.checkParent(ctx, in.Actor, in.UUID, in.ProjectUUID, *in.ParentUUID); err != nil {
			w.abandoned = true
			return IdeaResult{}, err
		}
	}
	now := stamp(ctx)
	n := IdeaState{Created: true, Idea: store.Idea{UUID: in.UUID, CompanyUUID: in.Actor.CompanyUUID, ProjectUUID: in.ProjectUUID,
		Title: strings.TrimSpace(in.Title), Content: emptyToNil(in.Content), Status: string(IdeaOpen), IsContainer: in.IsContainer,
		ParentUUID: in.ParentUUID, CreatedByType: in.Actor.Type, CreatedByUUID: in.Actor.UUID, Version: 1,
		CreatedAt: now, UpdatedAt: now}}
	row := n.Idea
	if err := w.commit(ctx, n, activities.IdeaChange{At: now, Insert: &row}); err != nil {
		w.abandoned = true // nothing was created: end rather than linger as an empty workflow
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// checkParent applies SPEC 4.5 to a proposed parent, reading the lineage from the database.
func (w *ideaWorkflow) checkParent(ctx workflow.Context, a Actor, ideaUUID, projectUUID, parentUUID string) error {
	if parentUUID == ideaUUID {
		return Refuse(KindInvalid, "An idea cannot be its own parent")
	}
	var acts *activities.Activities
	var refs activities.IdeaRefs
	err := read(ctx, acts.LookupIdeaRefs, a.CompanyUUID, ideaUUID, parentUUID).Get(ctx, &refs)
	switch {
	case err != nil:
		return fmt.Errorf("could not check the parent idea: %w", err)
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

func (w *ideaWorkflow) validateClaim(in IdeaCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	i := w.state.Idea
	if i.AssigneeUUID != nil {
		if w.state.isAssignee(in.Actor, false) {
			return Refuse(KindConflict, "Can only claim Ideas with open status: you already hold this idea (status %s)", i.Status)
		}
		return Refuse(KindConflict, "Can only claim Ideas with open status: this idea is %s and already assigned (%s %s). "+
			"Ask the assignee to release it, or pick another idea with chorus_get_available_ideas.", i.Status, deref(i.AssigneeType), deref(i.AssigneeUUID))
	}
	if w.state.status() == IdeaElaborated {
		return Refuse(KindConflict, "Cannot claim an elaborated Idea: its elaboration is resolved; create a proposal from it instead")
	}
	if _, err := w.state.status().Next(IdeaClaim); err != nil {
		return Refuse(KindConflict, "Can only claim Ideas with open status (current status: %s)", i.Status)
	}
	return nil
}

func (w *ideaWorkflow) claim(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(IdeaClaim)
	n.Idea.Status = string(to)
	n.Idea.AssigneeType, n.Idea.AssigneeUUID = ptr("agent"), ptr(in.Actor.UUID)
	n.Idea.AssignedAt, n.Idea.AssignedByUUID = &now, nil
	n.AssigneeName = in.Actor.Name
	change := activities.IdeaChange{At: now, Row: n.Idea,
		Columns:    []string{"status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid"},
		Activities: []activities.ActivityRecord{w.activity(n, now, in.Actor, "assigned", map[string]string{"assigneeType": "agent", "assigneeUuid": in.Actor.UUID})},
		Notifications: []activities.Notify{w.notify(n, in.Actor, "idea_claimed",
			fmt.Sprintf("%s claimed idea %q", in.Actor.Name, n.Idea.Title), creatorOf(n.Idea), assigneeOf(n.Idea))},
	}
	if err := w.commit(ctx, n, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

func (w *ideaWorkflow) validateRelease(in IdeaCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	if !w.state.isAssignee(in.Actor, true) {
		if w.state.Idea.AssigneeUUID == nil {
			return Refuse(KindForbidden, "Only the assignee can release a claimed Idea: this idea is not claimed (status %s)", w.state.Idea.Status)
		}
		return Refuse(KindForbidden, "Only the assignee can release a claimed Idea (assignee: %s %s)",
			deref(w.state.Idea.AssigneeType), deref(w.state.Idea.AssigneeUUID))
	}
	if w.state.status() == IdeaElaborated {
		return Refuse(KindConflict, "Cannot release an elaborated Idea: its elaboration is resolved and it stays with its assignee")
	}
	return nil
}

func (w *ideaWorkflow) release(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, now := w.next(ctx)
	to, err := w.state.status().Next(IdeaRelease)
	if err != nil {
		return IdeaResult{}, Refuse(KindConflict, "Cannot release an Idea in status %s", w.state.Idea.Status)
	}
	n.Idea.Status = string(to)
	n.Idea.AssigneeType, n.Idea.AssigneeUUID, n.Idea.AssignedAt, n.Idea.AssignedByUUID = nil, nil, nil, nil
	n.Idea.ElaborationDepth, n.Idea.ElaborationStatus = nil, nil
	n.AssigneeName = ""
	change := activities.IdeaChange{At: now, Row: n.Idea,
		Columns: []string{"status", "assignee_type", "assignee_uuid", "assigned_at", "assigned_by_uuid",
			"elaboration_depth", "elaboration_status"},
		Activities: []activities.ActivityRecord{w.activity(n, now, in.Actor, "released", nil)},
	}
	if err := w.commit(ctx, n, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// ---- edit ----

func (w *ideaWorkflow) validateEdit(in EditIdeaInput) error {
	if err := w.exists(); err != nil {
		return err
	}
	if in.Title == nil && in.Content == nil && !in.SetParent && in.IsContainer == nil {
		return Refuse(KindInvalid, "Provide at least one of title, content, parentUuid, or isContainer to edit.")
	}
	if in.Title != nil && strings.TrimSpace(*in.Title) == "" {
		return Refuse(KindInvalid, "Failed to edit Idea: title must not be blank")
	}
	if in.SetParent && in.ParentUUID != nil && *in.ParentUUID == w.state.Idea.UUID {
		return Refuse(KindInvalid, "Failed to edit Idea: An idea cannot be its own parent")
	}
	return nil
}

func (w *ideaWorkflow) edit(ctx workflow.Context, in EditIdeaInput) (IdeaResult, error) {
	if in.SetParent && in.ParentUUID != nil {
		if err := w.checkParent(ctx, in.Actor, w.state.Idea.UUID, w.state.Idea.ProjectUUID, *in.ParentUUID); err != nil {
			var e *Error
			if asError(err, &e) {
				return IdeaResult{}, Refuse(e.Kind, "Failed to edit Idea: %s", e.Message)
			}
			return IdeaResult{}, err
		}
	}
	n, now := w.next(ctx)
	var cols, changed []string
	var acts []activities.ActivityRecord
	if in.SetParent {
		from := w.state.Idea.ParentUUID
		if deref(from) != deref(in.ParentUUID) {
			n.Idea.ParentUUID = in.ParentUUID
			cols = append(cols, "parent_uuid")
			acts = append(acts, w.activity(n, now, in.Actor, "reparented", map[string]*string{"fromParentUuid": from, "toParentUuid": in.ParentUUID}))
		}
	}
	if in.Title != nil {
		n.Idea.Title = strings.TrimSpace(*in.Title)
		cols, changed = append(cols, "title"), append(changed, "title")
	}
	if in.Content != nil {
		n.Idea.Content = emptyToNil(in.Content)
		cols, changed = append(cols, "content"), append(changed, "content")
	}
	if in.IsContainer != nil {
		n.Idea.IsContainer = *in.IsContainer
		cols = append(cols, "is_container")
	}
	if len(changed) > 0 {
		acts = append(acts, w.activity(n, now, in.Actor, "edited", map[string][]string{"changedFields": changed}))
	}
	if err := w.commit(ctx, n, activities.IdeaChange{At: now, Row: n.Idea, Columns: cols, Activities: acts}); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// ---- elaboration ----

// maxRounds and the question limits of SPEC 2.2.
const (
	maxRounds       = 10
	maxQuestions    = 15
	minOptions      = 2
	maxOptions      = 5
	startErrPrefix  = "Failed to start elaboration: "
	answerErrPrefix = "Failed to answer elaboration: "
)

func (w *ideaWorkflow) validateStart(in StartElaborationInput) error {
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
	if err := w.exists(); err != nil {
		return err
	}
	// 3. assignee
	if !w.state.isAssignee(in.Actor, false) {
		return fail(KindForbidden, "Only the assigned agent can start elaboration (claim the idea first with chorus_claim_idea)")
	}
	// 4. status
	if _, err := w.state.status().Next(IdeaStartElaboration); err != nil {
		return fail(KindConflict, "Cannot start elaboration from status '%s'. Idea must be in 'elaborating' or 'elaborated' status (claim it first).", w.state.Idea.Status)
	}
	// 5. round cap
	if len(w.state.Rounds)+1 > maxRounds {
		return fail(KindConflict, "Maximum %d elaboration rounds per Idea", maxRounds)
	}
	return nil
}

func (w *ideaWorkflow) startElaboration(ctx workflow.Context, in StartElaborationInput) (IdeaResult, error) {
	n, now := w.next(ctx)
	number := len(n.Rounds) + 1
	appended := w.state.status() == IdeaElaborated
	round := store.ElaborationRound{UUID: DerivedUUID("idea", n.Idea.UUID, "round", strconv.Itoa(number)),
		CompanyUUID: n.Idea.CompanyUUID, IdeaUUID: n.Idea.UUID, RoundNumber: number, Status: "pending_answers",
		IsAppended: appended, CreatedByType: in.Actor.Type, CreatedByUUID: in.Actor.UUID, CreatedAt: now, UpdatedAt: now}
	rs := RoundState{UUID: round.UUID, Number: number, Status: round.Status}
	for i, q := range in.Questions {
		required := q.Required == nil || *q.Required
		row := store.ElaborationQuestion{UUID: DerivedUUID("round", round.UUID, "question", q.ID), RoundUUID: round.UUID,
			QuestionID: q.ID, Text: q.Text, Category: q.Category, Options: q.Options, Required: required, SortOrder: i}
		round.Questions = append(round.Questions, row)
		qs := QuestionState{UUID: row.UUID, ID: q.ID, Required: required}
		for _, o := range q.Options {
			qs.OptionIDs = append(qs.OptionIDs, o.ID)
		}
		rs.Questions = append(rs.Questions, qs)
	}
	n.Rounds = append(n.Rounds, rs)
	n.Idea.ElaborationDepth = &in.Depth
	cols := []string{"elaboration_depth"}
	if !appended {
		n.Idea.Status = string(IdeaElaborating)
		n.Idea.ElaborationStatus = ptr("pending_answers")
		cols = append(cols, "status", "elaboration_status")
	}
	change := activities.IdeaChange{At: now, Row: n.Idea, Columns: cols, NewRound: &round,
		Activities: []activities.ActivityRecord{w.activity(n, now, in.Actor, "elaboration_started",
			map[string]any{"depth": in.Depth, "questionCount": len(in.Questions), "roundNumber": number})},
		Notifications: []activities.Notify{w.notify(n, in.Actor, "elaboration_requested",
			fmt.Sprintf("%s requested elaboration on idea %q", in.Actor.Name, n.Idea.Title),
			creatorOf(n.Idea), activities.Recipient{Type: "user", UUID: in.Actor.OwnerUUID})},
	}
	if err := w.commit(ctx, n, change); err != nil {
		return IdeaResult{}, err
	}
	r := result(w.state)
	r.RoundUUID, r.RoundNumber = round.UUID, number
	return r, nil
}

// locateRound finds the round an answer call targets (SPEC 2.2).
func (w *ideaWorkflow) locateRound(in AnswerElaborationInput) (*RoundState, error) {
	if in.RoundUUID != nil {
		for i := range w.state.Rounds {
			if w.state.Rounds[i].UUID == *in.RoundUUID {
				r := &w.state.Rounds[i]
				if r.Status != "pending_answers" {
					return nil, Refuse(KindConflict, answerErrPrefix+"Round is '%s', expected 'pending_answers' (round %d is already answered; "+
						"ask for a new round with chorus_pm_start_elaboration)", r.Status, r.Number)
				}
				return r, nil
			}
		}
		return nil, Refuse(KindNotFound, answerErrPrefix+"Elaboration round not found")
	}
	pending := w.state.pendingRounds()
	switch len(pending) {
	case 0:
		return nil, Refuse(KindConflict, answerErrPrefix+"no active round to answer (every round of this idea is answered)")
	case 1:
		return pending[0], nil
	}
	return nil, Refuse(KindInvalid, answerErrPrefix+"multiple active rounds; specify roundUuid (see chorus_get_elaboration)")
}

func (w *ideaWorkflow) validateAnswer(in AnswerElaborationInput) error {
	if err := w.exists(); err != nil {
		return err
	}
	r, err := w.locateRound(in)
	if err != nil {
		return err
	}
	if len(in.Answers) == 0 {
		return Refuse(KindInvalid, answerErrPrefix+"answers must contain at least one answer")
	}
	for _, a := range in.Answers {
		qi := slices.IndexFunc(r.Questions, func(q QuestionState) bool { return q.ID == a.QuestionID })
		if qi < 0 {
			return Refuse(KindInvalid, answerErrPrefix+"Question '%s' not found in round", a.QuestionID)
		}
		if a.SelectedOptionID != nil {
			if !slices.Contains(r.Questions[qi].OptionIDs, *a.SelectedOptionID) {
				return Refuse(KindInvalid, answerErrPrefix+"Invalid option '%s' for question '%s' (options: %s)",
					*a.SelectedOptionID, a.QuestionID, strings.Join(r.Questions[qi].OptionIDs, ", "))
			}
		} else if a.CustomText == nil || strings.TrimSpace(*a.CustomText) == "" {
			return Refuse(KindInvalid, answerErrPrefix+"Question '%s': custom text is required when no option is selected", a.QuestionID)
		}
	}
	return nil
}

func (w *ideaWorkflow) answer(ctx workflow.Context, in AnswerElaborationInput) (IdeaResult, error) {
	n, now := w.next(ctx)
	cur, _ := w.locateRound(in)
	ri := slices.IndexFunc(n.Rounds, func(r RoundState) bool { return r.UUID == cur.UUID })
	r := &n.Rounds[ri]
	var rows []store.ElaborationQuestion
	for _, a := range in.Answers {
		qi := slices.IndexFunc(r.Questions, func(q QuestionState) bool { return q.ID == a.QuestionID })
		r.Questions[qi].Answered = true
		custom := a.CustomText
		if custom != nil && strings.TrimSpace(*custom) == "" {
			custom = nil
		}
		rows = append(rows, store.ElaborationQuestion{UUID: r.Questions[qi].UUID, SelectedOptionID: a.SelectedOptionID,
			CustomText: custom, AnsweredAt: &now, AnsweredByType: ptr(in.Actor.Type), AnsweredByUUID: ptr(in.Actor.UUID)})
	}
	change := activities.IdeaChange{At: now, Answers: rows}
	complete := !slices.ContainsFunc(r.Questions, func(q QuestionState) bool { return q.Required && !q.Answered })
	if complete {
		r.Status = "answered"
		change.RoundStatus = map[string]string{r.UUID: "answered"}
		if deref(n.Idea.ElaborationStatus) != "resolved" {
			n.Idea.ElaborationStatus = ptr("validating")
			change.Columns = []string{"elaboration_status"}
		}
	}
	change.Row = n.Idea
	answered := 0
	for _, q := range r.Questions {
		if q.Answered {
			answered++
		}
	}
	change.Activities = []activities.ActivityRecord{w.activity(n, now, in.Actor, "elaboration_answered",
		map[string]int{"roundNumber": r.Number, "answeredCount": answered})}
	change.Notifications = []activities.Notify{w.notify(n, in.Actor, "elaboration_answered",
		fmt.Sprintf("%s answered elaboration questions for idea %q", in.Actor.Name, n.Idea.Title),
		assigneeOf(n.Idea), creatorOf(n.Idea))}
	if err := w.commit(ctx, n, change); err != nil {
		return IdeaResult{}, err
	}
	res := result(w.state)
	res.RoundUUID, res.RoundNumber = r.UUID, r.Number
	return res, nil
}

const resolveErrPrefix = "Failed to resolve elaboration: "

func (w *ideaWorkflow) validateValidate(in IdeaCommand) error {
	if err := w.exists(); err != nil {
		return err
	}
	if !w.state.isAssignee(in.Actor, false) {
		return Refuse(KindForbidden, resolveErrPrefix+"Only the assigned agent can resolve elaboration")
	}
	if len(w.state.Rounds) == 0 {
		return Refuse(KindConflict, resolveErrPrefix+"Cannot resolve: the Idea has no elaboration rounds (start one with "+
			"chorus_pm_start_elaboration, or skip elaboration with chorus_pm_skip_elaboration)")
	}
	if p := len(w.state.pendingRounds()); p > 0 {
		return Refuse(KindConflict, resolveErrPrefix+"Cannot resolve: %d round(s) still have unanswered questions "+
			"(answer them with chorus_answer_elaboration first)", p)
	}
	return nil
}

func (w *ideaWorkflow) validateElaboration(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(IdeaValidate)
	n.Idea.Status, n.Idea.ElaborationStatus = string(to), ptr("resolved")
	change := activities.IdeaChange{At: now, Row: n.Idea, Columns: []string{"status", "elaboration_status"},
		Activities: []activities.ActivityRecord{w.activity(n, now, in.Actor, "elaboration_resolved", map[string]int{"totalRounds": len(n.Rounds)})},
		Notifications: []activities.Notify{w.notify(n, in.Actor, "elaboration_answered",
			fmt.Sprintf("%s resolved the elaboration of idea %q", in.Actor.Name, n.Idea.Title), assigneeOf(n.Idea), creatorOf(n.Idea))},
	}
	if err := w.commit(ctx, n, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

const skipErrPrefix = "Failed to skip elaboration: "

func (w *ideaWorkflow) validateSkip(in SkipElaborationInput) error {
	if err := w.exists(); err != nil {
		return err
	}
	if !w.state.isAssignee(in.Actor, false) {
		return Refuse(KindForbidden, skipErrPrefix+"Only the assigned agent can skip elaboration (claim the idea first)")
	}
	if _, err := w.state.status().Next(IdeaSkipElaboration); err != nil {
		return Refuse(KindConflict, skipErrPrefix+"Cannot skip elaboration from status '%s' (only an elaborating idea can skip)", w.state.Idea.Status)
	}
	return nil
}

func (w *ideaWorkflow) skip(ctx workflow.Context, in SkipElaborationInput) (IdeaResult, error) {
	n, now := w.next(ctx)
	to, _ := w.state.status().Next(IdeaSkipElaboration)
	n.Idea.Status, n.Idea.ElaborationDepth, n.Idea.ElaborationStatus = string(to), ptr("minimal"), ptr("resolved")
	change := activities.IdeaChange{At: now, Row: n.Idea, Columns: []string{"status", "elaboration_depth", "elaboration_status"},
		Activities: []activities.ActivityRecord{w.activity(n, now, in.Actor, "elaboration_skipped", map[string]string{"reason": in.Reason})},
		Notifications: []activities.Notify{w.notify(n, in.Actor, "elaboration_answered",
			fmt.Sprintf("%s skipped the elaboration of idea %q", in.Actor.Name, n.Idea.Title), assigneeOf(n.Idea), creatorOf(n.Idea))},
	}
	if err := w.commit(ctx, n, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// ---- delete ----

func (w *ideaWorkflow) validateDelete(in IdeaCommand) error { return w.exists() }

func (w *ideaWorkflow) delete(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, now := w.next(ctx)
	n.Deleted = true
	if err := w.commit(ctx, n, activities.IdeaChange{At: now, Delete: true}); err != nil {
		return IdeaResult{}, err
	}
	return IdeaResult{UUID: n.Idea.UUID, Status: "deleted"}, nil
}

// asError is errors.As for *Error, also unwrapping Temporal application errors of a Chorus kind.
func asError(err error, target **Error) bool {
	if e, ok := FromTemporal(err).(*Error); ok {
		*target = e
		return true
	}
	return false
}
