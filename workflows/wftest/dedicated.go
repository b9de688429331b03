package wftest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// Dedicated starts a dev server of this test alone (in memory, headless, on a free port), with
// Chorus's dynamic configuration plus dynamicConfig ("KEY=VALUE" each; a later value of a key
// wins), and returns a client of Chorus's namespace. Use it where a test needs the server tuned
// otherwise than the shared one, e.g. "limit.historyCount.suggestContinueAsNew=8" to make runs
// continue as new after a few events. Cleanup closes the client and stops the server. Without a
// temporal-server it skips, or fails when CI=true, like Server.
func Dedicated(t testing.TB, dynamicConfig ...string) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold build of temporal-server takes minutes
	defer cancel()
	bin, err := devserver.FindServer(ctx, os.Stderr)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("temporal-server unavailable under CI: %v", err)
		}
		t.Skipf("temporal-server unavailable (%v); run `make test`, or set CHORUS_TEMPORAL_SERVER_BIN", err)
	}
	var dev *devserver.Server
	for attempt := 1; ; attempt++ { // a port found free may be taken before the server binds it
		port, err := devserver.FreePort()
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		dev, err = devserver.Start(devserver.Options{Bin: bin, Port: port, LogPath: os.Getenv("CHORUS_TEST_TEMPORAL_LOG"),
			LogLevel: "error", DynamicConfig: append(append([]string{}, devserver.DynamicConfig...), dynamicConfig...)})
		if err == nil {
			if err = dev.WaitReady(ctx, time.Minute); err == nil {
				break
			}
			_ = dev.Stop(time.Second)
		}
		if attempt == 3 {
			t.Fatalf("start a dedicated Temporal dev server: %v", err)
		}
	}
	t.Cleanup(func() { _ = dev.Stop(10 * time.Second) })
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var c client.Client
	for {
		c, err = client.DialContext(ctx, client.Options{HostPort: dev.Address(), Namespace: workflows.Namespace,
			Logger: tlog.NewStructuredLogger(workflows.QuietOutcomes(quiet)), DataConverter: workflows.DataConverter()})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // poll interval until the frontend answers
	}
	if err != nil {
		t.Fatalf("dial the dedicated Temporal dev server: %v", err)
	}
	t.Cleanup(c.Close) // runs before the server's Stop
	return c
}
