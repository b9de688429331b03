package console

import "github.com/labstack/echo/v4"

// verifyRoutes: not built yet (issue 22); the helper that builds this area replaces this file.
func (c *Console) verifyRoutes(g *echo.Group) {}
