package console

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// routes adds the signed-in pages. Each area of the console adds its own routes in its file.
func (c *Console) routes(g *echo.Group) {
	g.GET("/", c.projectsPage)
	c.boardRoutes(g)    // board.go: a project's board and its ideas' dependency graphs
	c.ideaRoutes(g)     // ideas.go: the idea tracker, an idea's page, elaboration
	c.reviewRoutes(g)   // review.go: proposals to review, a proposal's page, approve/reject/close
	c.verifyRoutes(g)   // verify.go: the verification queue, a task's page, criteria, verify/reopen
	c.inboxRoutes(g)    // inbox.go: notifications, what waits for this person, comments
	c.agentRoutes(g)    // agents.go: agents, their keys
	c.settingsRoutes(g) // settings.go: a project's visibility, members, claim TTL, gates
	c.gateRoutes(g)     // gates.go: requests awaiting a person's decision
}

// projectsPage lists the projects the person can see (the same list chorus_list_projects gives).
func (c *Console) projectsPage(ctx echo.Context) error {
	projects, total, err := c.app.ListProjects(ctxOf(ctx), c.request(ctx), 200, 0)
	if err != nil {
		return c.failure(ctx, err)
	}
	return c.render(ctx, http.StatusOK, "projects", page{Title: "Projects", Nav: "projects",
		Data: map[string]any{"Projects": projects, "Total": total}})
}
