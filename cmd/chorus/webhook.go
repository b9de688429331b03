package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
	"github.com/chorus-dev/chorus/webhook"
)

// Webhooks on the command line (docs/rules.md §7.5): a person named with --as, admin of the
// project, runs the same use cases as in the console's project settings (app.AddWebhook,
// ListWebhooks, RemoveWebhook, ListDeliveries, Redeliver). They need the database only: the
// workers' dispatcher starts the deliveries.

func newWebhookCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "webhook", Short: "Add, list and remove a project's webhooks; read and redeliver their deliveries"}
	cmd.AddCommand(newWebhookAddCmd(g), newWebhookListCmd(g), newWebhookRemoveCmd(g), newWebhookDeliveriesCmd(g),
		newWebhookRedeliverCmd(g))
	return cmd
}

// webhookPerson opens the store and finds the person --as names; close releases the store.
func webhookPerson(ctx context.Context, g *globals, as string) (*app.App, app.Request, *store.Company, func(), error) {
	if as == "" {
		return nil, app.Request{}, nil, nil, errors.New("--as is required: the email of a person who is admin of the project")
	}
	st, company, err := g.openCompany(ctx)
	if err != nil {
		return nil, app.Request{}, nil, nil, err
	}
	u, err := st.UserRef(ctx, company.UUID, as)
	if err != nil {
		_ = st.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, app.Request{}, nil, nil, fmt.Errorf("--as: no user %q in the company", as)
		}
		return nil, app.Request{}, nil, nil, err
	}
	return &app.App{Store: st}, app.Request{Who: app.UserPrincipal(u)}, company, func() { _ = st.Close() }, nil
}

