// Package devserver runs Temporal for `chorus dev`, `make bench` and the integration tests:
// temporal-server (go.temporal.io/server, pinned in tools/server/go.mod) as a child process on
// a single-node configuration it generates (SQLite, one history shard, every listener on
// 127.0.0.1), with Chorus's namespace and search attributes registered at start, and, when
// asked, the Temporal web UI (tools/ui) beside it. Both answer only loopback Host names (DNS
// rebinding defence). The children run in their own process group and, on Linux, are killed
// when their parent dies, so neither a Ctrl-C nor a crashed test leaves a server behind.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/chorus-dev/chorus/workflows"
)

// Version is the go.temporal.io/server release the dev server runs (tools/server/go.mod;
// deploy/ and docker-compose.yml run the same one).
const Version = "1.32.1"

// Server is a running dev server (and its UI, when asked for).
type Server struct {
	cmd       *exec.Cmd
	out       io.Writer   // where the children's output goes: the log file and recent
	recent    *tailBuffer // the children's latest output
	logFile   *os.File
	ui        *exec.Cmd // nil until WaitReady starts it
	uiExited  chan error
	opts      Options
	ports     ports
	configDir string
	tempDir   string // removed at Stop
	logPath   string
	exited    chan error
}

// Options configure a dev server.
type Options struct {
	Bin      string // temporal-server (FindServer)
	UIBin    string // chorus-temporal-ui (FindUI); needed when UIPort is set
	Port     int    // frontend gRPC port on 127.0.0.1
	HTTPPort int    // frontend HTTP API port on 127.0.0.1; 0 takes a free one
	UIPort   int    // web UI port; 0 runs headless
	DBFile   string // SQLite file to persist to; "" keeps everything in memory
	// ConfigDir receives the generated temporal-server.yaml and temporal-dynamicconfig.yaml;
	// "" means the directory of DBFile, or a temporary directory removed at Stop.
	ConfigDir string
	LogPath   string // file for the server's (and UI's) output; "" discards it
	Namespace string
	LogLevel  string // default "warn"
	// Retention of closed workflows in a namespace this server creates (default 24 h, what
	// `temporal server start-dev` gave).
	Retention time.Duration
	// DynamicConfig overrides the server's dynamic configuration, "KEY=VALUE" each (VALUE is
	// JSON: 1000, true, "text"); nil means DynamicConfig, the tuning Chorus runs with.
	DynamicConfig []string
}

// DynamicConfig is the dev server's dynamic configuration under Chorus (docs/development.md,
// "The dev server"; docs/performance.md has the measurements):
//
//   - history.transferProcessorMaxPollRPS: the dev server runs one history shard, and each
//     shard's transfer queue, which hands every workflow start and every activity to matching,
//     reads at most 20 times a second by default. That cap, not the work, sets the floor of a
//     regular activity or a child start (tens of ms each) and caps the server near 20 dispatches
//     a second. 1000 lifts it far above what one machine can feed.
//   - system.enableActivityEagerExecution: a workflow task that schedules an activity on its own
//     task queue gets the activity back in the answer to its completion, to run at once, instead
//     of through the transfer queue and matching. Writes stay regular activities (durable,
//     scheduled only once their update is accepted) and cost about what a local one does.
//   - matching.numTaskqueue{Read,Write}Partitions: one partition per task queue. With the default
//     four and the few pollers of one worker process, a task often lands on a partition nobody
//     polls and waits to be forwarded (at most 10 forwards a second by default), which shows as
//     multi-second tails under concurrent load.
//
// deploy/temporal-dynamicconfig.yaml sets the first two for self-hosted servers. A later value
// of the same key wins, so appending overrides (the bench's --dynamic-config flag does).
var DynamicConfig = []string{
	"history.transferProcessorMaxPollRPS=1000",
	"system.enableActivityEagerExecution=true",
	"matching.numTaskqueueReadPartitions=1",
	"matching.numTaskqueueWritePartitions=1",
}

// Tool is a binary built from one of the repository's tool modules.
type Tool struct {
	Env    string // environment variable naming a binary to use instead
	Module string // directory of the module under the repository root
	Pkg    string // the tool's package, as go.mod's tool directive names it
	What   string // for messages
}

