package workflows

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
)

// Webhook deliveries (docs/rules.md §7.5): the dispatcher (WebhookDispatcher), in every worker
// process, turns events into delivery rows and makes each one's first attempt itself, at once. A
// delivery that fails it, or one its dispatcher could not try (too many under way, the process
// stopped), is one WebhookDeliveryWorkflow, whose one activity (DeliverWebhook) is retried by
// Temporal under the delivery's backoff, so it survives worker and server restarts; when the
// retries run out the workflow marks the delivery dead. A delivery that succeeds at once costs
// no workflow: starting one per event could not keep up with 50 events a second beside the
// lifecycle's own workflows (docs/performance.md, "Events").

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
	// Made counts the attempts made before the workflow started (the dispatcher's first one):
	// the workflow waits the backoff's pause after them before its own first attempt.
	Made int32 `json:"made,omitempty"`
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
	if in.Made > 0 {
		if err := workflow.Sleep(ctx, b.After(in.Made)); err != nil {
			return err
		}
	}
	var a *activities.Activities
	err := workflow.ExecuteActivity(actx, a.DeliverWebhook, activities.DeliverWebhookInput{DeliveryUUID: in.DeliveryUUID,
		Backoff: b, Made: in.Made}).Get(ctx, nil)
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

// StartWebhookDelivery starts a delivery's workflow on taskQueue and returns its id; made counts
// the attempts already made (the dispatcher's first one). A closed run of it gets a new one (a
// redelivery; after a run that already delivered, the new one sends nothing). A run still going
// is, for a first delivery, not an error (another dispatcher started it); for a redelivery
// (again) it is the run that has just ended it dead or delivered, still closing, and is replaced.
func StartWebhookDelivery(ctx context.Context, c client.Client, taskQueue, deliveryUUID string, b activities.WebhookBackoff,
	again bool, made int32) (string, error) {
	id := WebhookDeliveryID(deliveryUUID)
	conflict := enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	if again {
		conflict = enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: conflict,
		StaticSummary:            "Chorus: deliver a webhook"},
		WebhookDeliveryWorkflowName, WebhookDeliveryInput{DeliveryUUID: deliveryUUID, Backoff: b, Made: made})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return "", err
	}
	return id, nil
}

// WebhookDispatcher turns events into webhook deliveries, makes each new one's first attempt
// (with Sender), and starts the workflows of those that need retrying. Run one in each worker
// process: they take turns turning events into deliveries (store.DispatchWebhookEvents), and a
// delivery's first attempt is claimed by one of them (store.ClaimFirstAttempt).
type WebhookDispatcher struct {
	Store     *store.Store
	Temporal  client.Client
	TaskQueue string
	Log       *slog.Logger
	// Sender makes first attempts; nil leaves every attempt to the delivery's workflow.
	Sender *activities.Activities
	// Inline bounds the first attempts under way at once (0: 16); a delivery beyond it goes to
	// its workflow at once.
	Inline int
	slots  chan struct{}
	once   sync.Once
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

// inlineStale is how long a first attempt claimed by a dispatcher may stay unfinished before a
// dispatcher takes it for a workflow: longer than an attempt (activities.WebhookTimeout) and its
// record.
const inlineStale = 3 * activities.WebhookTimeout

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
	d.once.Do(func() { d.slots = make(chan struct{}, cmp.Or(d.Inline, 16)) })
	for {
		ds, err := d.Store.UndispatchedDeliveries(ctx, dispatchBatch, time.Now().Add(-inlineStale))
		if err != nil || len(ds) == 0 {
			return err
		}
		for _, u := range ds {
			if d.Sender != nil && u.Attempts == 0 && !u.Inline() && d.slot() {
				got, err := d.Store.ClaimFirstAttempt(ctx, u.UUID)
				if err != nil || !got {
					<-d.slots
					if err != nil {
						return err
					}
					continue // another dispatcher's
				}
				go d.firstAttempt(ctx, u.UUID)
				continue
			}
			if err := d.start(ctx, u.UUID, u.Attempts > 0 && !u.Inline(), int32(u.Attempts)); err != nil {
				return err
			}
		}
		if len(ds) < dispatchBatch {
			return nil
		}
	}
}

// slot takes a place for a first attempt, if one is free.
func (d *WebhookDispatcher) slot() bool {
	select {
	case d.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// start starts a delivery's workflow and records it on the row.
func (d *WebhookDispatcher) start(ctx context.Context, deliveryUUID string, again bool, made int32) error {
	wid, err := StartWebhookDelivery(ctx, d.Temporal, d.TaskQueue, deliveryUUID, d.Backoff, again, made)
	if err != nil {
		return err
	}
	return d.Store.MarkDeliveryDispatched(ctx, deliveryUUID, wid)
}

// firstAttempt makes a claimed delivery's first attempt; one that fails goes to its workflow for
// the retries. Whatever stops it half way (an error, the process ending) leaves the claim, which
// a dispatcher takes for a workflow once it is stale (inlineStale).
func (d *WebhookDispatcher) firstAttempt(ctx context.Context, deliveryUUID string) {
	defer func() { <-d.slots }()
	delivered, _, err := activities.AttemptWebhook(ctx, d.Sender, deliveryUUID, 1, d.Backoff)
	if err == nil && !delivered {
		err = d.start(ctx, deliveryUUID, false, 1)
	}
	var nf *store.NotFoundError
	if err != nil && !errors.As(err, &nf) && ctx.Err() == nil && d.Log != nil {
		d.Log.Warn("webhooks: a delivery's first attempt; its workflow takes it over later", "delivery", deliveryUUID, "err", err)
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
