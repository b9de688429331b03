package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/workflows"
)

// A rolling deploy with Worker Deployment Versioning (docs/production.md "Rolling deploys"): a task's
// workflow started on build v1 moves to build v2 once v2 is the deployment's current version
// (AutoUpgrade), the v1 workers stop, and the task's next commands succeed on v2, which
// replays the history v1 wrote.
func TestRollingDeployMovesWorkflowsToTheNewBuild(t *testing.T) {
	tmp := startReadyTemporal(t)
	ctx := context.Background()
	st := storetest.Open(t, "sqlite")
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
		OwnerEmail: "owner@example.com", AgentName: "Admin"})
	require.NoError(t, err)
	suffix := store.NewUUID()[:8]
	queue, name := "chorus-rolling-"+suffix, "chorus-worker-"+suffix
	deployments := tmp.tc.WorkerDeploymentClient().GetHandle(name)
	makeCurrent := func(build string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for { // the version exists once its workers have polled
			_, err := deployments.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build})
			if err == nil {
				return
			}
			require.True(t, time.Now().Before(deadline), "set %s current: %v", build, err)
			time.Sleep(200 * time.Millisecond) // poll interval until the version is registered
		}
	}

	apiAddr, _ := tmp.serve(t, st, serverConfig{role: roleAPI, temporal: temporalConfig{namespace: workflows.Namespace}, taskQueue: queue})
	v1ctx, stopV1 := context.WithCancel(ctx)
	v1Done := make(chan error, 1)
	go func() {
		v1Done <- runServer(v1ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), st, serverConfig{role: roleWorker, addr: "127.0.0.1:0",
			temporal: temporalConfig{address: tmp.addr, namespace: workflows.Namespace}, taskQueue: queue, temporalWait: 30 * time.Second,
			deployment: workerDeployment{name: name, buildID: "v1"}}, nil)
	}()
	t.Cleanup(func() { stopV1(); <-v1Done })
	makeCurrent("v1")

	a, err := connectAgent(ctx, "http://"+apiAddr+"/api/mcp", boot.Key)
	require.NoError(t, err)
	defer a.Close()
	var project struct{ UUID string }
	require.NoError(t, a.Call(ctx, "chorus_admin_create_project", map[string]any{"name": "rolling"}, &project))
	var created struct{ Tasks []struct{ UUID string } }
	require.NoError(t, a.Call(ctx, "chorus_create_tasks", map[string]any{"projectUuid": project.UUID,
		"tasks": []map[string]any{{"title": "T", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created))
	task := created.Tasks[0].UUID
	require.NoError(t, a.Call(ctx, "chorus_claim_task", map[string]any{"taskUuid": task}, nil))
	require.Equal(t, "v1", buildOf(t, tmp, task))

	_, _ = tmp.serve(t, st, serverConfig{role: roleWorker, temporal: temporalConfig{namespace: workflows.Namespace}, taskQueue: queue,
		deployment: workerDeployment{name: name, buildID: "v2"}})
	makeCurrent("v2")
	stopV1()
	require.NoError(t, <-v1Done)
	v1Done <- nil

	var out struct{ Status string }
	require.NoError(t, a.Call(ctx, "chorus_update_task", map[string]any{"taskUuid": task, "status": "in_progress"}, &out))
	require.Equal(t, "in_progress", out.Status)
	require.Equal(t, "v2", buildOf(t, tmp, task), "the AutoUpgrade workflow moved to the current version")
}

// buildOf is the build id of the deployment version a task's workflow runs on.
func buildOf(t *testing.T, tmp readyTemporal, task string) string {
	t.Helper()
	d, err := tmp.tc.DescribeWorkflowExecution(context.Background(), vocab.TaskID(task), "")
	require.NoError(t, err)
	v := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.Equal(t, enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE, v.GetBehavior())
	return v.GetDeploymentVersion().GetBuildId()
}
