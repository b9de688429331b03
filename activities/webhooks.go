package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/webhook"
)

// WebhookTimeout bounds one delivery attempt: connect, send, and the receiver's answer.
const WebhookTimeout = 10 * time.Second

// WebhookBackoff is a delivery's retry schedule: the first retry after Initial, each next one
// twice as late, at most Max apart, for Total in all (docs/rules.md §7.5). The zero value means
// DefaultWebhookBackoff's.
type WebhookBackoff struct {
	Initial time.Duration `json:"initial"`
	Max     time.Duration `json:"max"`
	Total   time.Duration `json:"total"`
}

// DefaultWebhookBackoff is the schedule of production: from 10 s, doubling, at most an hour
// apart, for 24 hours.
var DefaultWebhookBackoff = WebhookBackoff{Initial: 10 * time.Second, Max: time.Hour, Total: 24 * time.Hour}

// OrDefault fills b's zero fields from DefaultWebhookBackoff.
func (b WebhookBackoff) OrDefault() WebhookBackoff {
	if b.Initial <= 0 {
		b.Initial = DefaultWebhookBackoff.Initial
	}
	if b.Max <= 0 {
		b.Max = max(DefaultWebhookBackoff.Max, b.Initial)
	}
	if b.Total <= 0 {
		b.Total = DefaultWebhookBackoff.Total
	}
	return b
}

// After is the pause after the attempt-th failed attempt (1 for the first).
func (b WebhookBackoff) After(attempt int32) time.Duration {
	d := b.Initial
	for i := int32(1); i < attempt && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// DeliverWebhookInput is one attempt's input: the delivery, its workflow's schedule (for the
// next attempt's time recorded on the row) and the attempts made before its workflow started
// (the dispatcher's own first one, WebhookDispatcher).
type DeliverWebhookInput struct {
	DeliveryUUID string         `json:"deliveryUuid"`
	Backoff      WebhookBackoff `json:"backoff"`
	Made         int32          `json:"made,omitempty"`
}

// ErrWebhookAttempt is the type of a failed attempt's error: retryable, under the workflow's
// backoff.
const ErrWebhookAttempt = "chorus.WebhookAttemptFailed"

// webhookClient is the delivery client of a policy, made once per Activities.
type webhookClient struct {
	once sync.Once
	c    *http.Client
}

func (a *Activities) webhookHTTP() *http.Client {
	a.webhooks.once.Do(func() { a.webhooks.c = a.WebhookPolicy.Client(WebhookTimeout) })
	return a.webhooks.c
}

// DeliverWebhook makes one attempt of a delivery (AttemptWebhook) as its workflow's activity. A
// failed attempt returns a retryable error; one whose row or webhook is gone ends with a
// non-retryable NotFound.
func (a *Activities) DeliverWebhook(ctx context.Context, in DeliverWebhookInput) error {
	delivered, failure, err := AttemptWebhook(ctx, a, in.DeliveryUUID, activity.GetInfo(ctx).Attempt+in.Made, in.Backoff)
	if err != nil {
		return outcome(err)
	}
	if !delivered {
		return temporal.NewApplicationError(failure, ErrWebhookAttempt)
	}
	return nil
}

// AttemptWebhook makes attempt number n (1 for the first) of a delivery (docs/rules.md §7.5): it
// POSTs the stored body to the webhook's URL, signed, through the policy's client (the address
// dialled is checked, no redirect followed, WebhookTimeout). A 2xx records it delivered.
// Anything else records the failed attempt on the row (status code, a short error, when attempt
// n+1 is due under b) and returns delivered false with that error's text. A delivery already
// delivered is not sent again (delivered true). err is the store's: NotFound when the row or its
// webhook is gone, or a failure to read or record. It is a function, not a method, so that a
// worker does not register it as an activity: the dispatcher calls it for first attempts.
func AttemptWebhook(ctx context.Context, a *Activities, deliveryUUID string, n int32, b WebhookBackoff) (delivered bool,
	failure string, err error) {
	t, err := a.Store.DeliveryTarget(ctx, deliveryUUID)
	if err != nil {
		return false, "", err
	}
	if t.Delivery.State == store.DeliveryDelivered {
		return true, "", nil
	}
	code, sendErr := a.postWebhook(ctx, t)
	rec := store.DeliveryAttempt{Delivered: sendErr == nil, StatusCode: code}
	if sendErr != nil {
		rec.Error = sendErr.Error()
		next := time.Now().Add(b.OrDefault().After(max(n, 1))).UTC()
		rec.Next = &next
	}
	if err := a.Store.RecordDeliveryAttempt(ctx, deliveryUUID, rec); err != nil {
		return false, "", err
	}
	return sendErr == nil, rec.Error, nil
}

// postWebhook sends one attempt and returns the status code (0 without an answer) and nil for a
// 2xx, else what went wrong, in a sentence without the response body beyond a few bytes and
// without the URL (which may hold the receiver's own token: it would reach logs and histories).
func (a *Activities) postWebhook(ctx context.Context, t *store.DeliveryTarget) (int, error) {
	body := []byte(t.Delivery.Body)
	ts := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("the URL cannot be requested: %v", withoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", webhook.UserAgent)
	req.Header.Set(webhook.HeaderID, t.Delivery.UUID)
	req.Header.Set(webhook.HeaderEvent, t.Delivery.Kind)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(webhook.HeaderSignature, webhook.Sign(t.Secret, ts, body))
	res, err := a.webhookHTTP().Do(req)
	if err != nil {
		var de *webhook.DialError
		if errors.As(err, &de) {
			return 0, de
		}
		return 0, fmt.Errorf("no answer: %v", withoutURL(err))
	}
	defer res.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, 120))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // let the connection be reused
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return res.StatusCode, nil
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return res.StatusCode, webhook.ErrRedirect
	}
	msg := fmt.Sprintf("the receiver answered %d", res.StatusCode)
	if len(snippet) > 0 {
		msg += ": " + string(bytes.ToValidUTF8(snippet, nil))
	}
	return res.StatusCode, errors.New(msg)
}

// withoutURL is err without the URL a *url.Error names ("Post "<url>": ..."): a receiver's URL
// may carry a token of its own, which must not reach the delivery's row, logs and histories.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// MarkWebhookDead ends a delivery whose retries ran out: dead, visible, redeliverable.
func (a *Activities) MarkWebhookDead(ctx context.Context, deliveryUUID string) error {
	return a.Store.MarkDeliveryDead(ctx, deliveryUUID)
}
