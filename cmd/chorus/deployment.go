package main

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// workerDeployment names the Temporal Worker Deployment Version a worker process belongs to
// (docs/production.md "Rolling deploys"). Empty: the worker is unversioned, and every worker on the task
// queue takes every task.
type workerDeployment struct {
	name    string // the deployment, e.g. chorus-worker (env CHORUS_WORKER_DEPLOYMENT)
	buildID string // this build, e.g. the image tag or commit (env CHORUS_BUILD_ID)
}

// validate checks that name and build id are given together, and only to a process that runs a
// worker.
func (d workerDeployment) validate(role string) error {
	if d.name == "" && d.buildID == "" {
		return nil
	}
	if d.name == "" || d.buildID == "" {
		return errors.New("--deployment-name and --build-id go together (env CHORUS_WORKER_DEPLOYMENT, CHORUS_BUILD_ID): " +
			"set both to run a versioned worker, or neither")
	}
	if role == roleAPI {
		return fmt.Errorf("--deployment-name and --build-id apply to a worker; --role %s runs none", role)
	}
	for _, v := range []string{d.name, d.buildID} {
		if strings.ContainsAny(v, ". \t\n") || len(v) > 255 {
			return fmt.Errorf("deployment name and build id may not contain '.' or spaces and are at most 255 characters: %q", v)
		}
	}
	return nil
}

// options are the worker's DeploymentOptions: with a name, the worker is that deployment's
// version buildID, and Chorus's workflows are AutoUpgrade (docs/write-path.md "Versions and
// deploys"): a running workflow moves to the deployment's current version at its next workflow
// task and replays its history there, so changes to workflow code go behind workflow.GetVersion
// and the recorded histories must replay.
func (d workerDeployment) options() worker.DeploymentOptions {
	if d.name == "" {
		return worker.DeploymentOptions{}
	}
	return worker.DeploymentOptions{UseVersioning: true,
		Version:                   worker.WorkerDeploymentVersion{DeploymentName: d.name, BuildID: d.buildID},
		DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade}
}
