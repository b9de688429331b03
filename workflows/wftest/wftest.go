// Package wftest runs the official Temporal dev server (temporal-server, pinned in tools/server) for
// integration tests, once per test binary, in memory and headless.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(wftest.Main(m)) }
//
// and Server(t) in tests. Without temporal-server the tests skip, except under CI (CI=true),
// where they fail: a skipped integration test proves nothing. Set CHORUS_TEST_TEMPORAL_LOG to
// a file path to keep the server's log.
package wftest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// Temporal is the shared dev server and a client of it.
type Temporal struct {
	dev    *devserver.Server
	client client.Client
}

// Client is a client of the default namespace.
func (s *Temporal) Client() client.Client { return s.client }

var (
	once    sync.Once
	server  *Temporal
	initErr error
)

// Main runs the tests and stops the dev server afterwards; return its result from TestMain.
// (Should the test binary crash instead, the server dies with it.)
func Main(m *testing.M) int {
	code := m.Run()
	if server != nil {
		server.client.Close()
		_ = server.dev.Stop(10 * time.Second)
	}
	return code
}

// Server returns the shared dev server, starting it on first use.
func Server(t testing.TB) *Temporal {
	t.Helper()
	once.Do(func() { server, initErr = start() })
	if initErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Temporal dev server unavailable under CI: %v", initErr)
		}
		t.Skipf("Temporal dev server unavailable (%v); run `make test`, or set CHORUS_TEMPORAL_SERVER_BIN", initErr)
	}
	return server
}

func start() (*Temporal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold build of the CLI takes minutes
	defer cancel()
	bin, err := devserver.FindServer(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	// A port found free can be taken by another process before the dev server binds it (on a
	// machine where other test runs start servers too); then the server exits and what answers
	// on the port is not Temporal. Each attempt gets a fresh port and a minute to answer.
	for attempt := 1; ; attempt++ {
		t, err := startOn(ctx, bin)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return t, err
		}
		fmt.Fprintf(os.Stderr, "wftest: Temporal dev server attempt %d failed (%v); trying another port\n", attempt, err)
	}
}

func startOn(ctx context.Context, bin string) (*Temporal, error) {
	port, err := devserver.FreePort()
	if err != nil {
		return nil, err
	}
	dev, err := devserver.Start(devserver.Options{Bin: bin, Port: port, LogPath: os.Getenv("CHORUS_TEST_TEMPORAL_LOG"), LogLevel: "error"})
	if err != nil {
		return nil, err
	}
	if err := dev.WaitReady(ctx, time.Minute); err != nil {
		_ = dev.Stop(time.Second)
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dialCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var c client.Client
	for {
		c, err = client.DialContext(dialCtx, client.Options{HostPort: dev.Address(), Namespace: workflows.Namespace,
			Logger: tlog.NewStructuredLogger(workflows.QuietOutcomes(quiet)), DataConverter: workflows.DataConverter()})
		if err == nil || dialCtx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		_ = dev.Stop(time.Second)
		return nil, fmt.Errorf("dial the dev server on port %d: %w", port, err)
	}
	return &Temporal{dev: dev, client: c}, nil
}
