package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The ideas area (issue 22): a project's idea tracker, and an idea's page where a person answers
// the open elaboration rounds and resolves the elaboration (docs/rules.md §2.2), with the same use
// cases as chorus_answer_elaboration and chorus_pm_validate_elaboration.

// ideasPerPage bounds the tracker: it reads and shows at most this many ideas at a time.
const ideasPerPage = 50

func (c *Console) ideaRoutes(g *echo.Group) {
	g.GET("/projects/:uuid/ideas", c.ideaTracker)
	g.GET("/ideas/:uuid", c.ideaPage)
	g.POST("/ideas/:uuid/answers", c.answerIdea)
	g.POST("/ideas/:uuid/resolve", c.resolveIdea)
}

// ideaTracker lists a page of a project's ideas with their derived status, elaboration, assignee,
// work and lineage; ?page=N (from 1) pages on.
func (c *Console) ideaTracker(ctx echo.Context) error {
	n := pageNumber(ctx)
	t, err := c.app.IdeaTracker(ctxOf(ctx), c.request(ctx), ctx.Param("uuid"), ideasPerPage, (n-1)*ideasPerPage)
	if err != nil {
		return c.failure(ctx, err)
	}
	waiting := 0
	for _, i := range t.Ideas {
		if i.Derived.Status == store.DerivedHumanConductRequired {
			waiting++
		}
	}
	data := map[string]any{"Project": t.Project, "Ideas": t.Ideas, "Total": t.Total, "Waiting": waiting,
		"Page": n, "From": (n-1)*ideasPerPage + 1, "To": (n-1)*ideasPerPage + len(t.Ideas)}
	if n > 1 {
		data["Prev"] = n - 1
	}
	if n*ideasPerPage < t.Total {
		data["Next"] = n + 1
	}
	return c.render(ctx, http.StatusOK, "ideas", page{Title: "Ideas · " + t.Project.Name, Nav: "projects", Data: data})
}

// ideaPage shows an idea with its lineage, proposals and elaboration rounds.
func (c *Console) ideaPage(ctx echo.Context) error {
	return c.showIdea(ctx, http.StatusOK, page{}, nil)
}

