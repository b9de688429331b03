package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/webhook"
	"github.com/chorus-dev/chorus/workflows"
)

// webhooksConfig is how a server sends webhooks (docs/rules.md §7.5, docs/security.md
// "Webhooks"): the operator's allowances beyond public addresses, and the deliveries' retry
// schedule (zero: activities.DefaultWebhookBackoff; tests shorten it).
type webhooksConfig struct {
	allow   string
	policy  webhook.Policy
	backoff activities.WebhookBackoff
}

const webhookAllowHelp = "internal addresses webhooks may reach, beyond public ones: CIDRs, addresses or host names, " +
	"comma-separated, e.g. 127.0.0.0/8 for a receiver on this machine (env " + webhook.AllowEnv + "; docs/security.md \"Webhooks\")"

func (c *webhooksConfig) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.allow, "webhook-allow", envOr(webhook.AllowEnv, ""), webhookAllowHelp)
}

// parse reads the allow list into policy; a bad item is an error naming it.
func (c *webhooksConfig) parse() (err error) {
	c.policy, err = webhook.ParseAllow(c.allow)
	return err
}

// startWebhookDispatcher runs the webhook dispatcher beside the worker (docs/rules.md §7.5) until
// ctx ends: woken by every new event the hub numbers, and every second anyway (redeliveries, a
// missed wake-up); only in a process that runs the worker (worker), else it does nothing. stop
// unregisters it from the hub.
func startWebhookDispatcher(ctx context.Context, log *slog.Logger, st *store.Store, tc client.Client, hub *store.EventHub,
	cfg serverConfig, worker bool) (stop func()) {
	if !worker {
		return func() {}
	}
	sub := hub.SubscribeAll()
	sender := activities.New(st, tc)
	sender.WebhookPolicy = cfg.webhooks.policy
	d := &workflows.WebhookDispatcher{Store: st, Temporal: tc, TaskQueue: queueOrDefault(cfg.taskQueue), Log: log,
		Backoff: cfg.webhooks.backoff, Wake: sub.C, Sender: sender}
	go d.Run(ctx)
	return sub.Close
}
