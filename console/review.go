package console

import (
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Proposal review (issue 22): the proposals waiting for review, a proposal with its rendered
// document drafts, task drafts and validation issues, and the decisions on it. Each decision
// is the use case the tool calls: approve (chorus_admin_approve_proposal), reject
// (chorus_pm_reject_proposal), close (chorus_admin_close_proposal); docs/rules.md §2.3.

// reviewPageSize is how many proposals the review queue shows per page.
const reviewPageSize = 25

// reviewRoutes adds the review queue, a proposal's page and its decisions.
func (c *Console) reviewRoutes(g *echo.Group) {
	g.GET("/review", c.reviewQueue)
	g.GET("/proposals/:uuid", c.proposalPage)
	g.POST("/proposals/:uuid/:action", c.proposalAction)
}

// reviewQueue lists the pending proposals of the projects the person can see, newest first,
// reviewPageSize at a time (?page=2 for the next).
func (c *Console) reviewQueue(ctx echo.Context) error {
	n := pageNumber(ctx)
	items, total, err := c.app.ProposalsToReview(ctxOf(ctx), c.request(ctx), reviewPageSize, (n-1)*reviewPageSize)
	if err != nil {
		return c.failure(ctx, err)
	}
	data := map[string]any{"Items": items, "Total": total, "Page": n, "From": (n-1)*reviewPageSize + 1,
		"To": (n-1)*reviewPageSize + len(items), "Prev": n - 1, "Next": 0}
	if n*reviewPageSize < total {
		data["Next"] = n + 1
	}
	return c.render(ctx, http.StatusOK, "review", page{Title: "Proposals to review", Nav: "review", Data: data})
}

// proposalView is what the proposal page shows: the review, and its drafts ready to draw.
type proposalView struct {
	app.ProposalReview
	// Thread is the proposal's comments and the form to add one (templates/_comments.html).
	Thread commentsView
	// Docs are the document drafts rendered, or once approved the documents made from them;
	// Drafts are the task drafts.
	Docs   []docView
	Drafts []taskDraftView
	// Pending: the decisions apply (the use cases still decide); Failed names the decision whose
	// form shows a refusal, Note the note typed into it.
	Pending      bool
	Failed, Note string
	BoardURL     string
	// MoreTasks is how many of the approval's tasks the page does not list.
	MoreTasks int
}

// docView is a document draft, or a document made from one, with its Markdown rendered.
type docView struct {
	UUID, Type, Title string
	Version           int
	HTML              template.HTML
}

// taskDraftView is a task draft with its dependencies by draft title.
type taskDraftView struct {
	store.TaskDraft
	DependsOn []string
}

// proposalPage shows a proposal the person can see; a hidden or unknown one is "Proposal not found".
func (c *Console) proposalPage(ctx echo.Context) error {
	return c.showProposal(ctx, http.StatusOK, page{}, "", "")
}

// showProposal draws the proposal page with status; p carries a refusal to show (Error,
// Fields), failed the decision it belongs to and note the note the person typed.
func (c *Console) showProposal(ctx echo.Context, status int, p page, failed, note string) error {
	rv, err := c.app.ReviewProposal(ctxOf(ctx), c.request(ctx), ctx.Param("uuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	pr := rv.Proposal
	v := proposalView{ProposalReview: rv, Pending: pr.Status == vocab.ProposalPending, Failed: failed, Note: note,
		BoardURL: Path + "/projects/" + pr.ProjectUUID, MoreTasks: rv.TaskTotal - len(rv.Tasks)}
	if pr.Status == vocab.ProposalApproved && len(rv.Documents) > 0 {
		for _, d := range rv.Documents {
			v.Docs = append(v.Docs, docView{UUID: d.UUID, Type: d.Type, Title: d.Title, Version: d.Version,
				HTML: markdown(deref(d.Content))})
		}
	} else {
		for _, d := range pr.DocumentDrafts {
			v.Docs = append(v.Docs, docView{UUID: d.UUID, Type: d.Type, Title: d.Title, HTML: markdown(d.Content)})
		}
	}
	titles := map[string]string{}
	for _, t := range pr.TaskDrafts {
		titles[t.UUID] = t.Title
	}
	for _, t := range pr.TaskDrafts {
		tv := taskDraftView{TaskDraft: t}
		for _, dep := range t.DependsOnDraftUUIDs {
			if title, ok := titles[dep]; ok {
				tv.DependsOn = append(tv.DependsOn, title)
			} else {
				tv.DependsOn = append(tv.DependsOn, "unknown draft "+dep)
			}
		}
		v.Drafts = append(v.Drafts, tv)
	}
	if v.Thread, err = c.commentsFor(ctx, "proposal", pr.UUID); err != nil {
		return c.failure(ctx, err)
	}
	p.Title, p.Nav, p.Data = pr.Title, "review", v
	return c.render(ctx, status, "proposal", p)
}

// proposalAction applies a decision from the proposal page's forms: approve (reviewNote
// optional), reject and close (reviewNote required: the use case refuses a blank one, and the
// refusal is shown beside the note). A refusal changes nothing and redraws the page with it.
func (c *Console) proposalAction(ctx echo.Context) error {
	id, action := ctx.Param("uuid"), ctx.Param("action")
	note := ctx.FormValue("reviewNote")
	rctx, req := ctxOf(ctx), c.request(ctx)
	var err error
	var notice string
	switch action {
	case "approve":
		var n *string
		if strings.TrimSpace(note) != "" {
			n = &note
		}
		var res app.ApprovedProposal
		res, err = c.app.ApproveProposal(rctx, req, id, n)
		notice = "Proposal approved: " + count(len(res.Tasks), "task") + " and " + count(len(res.Documents), "document") +
			" made from its drafts."
	case "reject":
		_, err = c.app.RejectProposal(rctx, req, id, note)
		notice = "Proposal rejected: it is back in draft, with your note for its author."
	case "close":
		_, err = c.app.CloseProposal(rctx, req, id, note)
		notice = "Proposal closed for good."
	default:
		return c.render(ctx, http.StatusNotFound, "error", page{Title: "Not found",
			Error: "There is no such decision on a proposal: approve, reject or close."})
	}
	if err != nil {
		p, ok := refused(err, "reviewNote")
		if !ok {
			return c.failure(ctx, err)
		}
		return c.showProposal(ctx, statusOf(app.Classify(err)), p, action, note)
	}
	return c.redirect(ctx, Path+"/proposals/"+id, notice)
}

// count is "1 task", "2 tasks".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
