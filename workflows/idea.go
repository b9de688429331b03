// The run loop of IdeaWorkflow: its start, its handlers and the commit step that writes each
// change and adopts it (docs/write-path.md).

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
	"github.com/chorus-dev/chorus/vocab"
)

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
		w.gateKeeper().register(ctx, recent, RequestIdeaGate, DecideIdeaGate),
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
				refusal = editRefusal(refusal)
			}
			return refusal
		}
		if refusal := w.adoptMove(ctx, err); refusal != nil {
			return refusal
		}
		if err = diverged(ctx, vocab.EntityIdea, err); isChorusError(err) {
			return err
		}
		return fmt.Errorf("could not save the idea: %w", err)
	}
	n.Row = mark(wr)
	w.state = n
	w.publish(ctx)
	return nil
}

// ideaAssignmentChange is the change that sets the idea's status and assignee to n's.
func ideaAssignmentChange(n IdeaState) store.IdeaChange {
	return store.IdeaChange{Patch: store.IdeaPatch{Status: ptr(n.status()), Assignee: assignmentOf(n.Assignee)}}
}

// elaborationDepth and elaborationStatus patch the elaboration columns to n's ("" is NULL).
func elaborationDepth(n IdeaState) *store.Nullable[string] {
	return store.SetTo(nilIfBlank(n.ElaborationDepth))
}

func elaborationStatus(n IdeaState) *store.Nullable[string] {
	return store.SetTo(nilIfBlank(n.ElaborationStatus))
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
			ProjectUUIDKey.GetName(): s.ProjectUUID, EntityKey.GetName(): string(vocab.EntityIdea), StatusKey.GetName(): status,
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
		ProjectName: in.ProjectName, Title: strings.TrimSpace(in.Title), Status: string(vocab.IdeaOpen), CreatedBy: Party{Type: in.Actor.Type, UUID: in.Actor.UUID},
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

func emptyToNil(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

func (w *ideaWorkflow) claim(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.IdeaClaim)
	n.Status = string(to)
	n.Assignee = &Holder{Type: "agent", UUID: in.Actor.UUID, Name: in.Actor.Name, At: wr.At}
	change := ideaAssignmentChange(n)
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "assigned", assignedValue{AssigneeType: "agent", AssigneeUUID: in.Actor.UUID})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "idea_claimed",
		fmt.Sprintf("%s claimed idea %q", in.Actor.Name, n.Title), creatorOf(n), assigneeOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

// assign makes the target the assignee, as assigned by the actor: an open idea moves to
// elaborating like a claim, any other keeps its status. The assignee and the creator are
// notified (idea_claimed, the notification a claim sends).
func (w *ideaWorkflow) assign(ctx workflow.Context, in AssignIdeaInput) (IdeaResult, error) {
	if a := w.state.Assignee; a != nil && a.Type == in.TargetType && a.UUID == in.TargetUUID {
		return result(w.state), nil // already theirs: nothing changes
	}
	n, wr := w.next(ctx)
	if to, err := w.state.status().Next(vocab.IdeaClaim); err == nil {
		n.Status = string(to)
	}
	n.Assignee = &Holder{Type: in.TargetType, UUID: in.TargetUUID, Name: in.TargetName, At: wr.At, By: ptr(in.Actor.UUID)}
	change := ideaAssignmentChange(n)
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "assigned",
		assignedValue{AssigneeType: in.TargetType, AssigneeUUID: in.TargetUUID, AssignedBy: ptr(in.Actor.UUID)})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "idea_claimed",
		fmt.Sprintf("%s assigned idea %q to %s", in.Actor.Name, n.Title, in.TargetName), creatorOf(n), assigneeOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

func (w *ideaWorkflow) release(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	to, err := w.state.status().Next(vocab.IdeaRelease)
	if err != nil {
		return IdeaResult{}, Refuse(KindConflict, "Cannot release an Idea in status %s", w.state.Status)
	}
	n, wr := w.next(ctx)
	n.Status, n.Assignee, n.ElaborationDepth, n.ElaborationStatus = string(to), nil, "", ""
	change := ideaAssignmentChange(n)
	change.Patch.ElaborationDepth, change.Patch.ElaborationStatus = elaborationDepth(n), elaborationStatus(n)
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "released", nil)}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
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
				return IdeaResult{}, editRefusal(err)
			}
		}
		current = lineage.CurrentParent
	}
	n, wr := w.next(ctx)
	var patch store.IdeaPatch
	var changed []string
	var acts []store.Activity
	if in.SetParent && deref(in.ParentUUID) != deref(current) {
		patch.ParentUUID = store.SetTo(in.ParentUUID)
		acts = append(acts, w.activity(n, wr, in.Actor, "reparented", reparentedValue{FromParentUUID: current, ToParentUUID: in.ParentUUID}))
	}
	if in.Title != nil {
		n.Title = strings.TrimSpace(*in.Title)
		patch.Title, changed = &n.Title, append(changed, "title")
	}
	var mentions *store.MentionText
	if in.Content != nil {
		patch.Content, changed = store.SetTo(emptyToNil(in.Content)), append(changed, "content")
		// Only mentions the old content did not have are new (docs/rules.md §7.3).
		mentions = &store.MentionText{Seed: wr.ID + "/mentions", Text: *in.Content, PreviousColumn: "content",
			SourceType: "idea", SourceUUID: n.UUID, TargetType: "idea", TargetUUID: n.UUID, TargetTitle: n.Title,
			ProjectUUID: n.ProjectUUID, ActorType: in.Actor.Type, ActorUUID: in.Actor.UUID, ActorName: in.Actor.Name, At: wr.At}
	}
	if in.IsContainer != nil {
		n.IsContainer = *in.IsContainer
		patch.IsContainer = &n.IsContainer
	}
	change := store.IdeaChange{Patch: patch}
	if patch.ParentUUID != nil {
		change.Parent = in.ParentUUID
	}
	change.Activities = acts
	change.Mentions = mentions
	if len(changed) > 0 {
		change.Activities = append(change.Activities, w.activity(n, wr, in.Actor, "edited", editedValue{ChangedFields: changed}))
	}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

