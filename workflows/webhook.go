package workflows

import (
	"context"
	"errors"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

// Webhook deliveries (docs/rules.md §7.5): each delivery row is one WebhookDeliveryWorkflow,
// whose one activity (DeliverWebhook) is retried by Temporal under the delivery's backoff, so it
// survives worker and server restarts; when the retries run out the workflow marks the delivery
// dead. The dispatcher (RunWebhookDispatcher), in every worker process, turns events into
// delivery rows and starts their workflows.

// WebhookDeliveryWorkflowName is the registered type of WebhookDeliveryWorkflow.
const WebhookDeliveryWorkflowName = "WebhookDeliveryWorkflow"

// WebhookDeliveryID is the workflow id of a delivery: one id for every run (a redelivery is a
// new run of it).
func WebhookDeliveryID(deliveryUUID string) string { return "webhook-delivery/" + deliveryUUID }

// WebhookDeliveryInput starts a delivery's workflow: the delivery and its retry schedule (zero
// fields: activities.DefaultWebhookBackoff's).
type WebhookDeliveryInput struct {
	DeliveryUUID string                    `json:"deliveryUuid"`
	Backoff      activities.WebhookBackoff `json:"backoff"`
}

// WebhookDeliveryWorkflow delivers one delivery: DeliverWebhook, retried from Backoff.Initial,
// doubling, at most Backoff.Max apart, until Backoff.Total has passed; then MarkWebhookDead. A
// delivery whose row or webhook was removed ends quietly.
func WebhookDeliveryWorkflow(ctx workflow.Context, in WebhookDeliveryInput) error {
	b := in.Backoff.OrDefault()
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    activities.WebhookTimeout + 20*time.Second,
		ScheduleToCloseTimeout: b.Total,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: b.Initial, BackoffCoefficient: 2, MaximumInterval: b.Max,
			NonRetryableErrorTypes: []string{"chorus.NotFound"}},
	})
	var a *activities.Activities
	err := workflow.ExecuteActivity(actx, a.DeliverWebhook, activities.DeliverWebhookInput{DeliveryUUID: in.DeliveryUUID,
		Backoff: b}).Get(ctx, nil)
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == "chorus.NotFound" {
		return nil // removed with its webhook: nothing to send, nothing to mark
	}
	dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute}})
	return workflow.ExecuteActivity(dctx, a.MarkWebhookDead, in.DeliveryUUID).Get(ctx, nil)
}

// StartWebhookDelivery starts a delivery's workflow on taskQueue and returns its id. A closed run
// of it gets a new one (a redelivery; after a run that already delivered, the new one sends
// nothing). A run still going is, for a first delivery, not an error (another dispatcher started
// it); for a redelivery (again) it is the run that has just ended it dead or delivered, still
// closing, and is replaced.
func StartWebhookDelivery(ctx context.Context, c client.Client, taskQueue, deliveryUUID string, b activities.WebhookBackoff,
	again bool) (string, error) {
	id := WebhookDeliveryID(deliveryUUID)
	conflict := enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	if again {
		conflict = enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: conflict,
		StaticSummary:            "Chorus: deliver a webhook"},
		WebhookDeliveryWorkflowName, WebhookDeliveryInput{DeliveryUUID: deliveryUUID, Backoff: b})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return "", err
	}
	return id, nil
}

// WebhookDispatcher turns events into webhook deliveries and starts their workflows. Run one in
// each worker process: they take turns (store.DispatchWebhookEvents).
type WebhookDispatcher struct {
	Store     *store.Store
	Temporal  client.Client
	TaskQueue string
	Log       *slog.Logger
	// Backoff is the retry schedule of the deliveries it starts (zero: the defaults).
	Backoff activities.WebhookBackoff
	// Every is the fallback pass interval (0: a second); Wake, when set, asks for a pass now (the
	// event hub's SubscribeAll).
	Every time.Duration
	Wake  <-chan struct{}
}

// dispatchBatch bounds the events one transaction turns into deliveries, and the workflows
// started per pass.
const dispatchBatch = 500

// Pass turns every event after the cursor into deliveries, then starts the workflow of each
// delivery still without one. It returns the first error; what it did before stays done.
func (d *WebhookDispatcher) Pass(ctx context.Context) error {
	for {
		n, err := d.Store.DispatchWebhookEvents(ctx, dispatchBatch)
		if err != nil {
			return err
		}
		if n < dispatchBatch {
			break
		}
	}
	for {
		ds, err := d.Store.UndispatchedDeliveries(ctx, dispatchBatch)
		if err != nil || len(ds) == 0 {
			return err
		}
		for _, u := range ds {
			wid, err := StartWebhookDelivery(ctx, d.Temporal, d.TaskQueue, u.UUID, d.Backoff, u.Attempts > 0)
			if err != nil {
				return err
			}
			if err := d.Store.MarkDeliveryDispatched(ctx, u.UUID, wid); err != nil {
				return err
			}
		}
		if len(ds) < dispatchBatch {
			return nil
		}
	}
}

// Run passes on each wake-up and every Every until ctx ends; errors are logged and the next
// pass tries again (the rows keep what is left to do).
func (d *WebhookDispatcher) Run(ctx context.Context) {
	every := d.Every
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := d.Pass(ctx); err != nil && ctx.Err() == nil && d.Log != nil {
			d.Log.Warn("webhooks: dispatching deliveries; trying again", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.Wake:
		}
	}
}
