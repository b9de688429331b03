package main

import (
	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/activities"
	"github.com/chorus-dev/chorus/webhook"
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
