package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/ops"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// upgradeFixture is testdata/upgrade-1.29/fixture.json: the key of the agent the recorder drove
// and the task it claimed.
type upgradeFixture struct {
	Key  string `json:"key"`
	Task string `json:"task"`
}

// docs/upgrading.md "Upgrading Temporal": a data dir made by the dev server of earlier Chorus releases
// (the Temporal CLI v1.5.1's `server start-dev`, server 1.29.1, started as they started it)
// keeps working under temporal-server 1.32.1: a task claimed before the upgrade takes its next
// command after it, a new task is created and claimed, and `chorus ops check` finds workflows
// and rows agreeing. PredatesServer tells such a file apart (chorus dev then says what it lacks).
// The old data dir is recorded once (make record-upgrade-data, upgrade_record_test.go) into
// testdata/upgrade-1.29, so this test needs no CLI; it works on a copy.
func TestOldDevServerDataUpgradesInPlace(t *testing.T) {
	ctx := context.Background()
	findCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	bin, err := devserver.FindServer(findCtx, os.Stderr)
	cancel()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no temporal-server under CI: %v", err)
		}
		t.Skipf("no temporal-server (%v)", err)
	}
	dir := t.TempDir()
	dbFile := filepath.Join(dir, "temporal.db")
	fx := copyUpgradeFixture(t, filepath.Join("testdata", "upgrade-1.29"), dir)
	st := storetest.OpenDSN(t, filepath.Join(dir, "chorus.db"))
	task := fx.Task

	predates, err := devserver.PredatesServer(ctx, dbFile)
	require.NoError(t, err)
	require.True(t, predates, "a file of the 1.29 dev server predates %s", devserver.Version)

	// After: temporal-server 1.32.1 on the same file.
	port, err := devserver.FreePort()
	require.NoError(t, err)
	s, err := devserver.Start(devserver.Options{Bin: bin, Port: port, DBFile: dbFile, LogPath: filepath.Join(dir, "temporal.log")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(20 * time.Second) })
	require.NoError(t, s.WaitReady(ctx, 2*time.Minute))
	withChorus(t, st, s.Address(), fx.Key, func(a *mcpclient.Agent) {
		var out struct{ Status string }
		require.NoError(t, a.Call(ctx, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, &out))
		require.Equal(t, "in_progress", out.Status, "the task claimed before the upgrade takes its next command")
		var project struct{ UUID string }
		require.NoError(t, a.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "after"}, &project))
		var created struct{ Tasks []struct{ UUID string } }
		require.NoError(t, a.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
			"tasks": []map[string]any{{"title": "Made on 1.32", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}},
			&created))
		require.NoError(t, a.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": created.Tasks[0].UUID}, nil))

		// ops check queries each workflow's state, so it runs while the worker does.
		tc, err := client.Dial(client.Options{HostPort: s.Address(), Namespace: workflows.Namespace,
			DataConverter: workflows.DataConverter()})
		require.NoError(t, err)
		defer tc.Close()
		findings, err := (&ops.Ops{Store: st, Flows: workflows.NewClient(tc, workflows.TaskQueue, st)}).Check(ctx, "")
		require.NoError(t, err)
		require.Empty(t, findings, "ops check after the upgrade: %v", findings)

		// Schedules can be created (as workers create the pruning schedule): 1.32.1 refuses every
		// schedule create on a 1.29 file until devserver.UpgradeSchema adds its missing table.
		schedCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		h, err := tc.ScheduleClient().Create(schedCtx, client.ScheduleOptions{ID: "upgrade-check",
			Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
			Action: &client.ScheduleWorkflowAction{ID: "upgrade-check", Workflow: workflows.PruneWorkflowName, TaskQueue: "upgrade-check"},
			Paused: true})
		require.NoError(t, err, "create a schedule after the upgrade")
		require.NoError(t, h.Delete(schedCtx))
	})
}

// copyUpgradeFixture checks the recorded files in fixture against its SHA256SUMS (recorded data
// never changes), decompresses temporal.db and chorus.db into dir and returns fixture.json.
func copyUpgradeFixture(t *testing.T, fixture, dir string) upgradeFixture {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(fixture, "SHA256SUMS"))
	require.NoError(t, err, "record the fixture with make record-upgrade-data")
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		require.True(t, ok, "malformed SHA256SUMS line %q", line)
		b, err := os.ReadFile(filepath.Join(fixture, name))
		require.NoError(t, err)
		got := sha256.Sum256(b)
		require.Equal(t, sum, hex.EncodeToString(got[:]), "%s/%s differs from its SHA256SUMS: recorded data is never edited", fixture, name)
		if gz, ok := strings.CutSuffix(name, ".gz"); ok {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			require.NoError(t, err, name)
			plain, err := io.ReadAll(zr)
			require.NoError(t, err, name)
			require.NoError(t, os.WriteFile(filepath.Join(dir, gz), plain, 0o644))
		}
	}
	b, err := os.ReadFile(filepath.Join(fixture, "fixture.json"))
	require.NoError(t, err)
	var fx upgradeFixture
	require.NoError(t, json.Unmarshal(b, &fx))
	require.NotEmpty(t, fx.Key)
	require.NotEmpty(t, fx.Task)
	return fx
}

// waitTemporal waits until a Temporal frontend answers at addr.
func waitTemporal(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: workflows.Namespace})
		if err == nil {
			_, err = c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: workflows.Namespace})
			c.Close()
			if err == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Temporal at %s did not answer: %v", addr, err)
		case <-time.After(200 * time.Millisecond): // poll interval
		}
	}
}

// withChorus runs a Chorus server (api and worker) against the Temporal at addr while f drives
// it through MCP as the agent with key, and stops it afterwards.
func withChorus(t *testing.T, st *store.Store, addr, key string, f func(*mcpclient.Agent)) {
	t.Helper()
	port, err := devserver.FreePort()
	require.NoError(t, err)
	cfg := serverConfig{role: roleAll, addr: fmt.Sprintf("127.0.0.1:%d", port), temporal: temporalConfig{address: addr, namespace: workflows.Namespace},
		temporalWait: time.Minute, taskQueue: workflows.TaskQueue}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- runServer(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), st, cfg, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("chorus did not start: %v", err)
	}
	a, err := connectAgent(context.Background(), "http://"+cfg.addr+"/api/mcp", key)
	require.NoError(t, err)
	f(a)
	_ = a.Close()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("chorus stopped with %v", err)
	}
}
