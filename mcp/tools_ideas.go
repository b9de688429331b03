package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// Idea and elaboration tools (docs/rules.md §4.3, §4.4, §2.1, §2.2). Reads come from the store;
// every change is an update on the idea's workflow.

// IdeaIn names an idea.
type IdeaIn struct {
	IdeaUUID UUID `json:"ideaUuid"`
}

// ideaOut turns an idea use case's answer into the full Idea JSON.
func ideaOut(ctx context.Context, d *Deps) func(*store.IdeaDetail, error) (IdeaView, error) {
	return func(det *store.IdeaDetail, err error) (IdeaView, error) {
		if err != nil {
			return IdeaView{}, err
		}
		return ideaView(ctx, d.Store.NewNamer(), det), nil
	}
}

// elaborationOut turns an elaboration use case's answer into the tool's.
func elaborationOut(e app.IdeaElaboration, err error) (ElaborationView, error) {
	if err != nil {
		return ElaborationView{}, err
	}
	return elaborationView(e.Idea, e.Rounds), nil
}

// roundOut turns a round use case's answer into the tool's.
func roundOut(r store.ElaborationRound, err error) (RoundView, error) {
	if err != nil {
		return RoundView{}, err
	}
	return roundView(r), nil
}

// ---- reads ----

// GetIdeasIn is chorus_get_ideas' input.
type GetIdeasIn struct {
	ProjectUUID UUID   `json:"projectUuid"`
	Status      string `json:"status,omitempty" chorus:"enum=open|elaborating|elaborated|proposal_created|completed|closed"`
	PageIn
}

