package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/webhook"
)

// Webhooks per project (docs/rules.md §7.5): a project admin adds, lists and removes a
// project's webhooks, reads their deliveries and redelivers one. The CLI (chorus webhook) and
// the console's settings page call these; the worker's dispatcher and the delivery workflow do
// the sending.

// MaxWebhookDeliveries bounds one listing of deliveries.
const MaxWebhookDeliveries = 500

// NewWebhook is a webhook to add: its project, its URL and the event kinds it receives (none:
// every kind; each one of vocab.EventKinds).
type NewWebhook struct {
	ProjectUUID string
	URL         string
	Kinds       []string
}

// Refusals of the webhook use cases, written once here.
const (
	errWebhookURL    = "url: %s"
	errWebhookKind   = "kinds: %q is not an event kind; use one or more of: %s"
	errWebhookState  = "state: %q is not a delivery state; use one of: %s"
	errRedeliverBusy = "The delivery is %s: its workflow is still on it; only a dead or delivered delivery can be redelivered"
)

// webhookProject checks that r may manage the project's webhooks: admin on the project (a
// webhook sends the project's activity outside; docs/rules.md §6.3, §7.5). Hidden is "Project
// not found", too low "Only project admins can manage this project".
func (a *App) webhookProject(ctx context.Context, r Request, projectUUID string) (*store.ProjectView, error) {
	pv, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer)
	if err != nil {
		return nil, err
	}
	if pv.Level() < store.AccessAdmin {
		return nil, errProjectManage()
	}
	return pv, nil
}