var (
	// ServerTool is temporal-server, pinned in tools/server/go.mod.
	ServerTool = Tool{Env: "CHORUS_TEMPORAL_SERVER_BIN", Module: "tools/server", Pkg: "go.temporal.io/server/cmd/server",
		What: "temporal-server " + Version}
	// CLITool is the Temporal CLI (v1.5.1, tools/go.mod): operator commands (workflow show, list,
	// reset; operator search-attribute create; worker deployment), not a server.
	CLITool = Tool{Env: "CHORUS_TEMPORAL_CLI_BIN", Module: "tools", Pkg: "github.com/temporalio/cli/cmd/temporal",
		What: "the Temporal CLI"}
	// UITool is the Temporal web UI with Chorus's Host check (tools/ui).
	UITool = Tool{Env: "CHORUS_TEMPORAL_UI_BIN", Module: "tools/ui",
		Pkg: "github.com/chorus-dev/chorus/tools/ui/cmd/chorus-temporal-ui", What: "the Temporal web UI"}
)

// FindServer returns the path of temporal-server: $CHORUS_TEMPORAL_SERVER_BIN, else the binary
// pinned by tools/server (built through the Go module proxy on first use, which takes a few
// minutes; progress hears why it waits).
func FindServer(ctx context.Context, progress io.Writer) (string, error) {
	return Find(ctx, ServerTool, progress)
}

// FindUI returns the path of the Temporal web UI binary: $CHORUS_TEMPORAL_UI_BIN, else the one
// tools/ui builds.
func FindUI(ctx context.Context, progress io.Writer) (string, error) {
	return Find(ctx, UITool, progress)
}

// Find returns the path of t: the binary its environment variable names, else the one its tool
// module builds (go tool -n, which builds it into the Go build cache when missing).
func Find(ctx context.Context, t Tool, progress io.Writer) (string, error) {
	if p := os.Getenv(t.Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", t.Env, p, err)
		}
		return p, nil
	}
	dir, ok := findModule(t.Module)
	if !ok {
		return "", fmt.Errorf("%s not found: run chorus from the repository (it builds the one pinned in %s), "+
			"set %s to a binary, or set TEMPORAL_ADDRESS to use a running Temporal server", t.What, t.Module, t.Env)
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { // say why we wait only if the build cache does not answer within seconds
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			fmt.Fprintf(progress, "chorus: building %s pinned in %s through the Go module proxy "+
				"(first run only; a few minutes)...\n", t.What, dir)
		}
	}()
	p, err := toolPath(ctx, dir, t.Pkg)
	close(done)
	if err != nil {
		return "", fmt.Errorf("build %s from %s: %w", t.What, dir, err)
	}
	if d := time.Since(start); d > 15*time.Second {
		fmt.Fprintf(progress, "chorus: %s ready after %s\n", t.What, d.Round(time.Second))
	}
	return p, nil
}

// toolPath asks the go command for a tool module's binary, building it when the build cache
// does not have it yet.
func toolPath(ctx context.Context, moduleDir, pkg string) (string, error) {
	c := exec.CommandContext(ctx, "go", "-C", moduleDir, "tool", "-n", pkg)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	p := strings.TrimSpace(string(out))
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// findModule looks for module/go.mod in the working directory and its parents.
func findModule(module string) (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, module, "go.mod")); err == nil {
			return filepath.Join(dir, module), true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Start launches temporal-server on a configuration generated for o (and the UI when o.UIPort
// is set), first adding to o.DBFile the tables an older dev server's file lacks (UpgradeSchema). Call WaitReady before using it (it registers the namespace and Chorus's search
// attributes) and Stop when done.
func Start(o Options) (*Server, error) {
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.Namespace == "" {
		o.Namespace = workflows.Namespace
	}
	if o.Retention == 0 {
		o.Retention = 24 * time.Hour
	}
	if o.UIPort != 0 && o.UIBin == "" {
		return nil, errors.New("devserver: UIPort is set but UIBin is not (FindUI)")
	}
	for _, p := range []int{o.Port, o.HTTPPort, o.UIPort} {
		if p == 0 {
			continue
		}
		if err := PortFree(p); err != nil {
			return nil, err
		}
	}
	if o.DBFile != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := UpgradeSchema(ctx, o.DBFile)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("devserver: %w", err)
		}
	}
	// temporal-server runs in the config dir, so every path it is given must be absolute (a
	// relative --data-dir such as `chorus dev`'s default .chorus would be resolved twice).
	for _, p := range []*string{&o.ConfigDir, &o.DBFile} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("devserver: %w", err)
		}
		*p = abs
	}
	s := &Server{opts: o, logPath: o.LogPath, exited: make(chan error, 1)}
	s.configDir = o.ConfigDir
	if s.configDir == "" && o.DBFile != "" {
		s.configDir = filepath.Dir(o.DBFile)
	}
	if s.configDir == "" {
		dir, err := os.MkdirTemp("", "chorus-temporal-")
		if err != nil {
			return nil, err
		}
		s.configDir, s.tempDir = dir, dir
	}
	var err error
	prev := ports{}
	if s.tempDir == "" {
		prev = previousPorts(s.configDir)
	}
	if s.ports, err = allocatePorts(o.Port, o.HTTPPort, prev); err != nil {
		s.cleanup()
		return nil, err
	}
	s.recent = &tailBuffer{max: 64 << 10}
	s.out = s.recent
	if o.LogPath != "" {
		f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			s.cleanup()
			return nil, err
		}
		s.logFile, s.out = f, io.MultiWriter(f, s.recent)
	}
	if err := s.launch(); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// launch writes the configuration for s.ports and starts temporal-server on it.
