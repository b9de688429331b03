package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
)

// Human gates on the command line (docs/rules.md §6.7): an operator lists the gates and sets a
// project's policy; a person (named with --as) decides a gate, under the same rules as in the
// console (app.DecideGate).

func newGateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "gate", Short: "List the commands awaiting a person, and approve or refuse them"}
	cmd.AddCommand(newGateListCmd(g), newGateDecideCmd(g, true), newGateDecideCmd(g, false))
	return cmd
}

func newGateListCmd(g *globals) *cobra.Command {
	var project, status string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--project P] [--status awaiting|applied|refused|expired]",
		Short: "List the company's gates, newest first (operators see every project)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			f := store.GateFilter{Status: status, Limit: 500}
			if project != "" {
				p, err := st.ProjectRef(ctx, company.UUID, project)
				if err != nil {
					return err
				}
				f.ProjectUUID = p.UUID
			}
			gates, err := st.ListGateRequests(ctx, store.Caller{CompanyUUID: company.UUID}, true, f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), gates)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GATE\tSTATUS\tCOMMAND\tENTITY\tREQUESTED BY\tSINCE\tEXPIRES")
			for _, x := range gates {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s %q\t%s\t%s\t%s\n", x.UUID, x.Status, x.Command, x.EntityType, x.EntityTitle,
					x.RequestedByName, when(&x.CreatedAt), orDash(whenPtr(x.ExpiresAt)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "only this project: uuid or name")
	cmd.Flags().StringVar(&status, "status", "", "only gates of this status: awaiting, applied, refused or expired")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return when(t)
}

// newGateDecideCmd is `chorus gate approve` (approve) or `chorus gate refuse`.
func newGateDecideCmd(g *globals, approve bool) *cobra.Command {
	var as, note, requestID string
	var o opsOptions
	verb, short := "refuse", "Refuse a gate as a person: the command is not applied, and the agent is told why (--note)"
	if approve {
		verb, short = "approve", "Approve a gate as a person: its command is applied in your name, and the agent is told"
	}
	cmd := &cobra.Command{
		Use:   verb + " <gate-uuid> --as EMAIL",
		Short: short,
		Long: short + `.

The person (--as, an email or a user uuid) needs editor access or better on the gate's project. It
needs the database and the Temporal of the running Chorus (like chorus ops). A gate is decided
once; --request-id makes a retried decision answer the first outcome.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if as == "" {
				return errors.New("--as is required: the email of the person deciding")
			}
			if !approve && strings.TrimSpace(note) == "" {
				return errors.New("--note is required to refuse: say why, for the agent that asked")
			}
			ctx := cmd.Context()
			x, closeAll, err := o.open(ctx, g)
			if err != nil {
				return err
			}
			defer closeAll()
			company, err := x.Store.DefaultCompany(ctx)
			if err != nil {
				return err
			}
			u, err := x.Store.UserRef(ctx, company.UUID, as)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("--as: no user %q in the company", as)
			} else if err != nil {
				return err
			}
			a := &app.App{Store: x.Store, Flows: x.Flows}
			gate, err := a.DecideGate(ctx, app.Request{Who: app.UserPrincipal(u), RequestID: requestID}, args[0], approve, note)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Gate %s (%s of %s %q, asked by %s) is %s", gate.UUID, gate.Command, gate.EntityType,
				gate.EntityTitle, gate.RequestedByName, gate.Status)
			if gate.Note != nil {
				fmt.Fprintf(cmd.OutOrStdout(), ": %s", *gate.Note)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	o.flags(cmd)
	cmd.Flags().StringVar(&as, "as", "", "the person deciding: email or user uuid (required)")
	cmd.Flags().StringVar(&note, "note", "", "a note for the agent (required to refuse)")
	cmd.Flags().StringVar(&requestID, "request-id", "", "an idempotency key: a retry with it answers the first outcome")
	return cmd
}

// newProjectGatesCmd is `chorus project gates`: show or set a project's gate policy.
func newProjectGatesCmd(g *globals) *cobra.Command {
	var require string
	var expire time.Duration
	var separate bool
	cmd := &cobra.Command{
		Use:   "gates <project> [--require approve_proposal,verify_task,resolve_elaboration] [--expire-after 24h] [--separate-duties]",
		Short: "Show a project's gate policy, or set it with flags (the commands an agent's call waits on a person for)",
		Long: `Show a project's gate policy (docs/rules.md §6.7), or replace it when any flag is given.

--require names the commands that wait for a person when an agent calls them: approve_proposal,
verify_task, resolve_elaboration (comma-separated; "" for none, today's behaviour). --expire-after
is how long such a request waits before it expires (0 for never; 1m to 720h). --separate-duties
refuses an agent approving a proposal it created or verifying a task it worked on.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, err := st.ProjectRef(ctx, company.UUID, args[0])
			if err != nil {
				return err
			}
			pol, err := st.GatePolicyOf(ctx, p.UUID)
			if flags := cmd.Flags(); err == nil && (flags.Changed("require") || flags.Changed("expire-after") || flags.Changed("separate-duties")) {
				in := app.GatePolicyInput{ExpireAfterSeconds: int(expire / time.Second), SeparateDuties: separate}
				for _, c := range strings.Split(require, ",") {
					if c = strings.TrimSpace(c); c != "" {
						in.Commands = append(in.Commands, c)
					}
				}
				pol, err = (&app.App{Store: st}).SetGatePolicyAsOperator(ctx, company.UUID, p.UUID, in)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Project %q (%s): gated commands: %s; requests expire: %s; separation of duties: %v\n",
				p.Name, p.UUID, orDash(strings.Join(pol.GatedCommands(), ", ")), expiryText(pol.ExpireAfterSeconds), pol.SeparateDuties)
			return nil
		},
	}
	cmd.Flags().StringVar(&require, "require", "", "the gated commands, comma-separated (replaces the list)")
	cmd.Flags().DurationVar(&expire, "expire-after", 0, "how long a request waits before it expires (0: never)")
	cmd.Flags().BoolVar(&separate, "separate-duties", false, "refuse agents approving their own proposals or verifying their own work")
	return cmd
}

func expiryText(seconds int) string {
	if seconds == 0 {
		return "never"
	}
	return "after " + (time.Duration(seconds) * time.Second).String()
}
