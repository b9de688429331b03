package main

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/console"
)

// consoleConfig is how the web console is served (docs/production.md "The console").
type consoleConfig struct {
	// secure marks the console's cookies Secure: set it behind a TLS-terminating proxy.
	secure bool
	// sessionTTL is how long a sign-in lasts.
	sessionTTL time.Duration
}

func (c *consoleConfig) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.secure, "console-secure-cookies", envBool("CHORUS_CONSOLE_SECURE_COOKIES"),
		"mark the console's cookies Secure; set it when a proxy terminates TLS in front of Chorus (requests that "+
			"arrive over TLS get Secure cookies anyway; env CHORUS_CONSOLE_SECURE_COOKIES=true)")
	cmd.Flags().DurationVar(&c.sessionTTL, "console-session-ttl", envDuration("CHORUS_CONSOLE_SESSION_TTL", 12*time.Hour),
		"how long a console sign-in lasts (env CHORUS_CONSOLE_SESSION_TTL)")
}

// mountConsole serves the console under /console on e, over the same use cases as the MCP endpoint.
func mountConsole(e *echo.Echo, a *app.App, log *slog.Logger, c consoleConfig) error {
	con, err := console.New(console.Config{App: a, Log: log, Secure: c.secure, SessionTTL: c.sessionTTL})
	if err != nil {
		return err
	}
	con.Mount(e)
	return nil
}