func (w *ideaWorkflow) startElaboration(ctx workflow.Context, in StartElaborationInput) (IdeaResult, error) {
	n, wr := w.next(ctx)
	number := len(n.Rounds) + 1
	appended := w.state.status() == vocab.IdeaElaborated
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
	change := store.IdeaChange{Patch: store.IdeaPatch{ElaborationDepth: elaborationDepth(n)}}
	if !appended {
		n.Status, n.ElaborationStatus = string(vocab.IdeaElaborating), "pending_answers"
		change.Patch.Status, change.Patch.ElaborationStatus = ptr(n.status()), elaborationStatus(n)
	}
	change.NewRound = &round
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_started",
		elaborationStartedValue{Depth: in.Depth, QuestionCount: len(in.Questions), RoundNumber: number})}
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
			change.Patch.ElaborationStatus = elaborationStatus(n)
		}
	}
	answered := 0
	for _, q := range r.Questions {
		if q.Answered {
			answered++
		}
	}
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_answered",
		elaborationAnsweredValue{RoundNumber: r.Number, AnsweredCount: answered})}
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

func (w *ideaWorkflow) validateElaboration(ctx workflow.Context, in IdeaCommand) (IdeaResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.IdeaValidate)
	n.Status, n.ElaborationStatus = string(to), "resolved"
	change := store.IdeaChange{Patch: store.IdeaPatch{Status: ptr(n.status()), ElaborationStatus: elaborationStatus(n)}}
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_resolved", elaborationResolvedValue{TotalRounds: len(n.Rounds)})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "elaboration_answered",
		fmt.Sprintf("%s resolved the elaboration of idea %q", in.Actor.Name, n.Title), assigneeOf(n), creatorOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

func (w *ideaWorkflow) skip(ctx workflow.Context, in SkipElaborationInput) (IdeaResult, error) {
	n, wr := w.next(ctx)
	to, _ := w.state.status().Next(vocab.IdeaSkipElaboration)
	n.Status, n.ElaborationDepth, n.ElaborationStatus = string(to), "minimal", "resolved"
	change := store.IdeaChange{Patch: store.IdeaPatch{Status: ptr(n.status()), ElaborationDepth: elaborationDepth(n),
		ElaborationStatus: elaborationStatus(n)}}
	change.Activities = []store.Activity{w.activity(n, wr, in.Actor, "elaboration_skipped", elaborationSkippedValue{Reason: in.Reason})}
	change.Notifications = []store.NotifySpec{w.notify(n, wr, in.Actor, "elaboration_answered",
		fmt.Sprintf("%s skipped the elaboration of idea %q", in.Actor.Name, n.Title), assigneeOf(n), creatorOf(n))}
	if err := w.commit(ctx, n, wr, change); err != nil {
		return IdeaResult{}, err
	}
	return result(w.state), nil
}

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
