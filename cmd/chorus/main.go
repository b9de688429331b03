// Command chorus runs Chorus and administers it.
//
//	chorus dev                          the whole stack on one machine (what `make run` runs)
//	chorus serve --role api|worker|all  production: external Temporal and PostgreSQL
//	chorus migrate up|down|status       database schema
//	chorus agent create|list|run        agents, their first API key, and a runner that wakes them on events
//	chorus key create|list|revoke       API keys
//	chorus mcp tools|call               an MCP client for shells and scripts
//	chorus ops check|repair             compare workflows with their rows, and make them agree
//	chorus bench                        load-test over MCP against bare Temporal floors (make bench)
//	chorus codec-server                 decode encrypted Temporal payloads for the Temporal UI and CLI
//
// This package is wiring only: configuration, subcommands, process lifecycle.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetContext(ctx)
	if err := root.ExecuteContext(ctx); err != nil {
		var ex exitError
		if errors.As(err, &ex) {
			os.Exit(ex.code)
		}
		fmt.Fprintln(terminalSafe(os.Stderr), "chorus:", err)
		os.Exit(1)
	}
}

// exitError ends the process with a code and no further message (the command printed it).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// globals are the flags every subcommand shares.
type globals struct {
	dataDir string
	// The connection selection of chorus mcp (docs/rules.md §3.3).
	mcpToolsets string
	mcpReadOnly bool
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "chorus",
		Short:         "Chorus: a backend where AI agents deliver software together, over MCP",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Whatever a command prints passes through terminalSafe (terminal.go).
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			r := cmd.Root()
			r.SetOut(terminalSafe(r.OutOrStdout()))
			r.SetErr(terminalSafe(r.ErrOrStderr()))
		},
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", envOr("CHORUS_DATA_DIR", ".chorus"),
		"directory for local state: SQLite database, Temporal dev database, admin key (env CHORUS_DATA_DIR)")
	root.AddCommand(newDevCmd(g), newServeCmd(g), newMigrateCmd(g), newAgentCmd(g), newKeyCmd(g), newProjectCmd(g), newUserCmd(g), newGateCmd(g), newWebhookCmd(g), newMCPCmd(g), newInitCmd(g), newOpsCmd(g), newBenchCmd(), newCodecServerCmd(), newTemporalCmd())
	return root
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

// databaseURL is CHORUS_DATABASE_URL when set (PostgreSQL), else the SQLite file in the data dir.
func (g *globals) databaseURL() string {
	if v := strings.TrimSpace(os.Getenv("CHORUS_DATABASE_URL")); v != "" {
		return v
	}
	return filepath.Join(g.dataDir, "chorus.db")
}

// openStore opens the configured database. SQLite is migrated on the spot (it is the local,
// single-user default); PostgreSQL must already be migrated with `chorus migrate up`.
func (g *globals) openStore(ctx context.Context) (*store.Store, error) {
	dsn := g.databaseURL()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if st.Dialect() == "sqlite" {
		if _, err := st.Migrate(ctx); err != nil {
			_ = st.Close()
			return nil, err
		}
	} else if err := st.CheckMigrated(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

// newLogger returns the process logger: text or JSON (CHORUS_LOG_FORMAT) at CHORUS_LOG_LEVEL.
func newLogger() *slog.Logger { return newLoggerTo(os.Stderr) }

// newLoggerTo is newLogger writing to w.
func newLoggerTo(w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(envOr("CHORUS_LOG_LEVEL", "info"))); err != nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if strings.EqualFold(os.Getenv("CHORUS_LOG_FORMAT"), "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
