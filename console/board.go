package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The board (issue 22): a project's tasks in columns by status, filtered by idea, each column
// paged; and the dependency graph of an idea's tasks (graph.go draws it).

// boardRefresh is how often the board reloads itself (seconds) while its event stream is down (it
// follows the project's events otherwise), so a person watches the agents
// move cards without an event stream.
const boardRefresh = 10

// boardRoutes adds the board and the idea graph.
func (c *Console) boardRoutes(g *echo.Group) {
	g.GET("/projects/:uuid", c.boardPage)
	g.GET("/ideas/:uuid/graph", c.graphPage)
}

// boardStatusLabels are the column titles of the task statuses (docs/rules.md §2.4).
var boardStatusLabels = map[vocab.TaskStatus]string{
	vocab.TaskOpen: "Open", vocab.TaskAssigned: "Assigned", vocab.TaskInProgress: "In progress",
	vocab.TaskToVerify: "To verify", vocab.TaskDone: "Done", vocab.TaskClosed: "Closed",
}

// boardColumn is a column as the template draws it. Views are flat structs: the template
// engine finds a field of an embedded struct by a slow reflective search, and a board draws
// hundreds of cards.
type boardColumn struct {
	Status           vocab.TaskStatus
	Label            string
	Total, PerColumn int
	// First and Last number the cards shown (1-based); Prev and Next page the column ("" none).
	First, Last int
	Prev, Next  string
	Cards       []boardCard
}

// boardCard is a card as the template draws it.
type boardCard struct {
	UUID, Title, Priority string
	Assignee              string // "" unassigned
	Blockers              []boardBlocker
	// BlockerCount counts the unresolved dependencies; MoreBlockers those the card does not name.
	BlockerCount, MoreBlockers               int
	CriteriaPassed, CriteriaTotal, DevPassed int
}

// boardBlocker is an unresolved dependency a card names; Elsewhere: of another project, not linked.
type boardBlocker struct {
	UUID, Title string
	Elsewhere   bool
}

// boardCardView flattens a card for the template.
func boardCardView(c store.BoardCard) boardCard {
	v := boardCard{UUID: c.UUID, Title: c.Title, Priority: c.Priority, Assignee: boardName(c.AssigneeName),
		BlockerCount: c.BlockerCount, MoreBlockers: c.BlockerCount - len(c.Blockers), CriteriaPassed: c.CriteriaPassed,
		CriteriaTotal: c.CriteriaTotal, DevPassed: c.DevPassed}
	for _, b := range c.Blockers {
		v.Blockers = append(v.Blockers, boardBlocker{UUID: b.UUID, Title: b.Title, Elsewhere: b.Elsewhere})
	}
	return v
}

// boardName is an assignee's name, "" for none.
func boardName(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// boardPage is GET /console/projects/:uuid: the board, ?idea=<uuid> keeps one idea's tasks,
// ?status=<status>&page=<n> pages one column. A hidden project is "Project not found" (404).
func (c *Console) boardPage(ctx echo.Context) error {
	q := app.BoardQuery{IdeaUUID: strings.TrimSpace(ctx.QueryParam("idea"))}
	if st := vocab.TaskStatus(ctx.QueryParam("status")); boardStatusLabels[st] != "" {
		q.Status = st
		q.Page = pageNumber(ctx)
	}
	projectUUID := strings.ToLower(ctx.Param("uuid"))
	b, err := c.app.Board(ctxOf(ctx), c.request(ctx), projectUUID, q)
	if err != nil {
		return c.failure(ctx, err)
	}
	ideaUUID := ""
	if b.Idea != nil {
		ideaUUID = b.Idea.UUID
	}
	cols := make([]boardColumn, len(b.Columns))
	for i, col := range b.Columns {
		v := boardColumn{Status: col.Status, Label: boardStatusLabels[col.Status], Total: col.Total, PerColumn: col.PerColumn,
			Cards: make([]boardCard, len(col.Cards))}
		for j, card := range col.Cards {
			v.Cards[j] = boardCardView(card)
		}
		if len(col.Cards) > 0 {
			v.First = (col.Page-1)*col.PerColumn + 1
			v.Last = v.First + len(col.Cards) - 1
		}
		if col.Page > 1 { // past the end, back to the last page that has cards
			last := max(1, (col.Total+col.PerColumn-1)/col.PerColumn)
			v.Prev = boardURL(b.Project.UUID, ideaUUID, col.Status, min(col.Page-1, last))
		}
		if col.More() {
			v.Next = boardURL(b.Project.UUID, ideaUUID, col.Status, col.Page+1)
		}
		cols[i] = v
	}
	title := b.Project.Name
	if b.Idea != nil {
		title += " · " + b.Idea.Title
	}
	return c.render(ctx, http.StatusOK, "board", page{Title: title, Nav: "projects", Refresh: boardRefresh, Follow: b.Project.UUID,
		Data: map[string]any{"Board": b, "Columns": cols, "Level": b.Project.Level().String(),
			"MoreIdeas": b.IdeaCount > len(b.Ideas), "IdeaListed": ideaListed(b)}})
}

// ideaListed reports whether the idea filtered on is among the filter's choices (an older idea
// of a project with many is not, and is then added to them).
func ideaListed(b *app.Board) bool {
	if b.Idea == nil {
		return true
	}
	for _, i := range b.Ideas {
		if i.UUID == b.Idea.UUID {
			return true
		}
	}
	return false
}

// boardURL is the board of a project, filtered by idea ("" none), with a column's page.
func boardURL(project, idea string, status vocab.TaskStatus, pageNo int) string {
	v := url.Values{}
	if idea != "" {
		v.Set("idea", idea)
	}
	if pageNo > 1 {
		v.Set("status", string(status))
		v.Set("page", strconv.Itoa(pageNo))
	}
	u := Path + "/projects/" + project
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// graphPage is GET /console/ideas/:uuid/graph: the dependency graph of an idea's tasks, at
// most app.GraphTaskLimit of them. A hidden idea is "Idea not found" (404).
func (c *Console) graphPage(ctx echo.Context) error {
	g, err := c.app.IdeaGraph(ctxOf(ctx), c.request(ctx), strings.ToLower(ctx.Param("uuid")))
	if err != nil {
		return c.failure(ctx, err)
	}
	return c.render(ctx, http.StatusOK, "graph", page{Title: "Dependencies · " + g.Idea.Title, Nav: "projects",
		Refresh: boardRefresh, Follow: g.Project.UUID, Data: map[string]any{"Graph": g, "Layout": layoutGraph(g.Tasks, g.Edges),
			"Limit": app.GraphTaskLimit, "Left": g.Total - len(g.Tasks)}})
}
