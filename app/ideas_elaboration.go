package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// Elaboration of an idea (docs/rules.md §4.4, §2.2): rounds of questions and answers, each an
// update on the idea's workflow.

// roundUpdate is ideaUpdate for the elaboration updates, returning the round they touched.
func roundUpdate[In any](ctx context.Context, a *App, r Request, ideaUUID string, cmd workflows.Command[In, workflows.IdeaResult],
	in In) (store.ElaborationRound, error) {
	res, err := ideaUpdate(ctx, a, r, ideaUUID, cmd, in)
	if err != nil {
		return store.ElaborationRound{}, err
	}
	round, err := a.Store.Round(ctx, res.RoundUUID)
	if err != nil {
		return store.ElaborationRound{}, err
	}
	return *round, nil
}

// StartElaborationInput is a round of questions on an idea.
type StartElaborationInput struct {
	IdeaUUID  string
	Depth     string
	Questions []workflows.QuestionInput
}

// StartElaboration asks a round of clarifying questions on an idea the caller holds.
func (a *App) StartElaboration(ctx context.Context, r Request, in StartElaborationInput) (store.ElaborationRound, error) {
	return roundUpdate(ctx, a, r, in.IdeaUUID, workflows.StartElaboration,
		workflows.StartElaborationInput{Actor: r.Who.Actor(), Depth: in.Depth, Questions: in.Questions})
}

// AnswerElaborationInput answers a pending round (RoundUUID nil: the one pending round).
type AnswerElaborationInput struct {
	IdeaUUID  string
	RoundUUID *string
	Answers   []workflows.AnswerInput
}

// AnswerElaboration answers an idea's pending elaboration round; one invalid answer refuses them all.
func (a *App) AnswerElaboration(ctx context.Context, r Request, in AnswerElaborationInput) (store.ElaborationRound, error) {
	return roundUpdate(ctx, a, r, in.IdeaUUID, workflows.AnswerElaboration,
		workflows.AnswerElaborationInput{Actor: r.Who.Actor(), RoundUUID: in.RoundUUID, Answers: in.Answers})
}

// ValidateElaboration resolves the elaboration of an idea the caller holds once no round is
// pending, and reads the elaboration back.
//
// In a project whose gate policy holds resolving, an agent's call waits for a person instead
// (the result's Gate; docs/rules.md §6.7).
func (a *App) ValidateElaboration(ctx context.Context, r Request, ideaUUID string) (IdeaElaboration, error) {
	i, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessEditor)
	if err != nil {
		return IdeaElaboration{}, err
	}
	in := workflows.IdeaCommand{Actor: r.Who.Actor()}
	gate, err := a.holdForPerson(ctx, r, gated{Entity: vocab.EntityIdea, UUID: i.UUID, ProjectUUID: i.ProjectUUID,
		Command: vocab.GateResolveElaboration, Input: in, Creator: i.CreatedByUUID})
	if err != nil {
		return IdeaElaboration{}, err
	}
	if gate == nil {
		if _, err := ideaUpdate(ctx, a, r, ideaUUID, workflows.ValidateElaboration, in); err != nil {
			return IdeaElaboration{}, err
		}
	}
	e, err := a.Elaboration(ctx, r, ideaUUID)
	e.Gate = gate
	return e, err
}

// SkipElaboration resolves the elaboration of an idea the caller holds without questions.
func (a *App) SkipElaboration(ctx context.Context, r Request, ideaUUID, reason string) error {
	_, err := ideaUpdate(ctx, a, r, ideaUUID, workflows.SkipElaboration,
		workflows.SkipElaborationInput{Actor: r.Who.Actor(), Reason: reason})
	return err
}
