package console

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
)

// Verification (issue 22): the queue of tasks in to_verify, a task's page, and its actions. Each
// action calls the use case the MCP tool calls (chorus_mark_acceptance_criteria,
// chorus_admin_verify_task, chorus_admin_reopen_task, chorus_admin_close_task), so its checks,
// refusal texts and workflow command are the tool's.

// verifyQueueRows is how many tasks one page of the queue shows.
const verifyQueueRows = 50

// verifyRoutes adds the queue, the task's page and its actions.
func (c *Console) verifyRoutes(g *echo.Group) {
	g.GET("/verify", c.verifyQueuePage)
	g.GET("/tasks/:uuid", c.taskPage)
	g.POST("/tasks/:uuid/criteria", c.markCriteria)
	g.POST("/tasks/:uuid/verify", c.verifyTask)
	g.POST("/tasks/:uuid/reopen", c.reopenTask)
	g.POST("/tasks/:uuid/close", c.closeTask)
}

// verifyQueueItem is one row of the queue page.
type verifyQueueItem struct {
	store.VerifyItem
	Assignee *store.ActorRef
}

// verifyQueuePage lists the tasks waiting for verification in the projects the person can see,
// oldest submission first, verifyQueueRows to a page (?offset=N).
func (c *Console) verifyQueuePage(ctx echo.Context) error {
	offset := queryNumber(ctx.QueryParam("offset"))
	rows, total, err := c.app.VerifyQueue(ctxOf(ctx), c.request(ctx), app.Page{Limit: verifyQueueRows, Offset: offset})
	if err != nil {
		return c.failure(ctx, err)
	}
	names := c.app.Store.NewNamer()
	refs := make([]store.ActorRef, 0, len(rows))
	for _, r := range rows {
		if r.AssigneeUUID != nil {
			refs = append(refs, store.ActorRef{Type: strOrEmpty(r.AssigneeType), UUID: *r.AssigneeUUID})
		}
	}
	names.Prefetch(ctxOf(ctx), refs...)
	items := make([]verifyQueueItem, len(rows))
	for i, r := range rows {
		items[i] = verifyQueueItem{VerifyItem: r, Assignee: names.Ref(ctxOf(ctx), strOrEmpty(r.AssigneeType), r.AssigneeUUID)}
	}
	data := map[string]any{"Items": items, "Total": total, "From": offset + 1, "To": offset + len(items)}
	if offset > 0 {
		data["Prev"] = max(offset-verifyQueueRows, 0)
	}
	if offset+len(items) < total {
		data["Next"] = offset + verifyQueueRows
	}
	return c.render(ctx, http.StatusOK, "verify", page{Title: "Verify", Nav: "verify", Data: data})
}