func newWebhookAddCmd(g *globals) *cobra.Command {
	var project, url, kinds, as, allow string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add --project P --url URL [--kinds k1,k2] --as EMAIL",
		Short: "Add a webhook to a project and print its secret, once",
		Long: `Add a webhook to a project: from now on, each event of the project (of --kinds, or every kind)
is POSTed to --url, signed with the webhook's secret (docs/security.md "Webhooks"). The secret is
printed this once: keep it where the receiver can read it.

The person (--as, an email or a user uuid) must be admin of the project. The URL must be http or
https, carry no user name or password, and reach only public addresses unless the operator
allows more (--webhook-allow, env ` + webhook.AllowEnv + `). Kinds: ` + strings.Join(vocab.EventKinds, ", ") + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			a, r, company, closeStore, err := webhookPerson(ctx, g, as)
			if err != nil {
				return err
			}
			defer closeStore()
			if a.WebhookPolicy, err = webhook.ParseAllow(allow); err != nil {
				return err
			}
			p, err := a.Store.ProjectRef(ctx, company.UUID, project)
			if err != nil {
				return err
			}
			w, secret, err := a.AddWebhook(ctx, r, app.NewWebhook{ProjectUUID: p.UUID, URL: url, Kinds: strings.Split(kinds, ",")})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), webhookJSON(*w, secret))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Webhook %s added to project %q: POST %s for %s.\n", w.UUID, p.Name, w.URL, kindsText(*w))
			fmt.Fprintf(out, "Secret: %s\n", secret)
			fmt.Fprintln(out, "Keep this secret now: it is shown this once. Receivers check each delivery's Chorus-Signature with it.")
			return nil
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the project: uuid or name (required)")
	cmd.Flags().StringVar(&url, "url", "", "where deliveries are POSTed: an http:// or https:// URL (required)")
	cmd.Flags().StringVar(&kinds, "kinds", "", "only these event kinds, comma-separated (default: every kind)")
	cmd.Flags().StringVar(&as, "as", "", "the person adding it, admin of the project: email or user uuid (required)")
	cmd.Flags().StringVar(&allow, "webhook-allow", envOr(webhook.AllowEnv, ""), webhookAllowHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("project")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

// webhookView is a webhook as the CLI prints it in JSON: its kinds as a list, and its secret
// only right after it was added.
type webhookView struct {
	store.Webhook
	Kinds  []string `json:"kinds"`
	Secret string   `json:"secret,omitempty"`
}

func webhookJSON(w store.Webhook, secret string) webhookView {
	return webhookView{Webhook: w, Kinds: w.KindList(), Secret: secret}
}

func kindsText(w store.Webhook) string {
	if w.Kinds == "" {
		return "every event kind"
	}
	return strings.ReplaceAll(w.Kinds, ",", ", ")
}

func newWebhookListCmd(g *globals) *cobra.Command {
	var project, as string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --project P --as EMAIL",
		Short: "List a project's webhooks (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			a, r, company, closeStore, err := webhookPerson(ctx, g, as)
			if err != nil {
				return err
			}
			defer closeStore()
			p, err := a.Store.ProjectRef(ctx, company.UUID, project)
			if err != nil {
				return err
			}
			hooks, err := a.ListWebhooks(ctx, r, p.UUID)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]webhookView, len(hooks))
				for i, w := range hooks {
					out[i] = webhookJSON(w, "")
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WEBHOOK\tURL\tKINDS\tCREATED")
			for _, w := range hooks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.UUID, w.URL, orDash(w.Kinds), when(&w.CreatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the project: uuid or name (required)")
	cmd.Flags().StringVar(&as, "as", "", "a person who is admin of the project: email or user uuid (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("project")
	return cmd
}

func newWebhookRemoveCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "remove <webhook-uuid> --as EMAIL",
		Short: "Remove a webhook and its deliveries (those under way stop)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, r, _, closeStore, err := webhookPerson(ctx, g, as)
			if err != nil {
				return err
			}
			defer closeStore()
			w, err := a.RemoveWebhook(ctx, r, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Webhook %s (%s) removed, with its deliveries.\n", w.UUID, w.URL)
			return nil
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "a person who is admin of the webhook's project: email or user uuid (required)")
	return cmd
}

func newWebhookDeliveriesCmd(g *globals) *cobra.Command {
	var as, state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "deliveries <webhook-uuid> [--state pending|delivering|delivered|dead] --as EMAIL",
		Short: "List a webhook's deliveries, newest event first, with their state and last attempt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, r, _, closeStore, err := webhookPerson(ctx, g, as)
			if err != nil {
				return err
			}
			defer closeStore()
			_, ds, err := a.ListDeliveries(ctx, r, args[0], state)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), ds)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DELIVERY\tEVENT\tKIND\tSTATE\tATTEMPTS\tLAST ANSWER\tNEXT\tUPDATED")
			for _, d := range ds {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", d.UUID, d.EventSeq, d.Kind, d.State, d.Attempts, lastAnswer(d),
					when(d.NextAttemptAt), when(&d.UpdatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "a person who is admin of the webhook's project: email or user uuid (required)")
	cmd.Flags().StringVar(&state, "state", "", "only deliveries in this state: "+strings.Join(store.DeliveryStates, ", "))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// lastAnswer is a delivery's last attempt in a few words: its status code and error.
func lastAnswer(d store.WebhookDelivery) string {
	var parts []string
	if d.LastStatusCode != 0 {
		parts = append(parts, strconv.Itoa(d.LastStatusCode))
	}
	if d.LastError != "" {
		parts = append(parts, strconv.Quote(d.LastError))
	}
	return orDash(strings.Join(parts, " "))
}

func newWebhookRedeliverCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "redeliver <delivery-uuid> --as EMAIL",
		Short: "Send a dead or delivered delivery again, with the same body and Chorus-Webhook-Id",
		Long: `Send a dead or delivered delivery again: it is queued, and a worker starts a new run of its
workflow within a second or so (retrying as the first did), with the same body and the same
Chorus-Webhook-Id, so a receiver that already handled it can tell.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			a, r, _, closeStore, err := webhookPerson(ctx, g, as)
			if err != nil {
				return err
			}
			defer closeStore()
			d, err := a.Redeliver(ctx, r, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Delivery %s (%s, event %d) is queued again; a worker sends it shortly.\n", d.UUID, d.Kind,
				d.EventSeq)
			return nil
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "a person who is admin of the webhook's project: email or user uuid (required)")
	return cmd
}
