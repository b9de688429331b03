// Package devserver runs the official Temporal dev server (the CLI's `server start-dev`) as a
// child process: for `chorus dev` (persistent, with its web UI) and for integration tests
// (in memory, headless). The child runs in its own process group and, on Linux, is killed when
// its parent dies, so neither a Ctrl-C nor a crashed test leaves a server behind.
package devserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/workflows"
)

// Server is a running dev server.
type Server struct {
	cmd     *exec.Cmd
	addr    string
	logPath string
	exited  chan error
}

// Options configure a dev server.
type Options struct {
	Bin       string // the Temporal CLI
	Port      int    // frontend gRPC port on 127.0.0.1
	UIPort    int    // web UI port; 0 runs headless
	DBFile    string // SQLite file to persist to; "" keeps everything in memory
	LogPath   string // file for the server's output; "" discards it
	Namespace string
	LogLevel  string // default "warn"
	// DynamicConfig overrides the server's dynamic configuration, "KEY=VALUE" each (VALUE is
	// JSON: 1000, true, "text"); nil means DynamicConfig, the tuning Chorus runs with.
	DynamicConfig []string
}

// DynamicConfig is the dev server's dynamic configuration under Chorus (README, "Configuration";
// docs/performance.md has the measurements):
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

// FindCLI returns the path of the Temporal CLI: $CHORUS_TEMPORAL_BIN, else the binary
// pinned by the tools/ module (built through the Go module proxy on first use, which takes a few
// minutes), else `temporal` on PATH.
func FindCLI(ctx context.Context, progress io.Writer) (string, error) {
	if p := os.Getenv("CHORUS_TEMPORAL_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CHORUS_TEMPORAL_BIN=%s: %w", p, err)
		}
		return p, nil
	}
	if dir, ok := findToolsModule(); ok {
		start := time.Now()
		done := make(chan struct{})
		go func() { // say why we wait only if the build cache does not answer at once
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				fmt.Fprintf(progress, "chorus: building the Temporal CLI pinned in %s through the Go module proxy "+
					"(first run only; a few minutes)...\n", dir)
			}
		}()
		p, err := toolPath(ctx, dir)
		close(done)
		if err != nil {
			return "", fmt.Errorf("build the Temporal CLI from %s: %w", dir, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			fmt.Fprintf(progress, "chorus: Temporal CLI ready after %s\n", d.Round(time.Second))
		}
		return p, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", errors.New("no Temporal CLI found: run chorus from the repository root (it builds the one pinned " +
		"in tools/), set CHORUS_TEMPORAL_BIN, put `temporal` on PATH, or set TEMPORAL_ADDRESS to use a running server")
}

// toolPath asks the go command for the tools module's temporal binary, building it when the
// build cache does not have it yet.
func toolPath(ctx context.Context, toolsDir string) (string, error) {
	c := exec.CommandContext(ctx, "go", "-C", toolsDir, "tool", "-n", "temporal")
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

// findToolsModule looks for tools/go.mod (pinning the Temporal CLI) in the working directory
// and its parents.
func findToolsModule() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		gomod := filepath.Join(dir, "tools", "go.mod")
		if b, err := os.ReadFile(gomod); err == nil && strings.Contains(string(b), "github.com/temporalio/cli") {
			return filepath.Join(dir, "tools"), true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Start launches a dev server with Chorus's search attributes pre-registered. Call WaitReady
// before using it and Stop when done.
func Start(o Options) (*Server, error) {
	ports := []int{o.Port}
	if o.UIPort != 0 {
		ports = append(ports, o.UIPort)
	}
	for _, p := range ports {
		if err := PortFree(p); err != nil {
			return nil, err
		}
	}
	var out io.Writer = io.Discard
	var logFile *os.File
	if o.LogPath != "" {
		f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		logFile, out = f, f
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.Namespace == "" {
		o.Namespace = workflows.Namespace
	}
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(o.Port),
		"--namespace", o.Namespace, "--log-level", o.LogLevel}
	if o.UIPort != 0 {
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort))
	} else {
		args = append(args, "--headless")
	}
	if o.DBFile != "" {
		args = append(args, "--db-filename", o.DBFile)
	}
	args = append(args, workflows.SearchAttributeFlags()...)
	dc := o.DynamicConfig
	if dc == nil {
		dc = DynamicConfig
	}
	for _, kv := range dc {
		args = append(args, "--dynamic-config-value", kv)
	}
	cmd := exec.Command(o.Bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("start the Temporal dev server: %w", err)
	}
	s := &Server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)), logPath: o.LogPath, exited: make(chan error, 1)}
	go func() {
		s.exited <- cmd.Wait()
		if logFile != nil {
			_ = logFile.Close()
		}
	}()
	return s, nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return s.addr }

// LogPath is where the server logs ("" when discarded).
func (s *Server) LogPath() string { return s.logPath }

// WaitReady blocks until the frontend accepts connections, the child exits, or timeout passes.
func (t *Server) WaitReady(ctx context.Context, timeout time.Duration) error {
	addr := t.addr
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case err := <-t.exited:
			t.exited <- err
			return fmt.Errorf("the Temporal dev server exited (%v); last lines of %s:\n%s", err, t.logPath, tail(t.logPath, 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Temporal dev server did not listen on %s within %s; see %s", addr, timeout, t.logPath)
		}
	}
}

// Stop asks the dev server to shut down (SIGINT, so it closes its database cleanly) and kills
// it if it has not exited within grace.
func (t *Server) Stop(grace time.Duration) error {
	select {
	case err := <-t.exited:
		t.exited <- err
		return nil
	default:
	}
	_ = t.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-t.exited:
		return nil
	case <-time.After(grace):
		_ = t.cmd.Process.Kill()
		<-t.exited
		return fmt.Errorf("the Temporal dev server did not stop within %s and was killed", grace)
	}
}

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

func tail(path string, n int) string {
	if path == "" {
		return "(no log kept)"
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