func (s *Server) launch() error {
	cfg, err := writeConfig(s.configDir, s.opts, s.ports)
	if err != nil {
		return fmt.Errorf("write the Temporal dev server's configuration: %w", err)
	}
	cmd := exec.Command(s.opts.Bin, "--config-file", cfg, "--allow-no-auth", "start")
	cmd.Dir = s.configDir
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the Temporal dev server (%s): %w", s.opts.Bin, err)
	}
	exited := make(chan error, 1)
	s.cmd, s.exited = cmd, exited
	go func() { exited <- cmd.Wait() }()
	return nil
}

// lostPortRace says whether the server exited because another process took one of the ports
// chosen for it (other than the frontend's, which the caller chose) between the check that it
// was free and the server's bind: the ports are then chosen again.
func (s *Server) lostPortRace() bool {
	text := s.recent.String()
	return strings.Contains(text, "bind: address already in use") &&
		!strings.Contains(text, fmt.Sprintf("127.0.0.1:%d: bind: address already in use", s.ports.Frontend))
}

// startUI launches the UI once the frontend answers (a UI started before it would find its
// gRPC connection backing off for seconds after the server is up).
func (s *Server) startUI() error {
	ui := exec.Command(s.opts.UIBin, "--ip", "127.0.0.1", "--port", strconv.Itoa(s.opts.UIPort),
		"--temporal-address", s.Address(), "--namespace", s.opts.Namespace)
	ui.Stdout, ui.Stderr = s.out, s.out
	ui.SysProcAttr = childProcAttr()
	if err := ui.Start(); err != nil {
		return fmt.Errorf("start the Temporal UI (%s): %w", s.opts.UIBin, err)
	}
	s.ui, s.uiExited = ui, make(chan error, 1)
	go func() { s.uiExited <- ui.Wait() }()
	return nil
}

// Address is the frontend's gRPC host:port.
func (s *Server) Address() string { return hostPort(s.ports.Frontend) }

// HTTPAddress is the frontend's HTTP API host:port.
func (s *Server) HTTPAddress() string { return hostPort(s.ports.HTTP) }

// UIAddress is the web UI's host:port ("" when headless).
func (s *Server) UIAddress() string {
	if s.opts.UIPort == 0 {
		return ""
	}
	return hostPort(s.opts.UIPort)
}

// Namespace is the namespace WaitReady registers.
func (s *Server) Namespace() string { return s.opts.Namespace }

// LogPath is where the server logs ("" when discarded).
func (s *Server) LogPath() string { return s.logPath }

// ConfigDir holds the generated configuration files.
func (s *Server) ConfigDir() string { return s.configDir }

