// Package wftest runs the official Temporal dev server (the CLI pinned in tools/) for
// integration tests, once per test binary.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(wftest.Main(m)) }
//
// and Server(t) in tests. Without a Temporal CLI the tests skip, except under CI (CI=true),
// where they fail: a skipped integration test proves nothing.
package wftest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/chorus-dev/chorus/workflows"
)

var (
	once    sync.Once
	server  *testsuite.DevServer
	initErr error
)

// Main runs the tests and stops the dev server afterwards; return its result from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if server != nil {
		_ = server.Stop()
	}
	return code
}

// Server returns the shared dev server, starting it on first use.
func Server(t testing.TB) *testsuite.DevServer {
	t.Helper()
	once.Do(func() {
		bin, err := Binary()
		if err != nil {
			initErr = err
			return
		}
		var attrs []temporal.SearchAttributeUpdate
		for _, k := range workflows.SearchAttributeKeys {
			attrs = append(attrs, k.ValueSet(""))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		server, initErr = testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
			ExistingPath:     bin,
			LogLevel:         "error",
			SearchAttributes: temporal.NewSearchAttributes(attrs...),
			ClientOptions: &client.Options{Namespace: workflows.Namespace,
				Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))},
			Stdout: os.Stderr,
			Stderr: os.Stderr,
		})
	})
	if initErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Temporal dev server unavailable under CI: %v", initErr)
		}
		t.Skipf("Temporal dev server unavailable (%v); run `make test`, or set CHORUS_TEMPORAL_BIN", initErr)
	}
	return server
}

// Binary finds the Temporal CLI: $CHORUS_TEMPORAL_BIN, else the one pinned in tools/ (asking
// the go command, which builds it on first use).
func Binary() (string, error) {
	if p := os.Getenv("CHORUS_TEMPORAL_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("CHORUS_TEMPORAL_BIN: %w", err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		tools := filepath.Join(dir, "tools")
		if _, err := os.Stat(filepath.Join(tools, "go.mod")); err == nil {
			out, err := exec.Command("go", "-C", tools, "tool", "-n", "temporal").Output()
			if err != nil {
				return "", fmt.Errorf("go -C %s tool -n temporal: %w", tools, err)
			}
			return strings.TrimSpace(string(out)), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no tools/go.mod above the test directory and CHORUS_TEMPORAL_BIN unset")
		}
		dir = parent
	}
}

// serverLog is where the dev server's own log goes: nowhere, unless CHORUS_TEST_TEMPORAL_LOG=1
// (it logs every aborted update of the race tests as an error, which is expected there).
func serverLog() io.Writer {
	if os.Getenv("CHORUS_TEST_TEMPORAL_LOG") == "1" {
		return os.Stderr
	}
	return io.Discard
}
