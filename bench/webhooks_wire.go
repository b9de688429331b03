package bench

import (
	"context"
	"fmt"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/webhook"
)

// benchHook is the webhook the phase added: its uuid and its secret (to check signatures).
type benchHook struct{ uuid, secret string }

// addWebhook adds a webhook to project, sending every event kind to url, through the use case
// the CLI and the console call (app.AddWebhook, its URL policy that of the started server), as
// the bench's admin agent.
func (b *bencher) addWebhook(ctx context.Context, project, url string) (*benchHook, error) {
	if b.t.adminUUID == "" {
		return nil, fmt.Errorf("needs the bench's own admin agent to add the webhook")
	}
	policy, err := webhook.ParseAllow(hookAllow)
	if err != nil {
		return nil, err
	}
	a := &app.App{Store: b.t.st, WebhookPolicy: policy}
	r := app.Request{Who: app.Principal{Caller: store.Caller{CompanyUUID: b.t.company.UUID, AgentUUID: b.t.adminUUID,
		OwnerUUID: b.t.owner.UUID}}}
	w, secret, err := a.AddWebhook(ctx, r, app.NewWebhook{ProjectUUID: project, URL: url})
	if err != nil {
		return nil, fmt.Errorf("add the webhook: %w", err)
	}
	return &benchHook{uuid: w.UUID, secret: secret}, nil
}