// WaitReady blocks until the frontend answers and Chorus's namespace and search attributes
// are registered and usable (a visibility query naming every attribute succeeds), until the
// child exits, or until timeout passes. A namespace that already exists keeps its retention.
func (s *Server) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A child that lost a race for one of its other ports (another process took it between
	// allocatePorts and the bind) exits, sometimes after its gRPC port already accepted a
	// connection: relaunch it on fresh ports, whichever step noticed.
	var c client.Client
	for attempt := 1; ; attempt++ {
		var err error
		if c, err = s.dialFrontend(ctx); err == nil {
			break
		}
		if !errors.Is(err, errExited) || attempt == 3 || !s.lostPortRace() {
			return err
		}
		if s.ports, err = allocatePorts(s.opts.Port, s.opts.HTTPPort, ports{}); err != nil {
			return err
		}
		s.recent.Reset()
		if err := s.launch(); err != nil {
			return err
		}
	}
	defer c.Close()
	what := "register namespace " + s.opts.Namespace
	for {
		_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: s.opts.Namespace, WorkflowExecutionRetentionPeriod: durationpb.New(s.opts.Retention),
			Description: "Chorus (created by chorus dev)"})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			break
		}
		if err := s.waitStep(ctx, what+" ("+err.Error()+")"); err != nil {
			return err
		}
	}
	what = "register Chorus's search attributes"
	for {
		err := workflows.EnsureSearchAttributes(ctx, c, s.opts.Namespace)
		if err == nil {
			break
		}
		if err := s.waitStep(ctx, what+" ("+err.Error()+")"); err != nil {
			return err
		}
	}
	// The frontend refuses workflows with an attribute its namespace cache does not map yet.
	query := workflows.SearchAttributeReadyQuery()
	for {
		_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.opts.Namespace, Query: query})
		if err == nil {
			break
		}
		if err := s.waitStep(ctx, "see the search attributes ("+err.Error()+")"); err != nil {
			return err
		}
	}
	if s.opts.UIPort != 0 && s.ui == nil {
		if err := s.startUI(); err != nil {
			return err
		}
		for {
			conn, err := net.DialTimeout("tcp", s.UIAddress(), 500*time.Millisecond)
			if err == nil {
				_ = conn.Close()
				break
			}
			select {
			case err := <-s.uiExited:
				s.uiExited <- err
				return fmt.Errorf("the Temporal UI exited (%v); its last lines:\n%s", err, lastLines(s.recent.String(), 15))
			default:
			}
			if err := s.waitStep(ctx, "serve the UI on "+s.UIAddress()); err != nil {
				return err
			}
		}
	}
	return nil
}

// dialFrontend waits until the frontend accepts connections and a client can dial it.
func (s *Server) dialFrontend(ctx context.Context) (client.Client, error) {
	addr := s.Address()
	for {
		conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			break
		}
		if err := s.waitStep(ctx, "listen on "+addr); err != nil {
			return nil, err
		}
	}
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: s.opts.Namespace,
			Logger: tlog.NewStructuredLogger(discardLogger())})
		if err == nil {
			return c, nil
		}
		if err := s.waitStep(ctx, "answer on "+addr); err != nil {
			return nil, err
		}
	}
}

// waitStep waits a moment before the next attempt at what, failing when the server exits or
// ctx ends first.
func (s *Server) waitStep(ctx context.Context, what string) error {
	select {
	case err := <-s.exited:
		s.exited <- err
		return fmt.Errorf("%w (%v); its last lines:\n%s", errExited, err, lastLines(s.recent.String(), 15))
	case <-ctx.Done():
		return fmt.Errorf("the Temporal dev server did not %s in time; see %s", what, s.logPath)
	case <-time.After(200 * time.Millisecond): // poll interval
		return nil
	}
}

// Stop asks the UI and the server to shut down (SIGINT, so the server closes its database
// cleanly) and kills what has not exited within grace. It removes a temporary config dir.
func (s *Server) Stop(grace time.Duration) error {
	defer s.cleanup()
	if s.ui != nil {
		select {
		case err := <-s.uiExited:
			s.uiExited <- err
		default:
			_ = s.ui.Process.Signal(syscall.SIGINT)
			select {
			case err := <-s.uiExited:
				s.uiExited <- err
			case <-time.After(grace):
				_ = s.ui.Process.Kill()
			}
		}
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-s.exited:
		s.exited <- err
		return nil
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		err := <-s.exited
		s.exited <- err
		return fmt.Errorf("the Temporal dev server did not stop within %s and was killed", grace)
	}
}

func (s *Server) cleanup() {
	if s.logFile != nil {
		_ = s.logFile.Close()
	}
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// errExited: the server process ended.
var errExited = errors.New("the Temporal dev server exited")

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func (t *tailBuffer) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = t.b[:0]
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PortFree checks that port can be listened on at 127.0.0.1.
func PortFree(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d is in use (another chorus dev or Temporal server?); stop it or pick other ports "+
			"with --temporal-port and --ui-port", port)
	}
	return ln.Close()
}

// FreePort returns a port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
