package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

type devOptions struct {
	addr         string
	temporalPort int
	uiPort       int
	ui           bool
	pprofAddr    string
	taskQueue    string
	// temporal: TEMPORAL_ADDRESS (a server to use instead of launching one) and its security,
	// and the payload keys; edge: Host and Origin allow-lists, limits, /metrics (docs/security.md).
	temporal temporalConfig
	edge     edgeConfig
	console  consoleConfig
	webhooks webhooksConfig
}

func newDevCmd(g *globals) *cobra.Command {
	o := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole Chorus stack on this machine (Temporal dev server, SQLite, worker, MCP endpoint)",
		Long: `Run everything Chorus needs on one machine, with no other services:

  - temporal-server ` + devserver.Version + ` as a child process on 127.0.0.1 (persisting to
    <data-dir>/temporal.db; its configuration is generated into <data-dir> at each start), with
    the Temporal web UI on --ui-port when --ui is given, unless TEMPORAL_ADDRESS names a server
    to use instead;
  - the app database: SQLite at <data-dir>/chorus.db, or PostgreSQL when CHORUS_DATABASE_URL is set;
  - the worker and the MCP endpoint on --addr.

The Temporal address and namespace are written to <data-dir>/temporal.address at every start
(for "chorus ops --data-dir"). The first start creates a company, an owner user and an admin
agent, prints the agent's API key once (to a terminal only: never into a log) and saves it to
<data-dir>/admin.key (set CHORUS_BOOTSTRAP_ADMIN_KEY=cho_... to choose the key; a key you chose
is never printed).
Ctrl-C stops everything, the Temporal server included.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(cmd.Context(), g, o, cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&o.addr, "addr", envOr("CHORUS_ADDR", "127.0.0.1:8637"), "HTTP listen address of the MCP endpoint (env CHORUS_ADDR)")
	cmd.Flags().IntVar(&o.temporalPort, "temporal-port", envInt("CHORUS_TEMPORAL_PORT", 7233), "gRPC port of the Temporal dev server (env CHORUS_TEMPORAL_PORT)")
	cmd.Flags().StringVar(&o.pprofAddr, "pprof-addr", envOr("CHORUS_PPROF_ADDR", ""), pprofFlagHelp)
	cmd.Flags().StringVar(&o.taskQueue, "task-queue", envOr("CHORUS_TASK_QUEUE", workflows.TaskQueue), taskQueueFlagHelp)
	cmd.Flags().IntVar(&o.uiPort, "ui-port", envInt("CHORUS_UI_PORT", 8233), "port of the Temporal web UI, with --ui (env CHORUS_UI_PORT)")
	cmd.Flags().BoolVar(&o.ui, "ui", envBool("CHORUS_UI"), "also run the Temporal web UI on 127.0.0.1:--ui-port (env CHORUS_UI=true); "+
		"it has no login, so it is off unless asked (docs/security.md)")
	o.temporal.flags(cmd, false, "")
	o.edge.flags(cmd)
	o.console.flags(cmd)
	o.webhooks.flags(cmd)
	return cmd
}

func runDev(ctx context.Context, g *globals, o devOptions, out io.Writer) error {
	log := newLogger()
	if err := os.MkdirAll(g.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	unlock, err := lockDataDir(g.dataDir)
	if err != nil {
		return err
	}
	defer unlock()

	// Refuse taken ports before anything is created, so a failed first start leaves no state.
	if err := addrFree(o.addr); err != nil {
		return err
	}
	if o.temporal.address == "" && o.temporal.secured() {
		return errors.New("the Temporal TLS and API-key settings (TEMPORAL_TLS*, TEMPORAL_API_KEY) are for a server named by " +
			"TEMPORAL_ADDRESS; the dev server chorus dev launches takes plain local connections")
	}
	if o.temporal.address == "" {
		if err := devPortsFree(o); err != nil {
			return err
		}
	}

	dsn := g.databaseURL()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "chorus: database %s (%d migration(s) applied now)\n", store.DescribeURL(dsn), len(applied))

	keyPath := filepath.Join(g.dataDir, "admin.key")
	chosenKey := os.Getenv("CHORUS_BOOTSTRAP_ADMIN_KEY")
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Default Company", OwnerName: "Owner",
		OwnerEmail: "owner@localhost", AgentName: "Admin Agent", Key: chosenKey})
	if err != nil {
		return fmt.Errorf("first-start setup: %w", err)
	}
	if boot.Created {
		if err := os.WriteFile(keyPath, []byte(boot.Key+"\n"), 0o600); err != nil {
			return fmt.Errorf("save the admin key: %w", err)
		}
	}

	cfg := serverConfig{role: roleAll, addr: o.addr, temporal: o.temporal, edge: o.edge, console: o.console, webhooks: o.webhooks, temporalWait: 30 * time.Second,
		pprofAddr: o.pprofAddr, taskQueue: o.taskQueue}
	if cfg.retention, cfg.pruneInterval, err = pruningFromEnv(); err != nil {
		return err
	}
	if cfg.temporal.namespace == "" {
		cfg.temporal.namespace = workflows.Namespace
	}
	uiURL := ""
	if cfg.temporal.address == "" {
		stop, url, err := startDevTemporal(ctx, log, g, o, &cfg, out)
		if err != nil {
			return err
		}
		defer stop()
		uiURL = url
	} else {
		fmt.Fprintf(out, "chorus: using the Temporal server at %s (TEMPORAL_ADDRESS)\n", cfg.temporal.describe())
	}
	if err := devserver.WriteAddressFile(g.dataDir, cfg.temporal.address, cfg.temporal.namespace); err != nil {
		return err
	}
	origin := strings.TrimSuffix(consoleURL(o.addr), console.Path)
	if err := os.WriteFile(filepath.Join(g.dataDir, consoleOriginFile), []byte(origin+"\n"), 0o600); err != nil {
		return err
	}
	// A key is printed once, to a terminal, when chorus dev made it: never one the operator chose
	// (they have it), never into a file or a supervisor's log (it is in keyPath, mode 600).
	showKey := boot.Created && chosenKey == "" && isTerminal(out)
	// A sign-in link is a credential too: printed only to a terminal, and good once, for an hour.
	signIn := "go run ./cmd/chorus user login-link " + deref(boot.Owner.Email)
	if g.dataDir != ".chorus" {
		signIn = "go run ./cmd/chorus --data-dir " + g.dataDir + " user login-link " + deref(boot.Owner.Email)
	}
	if isTerminal(out) {
		if signIn, err = st.CreateLoginLink(ctx, &boot.Owner, time.Hour); err != nil {
			return err
		}
		signIn = consoleURL(o.addr) + "/login/link/" + signIn
	}
	err = runServer(ctx, log, st, cfg, func() {
		printBanner(out, g.dataDir, o.addr, uiURL, keyPath, boot, showKey, signIn)
	})
	fmt.Fprintln(out, "chorus: shutting down...")
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// devPortsFree refuses the ports of the Temporal dev server (and its UI, with --ui) when they
// are taken.
func devPortsFree(o devOptions) error {
	ports := []int{o.temporalPort}
	if o.ui {
		ports = append(ports, o.uiPort)
	}
	for _, p := range ports {
		if err := devserver.PortFree(p); err != nil {
			return err
		}
	}
	return nil
}

// startDevTemporal starts the Temporal dev server (and its UI, with --ui) on the data dir, points
// cfg at it and waits until it serves. It returns the server's stop and the UI's address as
// the banner shows it.
func startDevTemporal(ctx context.Context, log *slog.Logger, g *globals, o devOptions, cfg *serverConfig,
	out io.Writer) (stop func(), uiURL string, err error) {
	bin, err := devserver.FindServer(ctx, out)
	if err != nil {
		return nil, "", err
	}
	if old, err := devserver.PredatesServer(ctx, filepath.Join(g.dataDir, "temporal.db")); err == nil && old {
		fmt.Fprintf(out, "chorus: %s was made by a Temporal server older than %s (the dev server of earlier "+
			"Chorus releases); its workflows run on, but %s's new visibility columns are missing, so queries of "+
			"them (the \"Stuck\" query of docs/operations.md) fail. docs/upgrading.md says how to start a fresh one "+
			"and keep Chorus's data.\n", filepath.Join(g.dataDir, "temporal.db"), devserver.Version, devserver.Version)
	}
	dopts := devserver.Options{Bin: bin, Port: o.temporalPort, DBFile: filepath.Join(g.dataDir, "temporal.db"),
		LogPath: filepath.Join(g.dataDir, "temporal.log"), Namespace: cfg.temporal.namespace}
	if o.ui {
		if dopts.UIBin, err = devserver.FindUI(ctx, out); err != nil {
			return nil, "", err
		}
		dopts.UIPort = o.uiPort
	}
	dev, err := devserver.Start(dopts)
	if err != nil {
		return nil, "", err
	}
	stop = func() {
		fmt.Fprintln(out, "chorus: stopping the Temporal dev server...")
		if err := dev.Stop(20 * time.Second); err != nil {
			log.Warn("temporal dev server", "err", err)
		}
	}
	cfg.temporal.address = dev.Address()
	if err := dev.WaitReady(ctx, 90*time.Second); err != nil {
		stop()
		return nil, "", err
	}
	uiURL = "off (chorus dev --ui serves it on 127.0.0.1)"
	if o.ui {
		uiURL = fmt.Sprintf("http://127.0.0.1:%d/namespaces/%s/workflows", o.uiPort, cfg.temporal.namespace)
	}
	fmt.Fprintf(out, "chorus: temporal-server %s on %s (data %s, log %s)\n", devserver.Version, cfg.temporal.address,
		filepath.Join(g.dataDir, "temporal.db"), dev.LogPath())
	return stop, uiURL, nil
}

// isTerminal reports whether w is a terminal (a character device), not a file or a pipe; it looks
// through terminalSafe's wrapper, which every command's output wears.
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*safeWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// consoleURL is the console's address for a listen address (a wildcard host reads as loopback).
func consoleURL(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		addr = "127.0.0.1:" + port
	}
	return "http://" + addr + console.Path
}

// printBanner says where everything is. The admin key is in it only when showKey.
func printBanner(out io.Writer, dataDir, addr, uiURL, keyPath string, boot *store.BootstrapResult, showKey bool, signIn string) {
	url := "http://" + addr + mcp.Path
	if host, port, err := net.SplitHostPort(addr); err == nil && (host == "" || host == "0.0.0.0" || host == "::") {
		url = "http://127.0.0.1:" + port + mcp.Path
	}
	key := "<the key in " + keyPath + ">"
	var b strings.Builder
	fmt.Fprintf(&b, "\nChorus is ready.\n\n")
	fmt.Fprintf(&b, "  MCP endpoint:  %s\n", url)
	fmt.Fprintf(&b, "  Console:       %s/\n", consoleURL(addr))
	fmt.Fprintf(&b, "  Sign in:       %s\n", signIn)
	fmt.Fprintf(&b, "                 (as %s, the company admin; a link works once, for an hour; more with "+
		"go run ./cmd/chorus user login-link)\n", deref(boot.Owner.Email))
	if uiURL != "" {
		fmt.Fprintf(&b, "  Temporal UI:   %s\n", uiURL)
	}
	switch {
	case showKey:
		key = boot.Key
		fmt.Fprintf(&b, "  Admin API key: %s\n", boot.Key)
		fmt.Fprintf(&b, "                 (agent %q; shown once, saved to %s)\n", boot.Agent.Name, keyPath)
	case boot.Created:
		fmt.Fprintf(&b, "  Admin API key: saved to %s (agent %q; not printed: keys never go into logs)\n", keyPath, boot.Agent.Name)
	default:
		fmt.Fprintf(&b, "  Admin API key: in %s (agent %q)\n", keyPath, boot.Agent.Name)
	}
	fmt.Fprintf(&b, "\n  .mcp.json for an MCP client:\n  %s\n", mcpJSON(url, key))
	try := "go run ./cmd/chorus mcp call chorus_checkin"
	if dataDir != ".chorus" {
		try = "go run ./cmd/chorus --data-dir " + dataDir + " mcp call chorus_checkin"
	}
	if url != "http://127.0.0.1:8637"+mcp.Path {
		try = "CHORUS_URL=" + url + " " + try
	}
	fmt.Fprintf(&b, "\n  Try it:  %s\n", try)
	fmt.Fprintf(&b, "  Stop:    Ctrl-C\n\n")
	fmt.Fprint(out, b.String())
}

// mcpJSON is the .mcp.json block that points an MCP client (Claude Code, Cursor, ...) at Chorus.
func mcpJSON(url, key string) string {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	_ = enc.Encode(map[string]map[string]server{"mcpServers": {"chorus": {Type: "http", URL: url,
		Headers: map[string]string{"Authorization": "Bearer " + key}}}})
	return strings.TrimRight(buf.String(), "\n")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// addrFree checks that the HTTP address can be listened on.
func addrFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%v); stop what uses it or pick another address with --addr", addr, err)
	}
	return ln.Close()
}
