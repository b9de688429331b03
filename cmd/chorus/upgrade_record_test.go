//go:build record

package main

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
	"github.com/chorus-dev/chorus/workflows/devserver"
)

// TestRecordOldDevServerData records the fixture TestOldDevServerDataUpgradesInPlace upgrades
// (make record-upgrade-data): the old dev server of earlier Chorus releases (the Temporal CLI
// v1.5.1's `server start-dev`, server 1.29.1, pinned in tools/go.mod, started as they started
// it) with one company whose agent created a project and a task and claimed it; then its
// temporal.db and Chorus's SQLite file, gzip-compressed, the agent's key and the task's uuid
// into testdata/upgrade-1.29, and their SHA256SUMS. Built only with -tags record, since it needs
// the CLI; it refuses to overwrite a recorded fixture.
func TestRecordOldDevServerData(t *testing.T) {
	ctx := context.Background()
	out := filepath.Join("testdata", "upgrade-1.29")
	_, err := os.Stat(filepath.Join(out, "SHA256SUMS"))
	require.ErrorIs(t, err, os.ErrNotExist, "%s is recorded already: recorded data is never re-recorded in place", out)
	findCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	cli, err := devserver.Find(findCtx, devserver.CLITool, os.Stderr)
	cancel()
	require.NoError(t, err, "the Temporal CLI (tools/go.mod) is needed to record")

	dir := t.TempDir()
	dbFile, chorusFile := filepath.Join(dir, "temporal.db"), filepath.Join(dir, "chorus.db")
	st, err := store.Open(ctx, chorusFile)
	require.NoError(t, err)
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin"})
	require.NoError(t, err)

	port, err := devserver.FreePort()
	require.NoError(t, err)
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--headless",
		"--namespace", workflows.Namespace, "--db-filename", dbFile, "--log-level", "error"}
	args = append(args, workflows.SearchAttributeFlags()...)
	old := exec.Command(cli, args...)
	old.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, old.Start())
	oldDone := make(chan error, 1)
	go func() { oldDone <- old.Wait() }()
	t.Cleanup(func() { _ = old.Process.Kill() })
	waitTemporal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))

	var fx upgradeFixture
	fx.Key = boot.Key
	withChorus(t, st, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), boot.Key, func(a *mcpclient.Agent) {
		var project struct{ UUID string }
		require.NoError(t, a.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "legacy"}, &project))
		var created struct{ Tasks []struct{ UUID string } }
		require.NoError(t, a.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
			"tasks": []map[string]any{{"title": "Made on 1.29", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}},
			&created))
		fx.Task = created.Tasks[0].UUID
		require.NoError(t, a.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": fx.Task}, nil))
	})
	require.NoError(t, st.Close())
	require.NoError(t, old.Process.Signal(syscall.SIGINT))
	select {
	case <-oldDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the old dev server did not stop")
	}
	predates, err := devserver.PredatesServer(ctx, dbFile)
	require.NoError(t, err)
	require.True(t, predates, "a file of the 1.29 dev server predates %s", devserver.Version)

	require.NoError(t, os.MkdirAll(out, 0o755))
	var sums []byte
	for _, f := range []string{dbFile, chorusFile} {
		name := filepath.Base(f) + ".gz"
		sums = append(sums, gzipFile(t, f, filepath.Join(out, name))+"  "+name+"\n"...)
	}
	b, err := json.MarshalIndent(fx, "", "  ")
	require.NoError(t, err)
	b = append(b, '\n')
	require.NoError(t, os.WriteFile(filepath.Join(out, "fixture.json"), b, 0o644))
	sum := sha256.Sum256(b)
	sums = append(sums, hex.EncodeToString(sum[:])+"  fixture.json\n"...)
	require.NoError(t, os.WriteFile(filepath.Join(out, "SHA256SUMS"), sums, 0o644))
}

// gzipFile writes src, gzip-compressed at the best ratio, to dst and returns dst's SHA-256.
func gzipFile(t *testing.T, src, dst string) string {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	f, err := os.Create(dst)
	require.NoError(t, err)
	h := sha256.New()
	zw, err := gzip.NewWriterLevel(io.MultiWriter(f, h), gzip.BestCompression)
	require.NoError(t, err)
	_, err = io.Copy(zw, in)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return hex.EncodeToString(h.Sum(nil))
}
