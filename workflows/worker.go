package workflows

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/chorus-dev/chorus/activities"
)

// NewWorker returns a worker polling TaskQueue with every Chorus workflow and activity
// registered. Start it with Start (or Run) and stop it with Stop.
func NewWorker(c client.Client, a *activities.Activities, opts worker.Options) worker.Worker {
	w := worker.New(c, TaskQueue, opts)
	Register(w, a)
	return w
}

// Register registers every Chorus workflow and the activities on r (a worker or a replayer).
func Register(r worker.Registry, a *activities.Activities) {
	r.RegisterActivity(a)
}