// CheckWebhookKinds refuses a kind that is not an event kind, naming it; it returns the kinds
// trimmed, without blanks and duplicates, in vocab.EventKinds's order.
func CheckWebhookKinds(kinds []string) ([]string, error) {
	var out []string
	for _, k := range kinds {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !slices.Contains(vocab.EventKinds, k) {
			return nil, Refuse(vocab.RefusedInvalid, errWebhookKind, k, strings.Join(vocab.EventKinds, ", "))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(x, y string) int { return slices.Index(vocab.EventKinds, x) - slices.Index(vocab.EventKinds, y) })
	return out, nil
}

// AddWebhook adds a webhook to a project (admin on it) and returns it with its secret, which is
// shown this once and never again (the store keeps it to sign; nothing reads it back out). The
// URL must pass the policy (a.WebhookPolicy: http or https, no userinfo, no internal address
// unless the operator allowed it): a refusal names url, says why and how to fix it. The webhook
// receives the project's events from now on, not earlier ones. A retried add (the same
// requestId) returns the webhook the first one made, with no secret: it was shown to the first
// call only. A project with store.MaxProjectWebhooks webhooks already is refused
// (vocab.RefusedPrecondition, store.ErrWebhookLimit's text).
func (a *App) AddWebhook(ctx context.Context, r Request, in NewWebhook) (*store.Webhook, string, error) {
	pv, err := a.webhookProject(ctx, r, in.ProjectUUID)
	if err != nil {
		return nil, "", err
	}
	id := store.NewUUID()
	if r.RequestID != "" {
		id = vocab.DerivedUUID("webhook", r.Who.Caller.AgentUUID, r.RequestID)
		if w, err := a.Store.WebhookByUUID(ctx, pv.CompanyUUID, id); err == nil {
			return w, "", nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, "", err
		}
	}
	kinds, err := CheckWebhookKinds(in.Kinds)
	if err != nil {
		return nil, "", err
	}
	url, err := a.WebhookPolicy.CheckURL(ctx, in.URL)
	var ue *webhook.URLError
	if errors.As(err, &ue) {
		return nil, "", Refuse(vocab.RefusedInvalid, errWebhookURL, ue.Reason)
	}
	if err != nil {
		return nil, "", err
	}
	w := &store.Webhook{UUID: id, CompanyUUID: pv.CompanyUUID, ProjectUUID: pv.UUID, URL: url,
		Secret: webhook.NewSecret(), Kinds: strings.Join(kinds, ","), CreatedByType: r.Who.Caller.Kind(),
		CreatedByUUID: r.Who.Caller.AgentUUID}
	if err := a.Store.CreateWebhook(ctx, w); err != nil {
		if errors.Is(err, store.ErrWebhookLimit) {
			return nil, "", Refuse(vocab.RefusedPrecondition, "%s", store.ErrWebhookLimit.Error())
		}
		if twin, terr := a.Store.WebhookByUUID(ctx, pv.CompanyUUID, id); r.RequestID != "" && terr == nil {
			return twin, "", nil // a twin of this call won the race: answer as its retry
		}
		return nil, "", err
	}
	return w, w.Secret, nil
}

// ListWebhooks lists a project's webhooks, oldest first (admin on the project). Secrets are not
// part of a listing.
func (a *App) ListWebhooks(ctx context.Context, r Request, projectUUID string) ([]store.Webhook, error) {
	pv, err := a.webhookProject(ctx, r, projectUUID)
	if err != nil {
		return nil, err
	}
	return a.Store.ProjectWebhooks(ctx, pv.CompanyUUID, pv.UUID)
}

// managedWebhook finds a webhook whose project r manages: an unknown one, or one of a project r
// cannot see, is "Webhook not found".
func (a *App) managedWebhook(ctx context.Context, r Request, webhookUUID string) (*store.Webhook, error) {
	w, err := a.Store.WebhookByUUID(ctx, r.Who.Caller.CompanyUUID, strings.TrimSpace(webhookUUID))
	if err != nil {
		return nil, err
	}
	if _, err := a.webhookProject(ctx, r, w.ProjectUUID); err != nil {
		var nf *store.NotFoundError
		if errors.As(err, &nf) {
			return nil, store.NotFound("Webhook")
		}
		return nil, err
	}
	return w, nil
}

// RemoveWebhook removes a webhook and its deliveries (admin on its project); deliveries under
// way stop without sending again. It returns the webhook removed.
func (a *App) RemoveWebhook(ctx context.Context, r Request, webhookUUID string) (*store.Webhook, error) {
	w, err := a.managedWebhook(ctx, r, webhookUUID)
	if err != nil {
		return nil, err
	}
	return w, a.Store.DeleteWebhook(ctx, w.CompanyUUID, w.UUID)
}

// ListDeliveries lists a webhook's deliveries, newest event first, at most MaxWebhookDeliveries,
// of one state ("" for all; else one of store.DeliveryStates) (admin on its project).
func (a *App) ListDeliveries(ctx context.Context, r Request, webhookUUID, state string) (*store.Webhook, []store.WebhookDelivery, error) {
	if state != "" && !slices.Contains(store.DeliveryStates, state) {
		return nil, nil, Refuse(vocab.RefusedInvalid, errWebhookState, state, strings.Join(store.DeliveryStates, ", "))
	}
	w, err := a.managedWebhook(ctx, r, webhookUUID)
	if err != nil {
		return nil, nil, err
	}
	ds, err := a.Store.WebhookDeliveries(ctx, w.UUID, state, MaxWebhookDeliveries)
	return w, ds, err
}

// Redeliver sends a dead or delivered delivery again (admin on its project): it is queued, and a
// worker's dispatcher starts a new run of its workflow within a second or so, with the same body
// and the same idempotency id (Chorus-Webhook-Id), so a receiver that handled it can tell. A
// delivery still pending or delivering is refused (its workflow is on it). It returns the
// delivery as queued.
func (a *App) Redeliver(ctx context.Context, r Request, deliveryUUID string) (*store.WebhookDelivery, error) {
	d, err := a.Store.WebhookDeliveryByUUID(ctx, strings.TrimSpace(deliveryUUID))
	if err != nil {
		return nil, err
	}
	if _, err := a.managedWebhook(ctx, r, d.WebhookUUID); err != nil {
		var nf *store.NotFoundError
		if errors.As(err, &nf) {
			return nil, store.NotFound("Delivery")
		}
		return nil, err
	}
	ok, err := a.Store.RequeueDelivery(ctx, d.UUID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, Refuse(vocab.RefusedConflict, errRedeliverBusy, d.State)
	}
	return a.Store.WebhookDeliveryByUUID(ctx, d.UUID)
}
