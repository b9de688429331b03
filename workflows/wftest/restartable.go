package wftest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// RestartableServer is a Temporal dev server of one test that can be stopped and started again
// on the same port and the same database file, so workflows, their histories and Chorus's
// search attributes survive a restart. Its methods are safe to call from any goroutine.
type RestartableServer struct {
	opts   devserver.Options
	client client.Client

	mu  sync.Mutex
	dev *devserver.Server // nil while stopped
}

// restartTimeout bounds a start: the dev server opens its file and is ready in a few seconds.
const restartTimeout = time.Minute

// Restartable starts a file-backed, headless dev server for this test (a free port, its
// SQLite file in t.TempDir(), Chorus's search attributes registered by the same flags
// devserver.Start always passes) and a client of Chorus's namespace. Cleanup closes the client
// and stops the server. Without temporal-server it skips, or fails when CI=true, like Server.
// The server logs to temporal.log in t.TempDir(), or to CHORUS_TEST_TEMPORAL_LOG when set.
func Restartable(t testing.TB) *RestartableServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold build of the CLI takes minutes
	defer cancel()
	bin, err := devserver.FindServer(ctx, os.Stderr)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("temporal-server unavailable under CI: %v", err)
		}
		t.Skipf("temporal-server unavailable (%v); run `make test`, or set CHORUS_TEMPORAL_SERVER_BIN", err)
	}
	port, err := devserver.FreePort()
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	dir := t.TempDir()
	logPath := os.Getenv("CHORUS_TEST_TEMPORAL_LOG")
	if logPath == "" {
		logPath = filepath.Join(dir, "temporal.log")
	}
	s := &RestartableServer{opts: devserver.Options{Bin: bin, Port: port, DBFile: filepath.Join(dir, "temporal.db"),
		LogPath: logPath, LogLevel: "warn"}}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start the restartable Temporal dev server: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for {
		s.client, err = client.DialContext(ctx, client.Options{HostPort: s.Address(), Namespace: workflows.Namespace,
			Logger: tlog.NewStructuredLogger(workflows.QuietOutcomes(quiet)), DataConverter: workflows.DataConverter()})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // poll interval until the frontend answers
	}
	if err != nil {
		t.Fatalf("dial the restartable Temporal dev server: %v", err)
	}
	t.Cleanup(s.client.Close) // runs before the server's Stop
	return s
}

// Client is a client of Chorus's namespace on this server. It is the same client across
// restarts: while the server is down its calls fail or wait (the SDK retries unavailable
// errors until the call's deadline), and its connection comes back by itself once the server
// is up again (gRPC reconnects with a backoff of at most 10 s; Start waits for it).
func (s *RestartableServer) Client() client.Client { return s.client }

// Address is the server's frontend host:port; it does not change across restarts.
func (s *RestartableServer) Address() string {
	return fmt.Sprintf("127.0.0.1:%d", s.opts.Port)
}

// LogPath is the file the server logs to.
func (s *RestartableServer) LogPath() string { return s.opts.LogPath }

// Stop shuts the server down (SIGINT, so it closes its database file cleanly; killed after
// 10 s). Workflows and their state stay in the file. Stopping a stopped server does nothing; the
// error says the server had to be killed.
func (s *RestartableServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev == nil {
		return nil
	}
	err := s.dev.Stop(10 * time.Second)
	s.dev = nil
	return err
}

// Start starts the stopped server again on the same port and file and returns once the
// frontend listens and, when the client exists, once the client's calls reach the namespace
// again. Starting a running server does nothing. It fails when the port is taken, the server
// exits, or ctx or a minute ends first.
func (s *RestartableServer) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	var dev *devserver.Server
	// The port was just released by the old process; retry briefly should it not be free yet.
	for {
		var err error
		dev, err = devserver.Start(s.opts)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start the Temporal dev server again: %w", err)
		case <-time.After(100 * time.Millisecond): // poll interval
		}
	}
	if err := dev.WaitReady(ctx, restartTimeout); err != nil {
		_ = dev.Stop(time.Second)
		return err
	}
	s.dev = dev
	if s.client == nil { // the first start: Restartable dials next
		return nil
	}
	return s.waitServing(ctx)
}

// Restart stops the server and starts it again (Stop, then Start).
func (s *RestartableServer) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start(ctx)
}

// waitServing polls until the client reaches the namespace through the restarted server.
func (s *RestartableServer) waitServing(ctx context.Context) error {
	var err error
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = s.client.WorkflowService().DescribeNamespace(callCtx,
			&workflowservice.DescribeNamespaceRequest{Namespace: workflows.Namespace})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("the client did not reach the restarted Temporal dev server: %w", ctx.Err()), err)
		case <-time.After(100 * time.Millisecond): // poll interval
		}
	}
}