// IdeaListRow is one row of chorus_get_ideas.
type IdeaListRow struct {
	UUID        string    `json:"uuid"`
	Title       string    `json:"title"`
	Status      string    `json:"status"`
	IsContainer bool      `json:"isContainer"`
	ParentUUID  *string   `json:"parentUuid"`
	ChildCount  int       `json:"childCount"`
	ReportCount int       `json:"reportCount"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// IdeaList is chorus_get_ideas' result.
type IdeaList struct {
	Ideas []IdeaListRow `json:"ideas"`
	Meta
}

var getIdeas = tool[GetIdeasIn, IdeaList]{
	Name: "chorus_get_ideas", Title: "List ideas", Toolset: tsIdeas, Perm: perm.Public, Effect: reads,
	Desc: "List a project's ideas, newest first, with status, parent and counts.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetIdeasIn) (IdeaList, error) {
		page, size, offset := in.window(20)
		rows, total, err := d.app().ListIdeas(ctx, call.Request, string(in.ProjectUUID), in.Status, size, offset)
		if err != nil {
			return IdeaList{}, err
		}
		out := make([]IdeaListRow, len(rows))
		for i, r := range rows {
			out[i] = IdeaListRow{UUID: r.UUID, Title: clip(r.Title), Status: string(r.Status), IsContainer: r.IsContainer,
				ParentUUID: r.ParentUUID, ChildCount: r.ChildCount, ReportCount: r.ReportCount, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		}
		wrap := func(r []IdeaListRow) any {
			return IdeaList{Ideas: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(out, wrap)).(IdeaList), nil
	},
}

var getIdea = tool[IdeaIn, IdeaView]{
	Name: "chorus_get_idea", Title: "Get an idea", Toolset: tsCore, Perm: perm.Public, Effect: reads,
	Desc: "Get an idea: content, status, progress, assignee, elaboration state, parent, children, reports.",
	Run: func(ctx context.Context, d *Deps, call *Call, in IdeaIn) (IdeaView, error) {
		return ideaOut(ctx, d)(d.app().GetIdea(ctx, call.Request, string(in.IdeaUUID)))
	},
}

// ProjectIn names a project.
type ProjectIn struct {
	ProjectUUID UUID `json:"projectUuid"`
}

// AvailableIdeaRow is one row of chorus_get_available_ideas.
type AvailableIdeaRow struct {
	UUID       string    `json:"uuid"`
	Title      string    `json:"title"`
	Status     string    `json:"status"`
	ParentUUID *string   `json:"parentUuid"`
	CreatedAt  time.Time `json:"createdAt"`
}

// AvailableIdeas is chorus_get_available_ideas' result.
type AvailableIdeas struct {
	Ideas []AvailableIdeaRow `json:"ideas"`
	Meta
}

var getAvailableIdeas = tool[ProjectIn, AvailableIdeas]{
	Name: "chorus_get_available_ideas", Title: "Ideas open to claim", Toolset: tsIdeas, Perm: perm.Public, Effect: reads,
	Desc: "List up to 50 open ideas of a project that you can claim.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ProjectIn) (AvailableIdeas, error) {
		ideas, err := d.app().AvailableIdeas(ctx, call.Request, string(in.ProjectUUID))
		if err != nil {
			return AvailableIdeas{}, err
		}
		rows := make([]AvailableIdeaRow, len(ideas))
		for i, x := range ideas {
			rows[i] = AvailableIdeaRow{UUID: x.UUID, Title: clip(x.Title), Status: string(x.Status), ParentUUID: x.ParentUUID, CreatedAt: x.CreatedAt}
		}
		wrap := func(r []AvailableIdeaRow) any {
			return AvailableIdeas{Ideas: r, Meta: Meta{Returned: len(r), Page: 1, PageSize: 100, Total: len(r)}}
		}
		return wrap(fit(rows, wrap)).(AvailableIdeas), nil
	},
}

var getElaboration = tool[IdeaIn, ElaborationView]{
	Name: "chorus_get_elaboration", Title: "Get elaboration", Toolset: tsIdeas, Perm: perm.Public, Effect: reads,
	Desc: "Get an idea's elaboration rounds with questions and answers.",
	Run: func(ctx context.Context, d *Deps, call *Call, in IdeaIn) (ElaborationView, error) {
		return elaborationOut(d.app().Elaboration(ctx, call.Request, string(in.IdeaUUID)))
	},
}

// ---- create / claim / release / edit / delete ----

// CreateIdeaIn is chorus_pm_create_idea's input.
type CreateIdeaIn struct {
	ProjectUUID UUID          `json:"projectUuid"`
	Title       string        `json:"title" chorus:"minLength=1"`
	Content     *string       `json:"content,omitempty" jsonschema:"markdown"`
	ParentUUID  *UUID         `json:"parentUuid,omitempty"`
	IsContainer bool          `json:"isContainer,omitempty" jsonschema:"a theme groups child ideas and cannot be a proposal input"`
	References  []ReferenceIn `json:"references,omitempty" jsonschema:"links to attach; one that is invalid is reported in referenceErrors" chorus:"maxItems=50"`
}

// CreatedIdea is chorus_pm_create_idea's result.
type CreatedIdea struct {
	UUID       string  `json:"uuid"`
	Title      string  `json:"title"`
	ParentUUID *string `json:"parentUuid"`
	Status     string  `json:"status"`
	// ReferenceErrors lists the inline references that were not added (only when there are any).
	ReferenceErrors []ReferenceError `json:"referenceErrors,omitempty"`
}

var pmCreateIdea = tool[CreateIdeaIn, CreatedIdea]{
	Name: "chorus_pm_create_idea", Title: "Create an idea", Toolset: tsIdeas, Perm: perm.IdeaWrite, Effect: writes,
	Desc: "Create an open idea in a project, optionally under a parent or as a theme grouping child ideas.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateIdeaIn) (CreatedIdea, error) {
		res, err := d.app().CreateIdea(ctx, call.Request, app.CreateIdeaInput{ProjectUUID: string(in.ProjectUUID), Title: in.Title,
			Content: in.Content, ParentUUID: (*string)(in.ParentUUID), IsContainer: in.IsContainer, References: referenceInputs(in.References)})
		if err != nil {
			return CreatedIdea{}, err
		}
		return CreatedIdea{UUID: res.UUID, Title: res.Title, ParentUUID: res.ParentUUID, Status: res.Status,
			ReferenceErrors: referenceErrors(res.ReferenceErrors)}, nil
	},
}

var claimIdea = tool[IdeaIn, IdeaView]{
	Name: "chorus_claim_idea", Title: "Claim an idea", Toolset: tsIdeas, Perm: perm.IdeaWrite, Effect: writes,
	Desc: "Claim an open idea; it moves to elaborating. Refused when someone holds it.",
	Run: func(ctx context.Context, d *Deps, call *Call, in IdeaIn) (IdeaView, error) {
		return ideaOut(ctx, d)(d.app().ClaimIdea(ctx, call.Request, string(in.IdeaUUID)))
	},
}

// AssignIdeaIn is chorus_pm_assign_idea's input.
type AssignIdeaIn struct {
	IdeaUUID     UUID   `json:"ideaUuid"`
	AssigneeType string `json:"assigneeType" chorus:"enum=agent|user"`
	AssigneeUUID UUID   `json:"assigneeUuid"`
}

var pmAssignIdea = tool[AssignIdeaIn, IdeaView]{
	Name: "chorus_pm_assign_idea", Title: "Assign an idea", Toolset: tsIdeas, Perm: perm.IdeaAdmin, Effect: writes, Idempotent: true,
	Desc: "Give an idea to an agent (with idea:write) or a user of your company who can edit its project; " +
		"an open idea moves to elaborating and the assignee is notified.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AssignIdeaIn) (IdeaView, error) {
		return ideaOut(ctx, d)(d.app().AssignIdea(ctx, call.Request, app.AssignIdeaInput{IdeaUUID: string(in.IdeaUUID),
			AssigneeType: in.AssigneeType, AssigneeUUID: string(in.AssigneeUUID)}))
	},
}

var releaseIdea = tool[IdeaIn, IdeaView]{
	Name: "chorus_release_idea", Title: "Release an idea", Toolset: tsIdeas, Perm: perm.IdeaWrite, Effect: writes,
	Desc: "Give up an idea you hold. Refused once its elaboration is resolved.",
	Run: func(ctx context.Context, d *Deps, call *Call, in IdeaIn) (IdeaView, error) {
		return ideaOut(ctx, d)(d.app().ReleaseIdea(ctx, call.Request, string(in.IdeaUUID)))
	},
}

// EditIdeaIn is chorus_edit_idea's input.
type EditIdeaIn struct {
	IdeaUUID     UUID    `json:"ideaUuid"`
	Title        *string `json:"title,omitempty"`
	Content      *string `json:"content,omitempty" jsonschema:"an empty string clears it"`
	ParentUUID   *UUID   `json:"parentUuid,omitempty"`
	DetachParent bool    `json:"detachParent,omitempty" jsonschema:"true: make the idea top-level"`
	IsContainer  *bool   `json:"isContainer,omitempty"`
}

// EditedIdea is chorus_edit_idea's result.
type EditedIdea struct {
	UUID       string  `json:"uuid"`
	Title      string  `json:"title"`
	ParentUUID *string `json:"parentUuid"`
}

var editIdea = tool[EditIdeaIn, EditedIdea]{
	Name: "chorus_edit_idea", Title: "Edit an idea", Toolset: tsIdeas, Perm: perm.IdeaWrite, Effect: writes, Idempotent: true,
	Desc: "Change an idea's title, content, parent or theme flag. The parent must be in the same project, not a " +
		"descendant.",
	Run: func(ctx context.Context, d *Deps, call *Call, in EditIdeaIn) (EditedIdea, error) {
		i, err := d.app().EditIdea(ctx, call.Request, app.EditIdeaInput{IdeaUUID: string(in.IdeaUUID), Title: in.Title,
			Content: in.Content, ParentUUID: (*string)(in.ParentUUID), DetachParent: in.DetachParent, IsContainer: in.IsContainer})
		if err != nil {
			return EditedIdea{}, err
		}
		return EditedIdea{UUID: i.UUID, Title: i.Title, ParentUUID: i.ParentUUID}, nil
	},
}

var adminDeleteIdea = tool[IdeaIn, textResult]{
	Name: "chorus_admin_delete_idea", Title: "Delete an idea", Toolset: tsIdeas, Perm: perm.IdeaAdmin, Effect: destroys,
	Desc: "Delete an idea and its elaboration; its children become top-level.",
	Run: func(ctx context.Context, d *Deps, call *Call, in IdeaIn) (textResult, error) {
		if err := d.app().DeleteIdea(ctx, call.Request, string(in.IdeaUUID)); err != nil {
			return "", err
		}
		return textResult(fmt.Sprintf("Idea %s deleted", in.IdeaUUID)), nil
	},
}

// ---- elaboration ----

// OptionIn is one option of a question.
type OptionIn struct {
	ID          string  `json:"id"`
	Label       string  `json:"label"`
	Description *string `json:"description,omitempty"`
}

// QuestionIn is one question of chorus_pm_start_elaboration.
type QuestionIn struct {
	ID       string     `json:"id"`
	Text     string     `json:"text"`
	Category string     `json:"category" chorus:"enum=functional|non_functional|business_context|technical_context|user_scenario|scope"`
	Options  []OptionIn `json:"options"`
	Required *bool      `json:"required,omitempty" jsonschema:"default true"`
}

// StartElaborationIn is chorus_pm_start_elaboration's input.
type StartElaborationIn struct {
	IdeaUUID  UUID         `json:"ideaUuid"`
	Depth     string       `json:"depth" chorus:"enum=minimal|standard|comprehensive"`
	Questions []QuestionIn `json:"questions"`
}

var pmStartElaboration = tool[StartElaborationIn, RoundView]{
	Name: "chorus_pm_start_elaboration", Title: "Start elaboration", Toolset: tsIdeas, Perm: perm.IdeaWrite, Effect: writes,
	Desc: "Ask 1-15 clarifying questions (2-5 options each) on an idea you hold. Refused before you claim it, " +
		"or after 10 rounds.",
	Run: func(ctx context.Context, d *Deps, call *Call, in StartElaborationIn) (RoundView, error) {
		cmd := app.StartElaborationInput{IdeaUUID: string(in.IdeaUUID), Depth: in.Depth}
		for _, q := range in.Questions {
			qi := workflows.QuestionInput{ID: q.ID, Text: q.Text, Category: q.Category, Required: q.Required}
			for _, o := range q.Options {
				qi.Options = append(qi.Options, store.QuestionOption{ID: o.ID, Label: o.Label, Description: o.Description})
			}
			cmd.Questions = append(cmd.Questions, qi)
		}
		return roundOut(d.app().StartElaboration(ctx, call.Request, cmd))
	},
}

// AnswerIn is one answer.
type AnswerIn struct {
	QuestionID       string  `json:"questionId"`
	SelectedOptionID *string `json:"selectedOptionId,omitempty" jsonschema:"leave it out to answer in customText"`
	CustomText       *string `json:"customText,omitempty" jsonschema:"required without selectedOptionId"`
}

// AnswerElaborationIn is chorus_answer_elaboration's input.
type AnswerElaborationIn struct {
	IdeaUUID  UUID       `json:"ideaUuid"`
	RoundUUID *UUID      `json:"roundUuid,omitempty" jsonschema:"default: the one pending round"`
	Answers   []AnswerIn `json:"answers"`
}

var answerElaboration = tool[AnswerElaborationIn, RoundView]{
	Name: "chorus_answer_elaboration", Title: "Answer elaboration", Toolset: tsIdeas, Perm: perm.Public, Effect: writes,
	Desc: "Answer an idea's pending elaboration round; one invalid answer refuses them all.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AnswerElaborationIn) (RoundView, error) {
		cmd := app.AnswerElaborationInput{IdeaUUID: string(in.IdeaUUID), RoundUUID: (*string)(in.RoundUUID)}
		for _, x := range in.Answers {
			cmd.Answers = append(cmd.Answers, workflows.AnswerInput{QuestionID: x.QuestionID, SelectedOptionID: x.SelectedOptionID, CustomText: x.CustomText})
		}
		return roundOut(d.app().AnswerElaboration(ctx, call.Request, cmd))
	},
}

var pmValidateElaboration = tool[IdeaIn, ResolveOut]{
	Name: "chorus_pm_validate_elaboration", Title: "Resolve elaboration", Toolset: tsIdeas, Perm: perm.IdeaAdmin, Effect: writes,
	Desc: "Resolve the elaboration of an idea you hold once no round is pending. Where the project's policy has a " +
		"person decide this, nothing changes yet: awaitingHuman names the gate it waits at.",
	Run: func(ctx context.Context, d *Deps, call *Call, in IdeaIn) (ResolveOut, error) {
		e, err := d.app().ValidateElaboration(ctx, call.Request, string(in.IdeaUUID))
		if err != nil {
			return ResolveOut{}, err
		}
		return ResolveOut{ElaborationView: elaborationView(e.Idea, e.Rounds), AwaitingHuman: awaitingHuman(e.Gate)}, nil
	},
}

// SkipElaborationIn is chorus_pm_skip_elaboration's input.
type SkipElaborationIn struct {
	IdeaUUID UUID   `json:"ideaUuid"`
	Reason   string `json:"reason"`
}

// SkippedElaboration is chorus_pm_skip_elaboration's result.
type SkippedElaboration struct {
	IdeaUUID string `json:"ideaUuid"`
	Action   string `json:"action"`
	Reason   string `json:"reason"`
}

var pmSkipElaboration = tool[SkipElaborationIn, SkippedElaboration]{
	Name: "chorus_pm_skip_elaboration", Title: "Skip elaboration", Toolset: tsIdeas, Perm: perm.IdeaWrite, Effect: writes,
	Desc: "Resolve the elaboration of an idea you hold without questions, saying why it is clear.",
	Run: func(ctx context.Context, d *Deps, call *Call, in SkipElaborationIn) (SkippedElaboration, error) {
		if err := d.app().SkipElaboration(ctx, call.Request, string(in.IdeaUUID), in.Reason); err != nil {
			return SkippedElaboration{}, err
		}
		return SkippedElaboration{IdeaUUID: string(in.IdeaUUID), Action: "elaboration_skipped", Reason: in.Reason}, nil
	},
}

// ---- move (docs/rules.md §4.4, §5.9) ----

// MoveIdeaIn is chorus_move_idea's input.
type MoveIdeaIn struct {
	IdeaUUID          UUID `json:"ideaUuid"`
	TargetProjectUUID UUID `json:"targetProjectUuid"`
}

// MovedIdea is chorus_move_idea's result.
type MovedIdea struct {
	UUID    string           `json:"uuid"`
	Project ProjectRef       `json:"project" jsonschema:"the project the idea is in now"`
	Moved   store.MoveCounts `json:"moved" jsonschema:"rows moved, all of the idea's project: the idea, its descendants, their proposals, documents, tasks and activities"`
}

var moveIdea = tool[MoveIdeaIn, MovedIdea]{
	Name: "chorus_move_idea", Title: "Move an idea", Toolset: tsProjects, Perm: perm.IdeaWrite, Effect: writes,
	Desc: "Move an idea with its descendants and their proposals, documents and tasks of its project to another project.",
	Run: func(ctx context.Context, d *Deps, call *Call, in MoveIdeaIn) (MovedIdea, error) {
		res, err := d.app().MoveIdea(ctx, call.Request, string(in.IdeaUUID), string(in.TargetProjectUUID))
		if err != nil {
			return MovedIdea{}, err
		}
		return MovedIdea{UUID: res.UUID, Project: ProjectRef{UUID: res.ProjectUUID, Name: res.ProjectName}, Moved: res.Moved}, nil
	},
}