// taskPage shows a task with its criteria, work reports and the actions the person may take.
func (c *Console) taskPage(ctx echo.Context) error {
	v, err := c.loadTaskPage(ctx, ctx.Param("uuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	return c.render(ctx, http.StatusOK, "task", page{Title: v.Task.Title, Nav: "verify", Data: v})
}

// taskRefused answers a refused action on a task: its page again, with the use case's refusal at
// the top and, through place, beside the field it concerns. Anything that is not a refusal a
// form can show (not found, an outage) is c.failure's.
func (c *Console) taskRefused(ctx echo.Context, err error, place func(p *page, v *taskPageData)) error {
	p, ok := refused(err)
	if !ok {
		return c.failure(ctx, err)
	}
	v, lerr := c.loadTaskPage(ctx, ctx.Param("uuid"))
	if lerr != nil {
		return c.failure(ctx, lerr)
	}
	if place != nil {
		place(&p, v)
	}
	p.Title, p.Nav, p.Data = v.Task.Title, "verify", v
	return c.render(ctx, statusOf(app.Classify(err)), "task", p)
}

// markInputs reads the criteria form: row i sends criteria[i].uuid, criteria[i].status (passed
// or failed; a row left unmarked sends none and is skipped) and criteria[i].evidence (the
// optional note). rows[j] is the form row of marks[j].
func markInputs(ctx echo.Context) (marks []app.CriterionMark, rows []int) {
	for i := 0; i < store.EntityListRows; i++ {
		key := fmt.Sprintf("criteria[%d].", i)
		id, ok := ctx.Request().PostForm[key+"uuid"]
		if !ok || len(id) == 0 {
			break
		}
		status := strings.TrimSpace(ctx.FormValue(key + "status"))
		if status == "" {
			continue
		}
		m := app.CriterionMark{UUID: id[0], Status: status}
		if note := strings.TrimSpace(ctx.FormValue(key + "evidence")); note != "" {
			m.Evidence = &note
		}
		marks = append(marks, m)
		rows = append(rows, i)
	}
	return marks, rows
}

// markCriteria records the person's marks on the task's criteria (as
// chorus_mark_acceptance_criteria; docs/rules.md §4.9).
func (c *Console) markCriteria(ctx echo.Context) error {
	_ = ctx.Request().ParseForm() // already parsed by the CSRF check; markInputs reads PostForm
	taskUUID := ctx.Param("uuid")
	marks, rows := markInputs(ctx)
	res, err := c.app.MarkCriteria(ctxOf(ctx), c.request(ctx), app.CriteriaMarks{TaskUUID: taskUUID, Marks: marks})
	if err != nil {
		return c.taskRefused(ctx, err, func(p *page, v *taskPageData) { placeMarkError(p, marks, rows) })
	}
	s := res.Summary
	return c.redirect(ctx, Path+"/tasks/"+taskUUID, fmt.Sprintf("Marks saved. Acceptance: %s (required passed %d of %d, failed %d).",
		res.Status, s.RequiredPassed, s.Required, s.RequiredFailed))
}

// placeMarkError puts a refused mark's message beside the criterion row it names: by its input
// name (criteria[j].status, as the tool's input names it) or by the criterion uuid it quotes;
// else beside the criteria as a whole.
func placeMarkError(p *page, marks []app.CriterionMark, rows []int) {
	p.Fields = map[string]string{}
	lower := strings.ToLower(p.Error)
	for j, m := range marks {
		for _, f := range []string{"uuid", "status", "evidence"} {
			if _, named := fieldError(p.Error, fmt.Sprintf("criteria[%d].%s", j, f)); named {
				p.Fields[fmt.Sprintf("criteria[%d].%s", rows[j], f)] = p.Error
				return
			}
		}
		if m.UUID != "" && strings.Contains(lower, strings.ToLower(m.UUID)) {
			p.Fields[fmt.Sprintf("criteria[%d].uuid", rows[j])] = p.Error
			return
		}
	}
	p.Fields["criteria"] = p.Error
}

// verifyTask accepts the task as done (as chorus_admin_verify_task): the use case refuses unless
// every required criterion is passed (docs/rules.md §5.2), in its own words, shown at the top.
func (c *Console) verifyTask(ctx echo.Context) error {
	taskUUID := ctx.Param("uuid")
	if _, err := c.app.VerifyTask(ctxOf(ctx), c.request(ctx), taskUUID); err != nil {
		return c.taskRefused(ctx, err, nil)
	}
	return c.redirect(ctx, Path+"/tasks/"+taskUUID, "Task verified: it is done.")
}

// reopenTask sends the task back to in_progress (as chorus_admin_reopen_task); force=1 reopens it
// past unresolved dependencies (docs/rules.md §5.3). A refusal for blockers lists them beside
// the "force" box.
func (c *Console) reopenTask(ctx echo.Context) error {
	taskUUID := ctx.Param("uuid")
	force := ctx.FormValue("force") == "1"
	if _, err := c.app.ReopenTask(ctxOf(ctx), c.request(ctx), taskUUID, force); err != nil {
		return c.taskRefused(ctx, err, func(p *page, v *taskPageData) {
			if msg, blockers, ok := blockersOf(p.Error); ok {
				p.Error, v.BlockedBy = msg, blockers
				p.Fields = map[string]string{"force": msg}
			}
		})
	}
	notice := "Task reopened: it is in progress again, and every criterion's marks are back to pending."
	if force {
		notice = "Task reopened past its unresolved dependencies: it is in progress again, and every criterion's marks are back to pending."
	}
	return c.redirect(ctx, Path+"/tasks/"+taskUUID, notice)
}

// closeTask closes the task for good (as chorus_admin_close_task).
func (c *Console) closeTask(ctx echo.Context) error {
	taskUUID := ctx.Param("uuid")
	if _, err := c.app.CloseTask(ctxOf(ctx), c.request(ctx), taskUUID); err != nil {
		return c.taskRefused(ctx, err, nil)
	}
	return c.redirect(ctx, Path+"/tasks/"+taskUUID, "Task closed.")
}
