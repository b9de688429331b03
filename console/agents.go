package console

import "github.com/labstack/echo/v4"

// agentRoutes: not built yet (issue 22); the helper that builds this area replaces this file.
func (c *Console) agentRoutes(g *echo.Group) {}