// showIdea draws an idea's page with status; p carries a refusal, and posted the answer form as
// the person sent it (nil: the answers as stored), so a refused form keeps what they chose.
func (c *Console) showIdea(ctx echo.Context, status int, p page, posted url.Values) error {
	o, err := c.app.IdeaOverview(ctxOf(ctx), c.request(ctx), ctx.Param("uuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	rounds, pending := roundViews(o, posted)
	es := ideaStr(o.Idea.ElaborationStatus)
	thread, err := c.commentsFor(ctx, "idea", o.Idea.UUID)
	if err != nil {
		return c.failure(ctx, err)
	}
	p.Title, p.Nav = o.Idea.Title, "projects"
	p.Data = map[string]any{"Idea": o, "Rounds": rounds, "Pending": pending, "Thread": thread,
		"CanResolve": o.CanEdit && len(o.Rounds) > 0 && pending == 0 && es != string(vocab.ElaborationResolved)}
	return c.render(ctx, status, "idea", p)
}

// roundView is an elaboration round as the idea's page shows it.
type roundView struct {
	store.ElaborationRound
	Open      bool
	Questions []questionView
}

// questionView is a question with its answer: the stored one, or the one just posted.
type questionView struct {
	store.ElaborationQuestion
	// Field is the key of page.Fields for a refusal about this question ("question 'scope'").
	Field      string
	Options    []optionView
	Own        bool   // the person's own text is chosen rather than an option
	Draft      string // the own text the form shows
	Chosen     string // the chosen option's label
	AnsweredBy string
}

type optionView struct {
	store.QuestionOption
	Checked bool
}

// roundViews turns the rounds into views, oldest first, and counts the pending ones.
func roundViews(o app.IdeaOverview, posted url.Values) ([]roundView, int) {
	out := make([]roundView, 0, len(o.Rounds))
	pending := 0
	for _, r := range o.Rounds {
		rv := roundView{ElaborationRound: r, Open: r.Status == vocab.RoundPendingAnswers}
		if rv.Open {
			pending++
		}
		for _, q := range r.Questions {
			qv := questionView{ElaborationQuestion: q, Field: questionField(q.QuestionID), Draft: ideaStr(q.CustomText)}
			chosen := ideaStr(q.SelectedOptionID)
			if q.AnsweredByUUID != nil {
				qv.AnsweredBy = o.Names[*q.AnsweredByUUID]
			}
			if vals, ok := posted["option:"+q.QuestionID]; ok && rv.Open {
				chosen, qv.Own = vals[0], vals[0] == ""
			}
			if posted != nil && rv.Open {
				qv.Draft = posted.Get("text:" + q.QuestionID)
			}
			for _, opt := range q.Options {
				qv.Options = append(qv.Options, optionView{QuestionOption: opt, Checked: chosen != "" && opt.ID == chosen})
				if opt.ID == ideaStr(q.SelectedOptionID) {
					qv.Chosen = opt.Label
				}
			}
			rv.Questions = append(rv.Questions, qv)
		}
		out = append(out, rv)
	}
	return out, pending
}

// questionField names a question in refusals as the workflow words them: "... question 'scope'".
func questionField(id string) string { return "question '" + id + "'" }

// answerIdea answers a pending round with chorus_answer_elaboration's use case. Per question the
// form sends option:<id> (an option id, or "" for the person's own text) and text:<id>; a
// question with neither is left unanswered.
func (c *Console) answerIdea(ctx echo.Context) error {
	form, err := ctx.FormParams()
	if err != nil {
		return c.failure(ctx, err)
	}
	in := app.AnswerElaborationInput{IdeaUUID: ctx.Param("uuid")}
	if r := strings.TrimSpace(form.Get("roundUuid")); r != "" {
		in.RoundUUID = &r
	}
	fields := []string{"answers"}
	for _, q := range form["question"] {
		fields = append(fields, questionField(q))
		if a, ok := answerOf(form, q); ok {
			in.Answers = append(in.Answers, a)
		}
	}
	if _, err := c.app.AnswerElaboration(ctxOf(ctx), c.request(ctx), in); err != nil {
		p, ok := refused(err, fields...)
		if !ok {
			return c.failure(ctx, err)
		}
		return c.showIdea(ctx, statusOf(app.Classify(err)), p, form)
	}
	return c.redirect(ctx, Path+"/ideas/"+in.IdeaUUID, "Answers saved.")
}

// answerOf is the answer the form gives to question q, and whether it gives one.
func answerOf(form url.Values, q string) (app.AnswerInput, bool) {
	a := app.AnswerInput{QuestionID: q}
	text := strings.TrimSpace(form.Get("text:" + q))
	if text != "" {
		a.CustomText = &text
	}
	vals, chose := form["option:"+q]
	switch {
	case chose && vals[0] != "":
		a.SelectedOptionID = &vals[0]
	case chose:
		// Own answer chosen: the text is required (the use case says so when it is empty).
	case text == "":
		return a, false
	}
	return a, true
}

// resolveIdea resolves the idea's elaboration with chorus_pm_validate_elaboration's use case.
func (c *Console) resolveIdea(ctx echo.Context) error {
	id := ctx.Param("uuid")
	if _, err := c.app.ValidateElaboration(ctxOf(ctx), c.request(ctx), id); err != nil {
		p, ok := refused(err)
		if !ok {
			return c.failure(ctx, err)
		}
		return c.showIdea(ctx, statusOf(app.Classify(err)), p, nil)
	}
	return c.redirect(ctx, Path+"/ideas/"+id, "Elaboration resolved.")
}

func ideaStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
