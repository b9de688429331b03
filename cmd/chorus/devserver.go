package main

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

// temporalDev is the official Temporal dev server (the CLI's `server start-dev`) run as a child
// process, persisting to a SQLite file in the data dir, with its web UI.
type temporalDev struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan error
}

// findTemporalCLI returns the path of the Temporal CLI: $CHORUS_TEMPORAL_BIN, else the binary
// pinned by the tools/ module (built through the Go module proxy on first use, which takes a few
// minutes), else `temporal` on PATH.
func findTemporalCLI(ctx context.Context, progress io.Writer) (string, error) {
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

// startTemporalDev launches the dev server on 127.0.0.1:port with its UI on uiPort, persisting
// to dataDir/temporal.db and logging to dataDir/temporal.log, with Chorus's search attributes
// pre-registered. The child runs in its own process group so that Ctrl-C reaches chorus, which
// then stops it in order; on Linux it is also killed if chorus dies.
func startTemporalDev(bin, dataDir string, port, uiPort int) (*temporalDev, error) {
	for _, p := range []int{port, uiPort} {
		if err := portFree(p); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(dataDir, "temporal.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--ui-port", strconv.Itoa(uiPort),
		"--db-filename", filepath.Join(dataDir, "temporal.db"),
		"--namespace", workflows.Namespace,
		"--log-level", "warn",
	}
	args = append(args, workflows.SearchAttributeFlags()...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start Temporal dev server: %w", err)
	}
	t := &temporalDev{cmd: cmd, logPath: logPath, exited: make(chan error, 1)}
	go func() {
		t.exited <- cmd.Wait()
		_ = logFile.Close()
	}()
	return t, nil
}

// waitReady blocks until the frontend accepts connections, the child exits, or timeout passes.
func (t *temporalDev) waitReady(ctx context.Context, addr string, timeout time.Duration) error {
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

// stop asks the dev server to shut down (SIGINT, so it closes its database cleanly) and kills
// it if it has not exited within grace.
func (t *temporalDev) stop(grace time.Duration) error {
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

func portFree(port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d is in use (another chorus dev or Temporal server?); stop it or pick other ports "+
			"with --temporal-port and --ui-port", port)
	}
	return ln.Close()
}

func tail(path string, n int) string {
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
