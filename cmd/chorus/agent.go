package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

func newAgentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Create, list and update agents (works while chorus dev is running), and run them on events (agent run)"}
	cmd.AddCommand(newAgentCreateCmd(g), newAgentListCmd(g), newAgentUpdateCmd(g), newAgentRunCmd())
	return cmd
}

type agentCreateOptions struct {
	name        string
	presets     []string
	permissions []string
	ownerEmail  string
	noOwner     bool
	persona     string
	asJSON      bool
	keyOnly     bool
}

func newAgentCreateCmd(g *globals) *cobra.Command {
	o := agentCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create --name NAME [--preset P]... [--permission resource:action]...",
		Short: "Create an agent and print its uuid and a new API key (shown once)",
		Long: `Create an agent and print its uuid and a new API key. The key is shown only once.

Presets: developer_agent (the default), pm_agent, admin_agent. --permission adds single bits
(resource:action, resources idea|proposal|document|task|project, actions read|write|admin).
The agent acts with its owner's project access: by default the company owner; --owner-email picks
(or creates) another user, --no-owner makes an ownerless agent that sees public projects only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(o.name) == "" {
				return errors.New("--name is required")
			}
			if o.noOwner && o.ownerEmail != "" {
				return errors.New("--no-owner and --owner-email cannot be used together")
			}
			roles, err := o.roles()
			if err != nil {
				return err
			}
			custom, err := perm.Sorted(o.permissions)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			var owner *store.User
			switch {
			case o.ownerEmail != "":
				owner, err = st.EnsureUser(ctx, company.UUID, o.ownerEmail, "")
			case !o.noOwner:
				owner, err = st.CompanyOwner(ctx, company.UUID)
				if errors.Is(err, store.ErrNotFound) {
					owner, err = nil, nil // a fresh database has no owner yet: the agent is ownerless
				}
			}
			if err != nil {
				return err
			}
			n := app.NewAgent{Name: o.name, Presets: roles, Permissions: custom, Persona: o.persona}
			if owner != nil {
				n.OwnerUUID = &owner.UUID
			}
			a, key, _, err := members(st).CreateAgent(ctx, operator(company.UUID), n)
			if err != nil {
				return err
			}
			eff := perm.Effective(a.Roles, a.Permissions)
			w := cmd.OutOrStdout()
			if o.keyOnly {
				fmt.Fprintln(w, key)
				return nil
			}
			if o.asJSON {
				return writeJSON(w, map[string]any{"uuid": a.UUID, "name": a.Name, "roles": a.Roles,
					"permissions": a.Permissions, "effectivePermissions": eff.Strings(), "ownerUuid": a.OwnerUUID, "apiKey": key})
			}
			printCreatedAgent(w, a, owner, eff, key)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "agent name (required)")
	f.StringArrayVar(&o.presets, "preset", nil, "role preset: developer_agent, pm_agent or admin_agent (repeatable)")
	f.StringArrayVar(&o.permissions, "permission", nil, "extra permission bit resource:action (repeatable)")
	f.StringVar(&o.ownerEmail, "owner-email", "", "owner user's email (created if new); default: the company owner")
	f.BoolVar(&o.noOwner, "no-owner", false, "create an ownerless agent (public projects only)")
	f.StringVar(&o.persona, "persona", "", "persona text returned to the agent by chorus_checkin")
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
	f.BoolVar(&o.keyOnly, "key-only", false, "print only the new API key (for scripts: KEY=$(chorus agent create ... --key-only))")
	return cmd
}

// roles are the presets --preset names, each once; with neither presets nor extra bits, a
// developer agent.
func (o agentCreateOptions) roles() ([]string, error) {
	roles := []string{}
	for _, p := range o.presets {
		r, err := perm.ParsePreset(p)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	if len(roles) == 0 && len(o.permissions) == 0 {
		roles = []string{perm.DeveloperAgent}
	}
	return roles, nil
}

// printCreatedAgent tells what chorus agent create made, and the key, once.
func printCreatedAgent(w io.Writer, a *store.Agent, owner *store.User, eff perm.Set, key string) {
	fmt.Fprintf(w, "Created agent %q\n  uuid:        %s\n  roles:       %s\n", a.Name, a.UUID, strings.Join(a.Roles, ", "))
	if len(a.Permissions) > 0 {
		fmt.Fprintf(w, "  extra bits:  %s\n", strings.Join(a.Permissions, ", "))
	}
	fmt.Fprintf(w, "  permissions: %d of 15 (%s)\n", len(eff.Bits()), strings.Join(eff.Strings(), " "))
	if owner != nil {
		fmt.Fprintf(w, "  owner:       %s\n", owner.DisplayName())
	} else {
		fmt.Fprintf(w, "  owner:       none (sees public projects only)\n")
	}
	fmt.Fprintf(w, "  API key:     %s\n  (the key is shown only now; store it safely)\n", key)
}

func newAgentListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			agents, _, err := members(st).ListAgents(ctx, operator(company.UUID), 0, 0)
			if err != nil {
				return err
			}
			if asJSON {
				rows := make([]map[string]any, 0, len(agents))
				for _, a := range agents {
					rows = append(rows, map[string]any{"uuid": a.UUID, "name": a.Name, "roles": a.Roles,
						"permissions": a.Permissions, "ownerEmail": a.OwnerEmail, "activeKeys": a.ActiveKeys,
						"lastActiveAt": a.LastActiveAt, "createdAt": a.CreatedAt})
				}
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "UUID\tNAME\tROLES\tEXTRA BITS\tOWNER\tKEYS\tLAST ACTIVE")
			for _, a := range agents {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", a.UUID, a.Name, orDash(strings.Join(a.Roles, ",")),
					orDash(strings.Join(a.Permissions, ",")), orDash(deref(a.OwnerEmail)), a.ActiveKeys, when(a.LastActiveAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newKeyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "Create, list and revoke API keys (works while chorus dev is running)"}
	cmd.AddCommand(newKeyCreateCmd(g), newKeyListCmd(g), newKeyRevokeCmd(g))
	return cmd
}

func newKeyCreateCmd(g *globals) *cobra.Command {
	var agentUUID, name string
	var expiresIn time.Duration
	var asJSON, readOnly bool
	create := &cobra.Command{
		Use:   "create --agent UUID",
		Short: "Create another API key for an agent and print it (shown once)",
		Long: `Create another API key for an agent and print it; the key is shown only once.

--read-only makes a key that lists and calls only the tools that change nothing, whatever the
agent's permissions and whatever its connection selects (docs/rules.md §3.3).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if agentUUID == "" {
				return errors.New("--agent is required (see chorus agent list)")
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			var exp *time.Time
			if expiresIn > 0 {
				t := time.Now().Add(expiresIn).UTC()
				exp = &t
			}
			k, key, err := members(st).IssueKey(ctx, operator(company.UUID), agentUUID,
				store.NewKey{Name: name, ExpiresAt: exp, ReadOnly: readOnly})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"uuid": k.UUID, "agentUuid": k.AgentUUID,
					"prefix": k.KeyPrefix, "expiresAt": k.ExpiresAt, "readOnly": k.ReadOnly, "apiKey": key})
			}
			kind := "key"
			if k.ReadOnly {
				kind = "read-only key"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created %s %s (prefix %s) for agent %s", kind, k.UUID, k.KeyPrefix, k.AgentUUID)
			if exp != nil {
				fmt.Fprintf(cmd.OutOrStdout(), ", expires %s", exp.Format(time.RFC3339))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\n  API key: %s\n  (shown only now)\n", key)
			return nil
		},
	}
	create.Flags().StringVar(&agentUUID, "agent", "", "the agent's uuid (required)")
	create.Flags().StringVar(&name, "name", "", "a label for the key")
	create.Flags().DurationVar(&expiresIn, "expires-in", 0, "make the key expire after this long (e.g. 720h); default never")
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	create.Flags().BoolVar(&readOnly, "read-only", false, "a key that may call only tools that change nothing")
	return create
}

func newKeyRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke KEY_PREFIX_OR_UUID",
		Short: "Revoke a key, named by its uuid, its prefix (cho_ and a few characters), or the whole key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			k, err := members(st).RevokeKey(ctx, operator(company.UUID), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Revoked key %s (prefix %s) of agent %s at %s\n", k.UUID, k.KeyPrefix, k.AgentUUID,
				k.RevokedAt.UTC().Format(time.RFC3339))
			return nil
		},
	}
}

func newKeyListCmd(g *globals) *cobra.Command {
	var listAgent string
	list := &cobra.Command{
		Use:   "list [--agent UUID]",
		Short: "List keys (prefixes only; keys themselves are never stored)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			keys, err := st.ListKeys(ctx, company.UUID, listAgent)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "UUID\tPREFIX\tAGENT\tSTATE\tLAST USED\tEXPIRES")
			now := time.Now()
			for _, k := range keys {
				state := "active"
				switch {
				case k.RevokedAt != nil:
					state = "revoked"
				case k.ExpiresAt != nil && k.ExpiresAt.Before(now):
					state = "expired"
				case k.ReadOnly:
					state = "active, read-only"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%s\t%s\t%s\n", k.UUID, k.KeyPrefix, k.AgentName, k.AgentUUID, state, when(k.LastUsedAt), when(k.ExpiresAt))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&listAgent, "agent", "", "only this agent's keys")
	return list
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}

// openCompany opens the store and returns the company the operator commands act on.
func (g *globals) openCompany(ctx context.Context) (*store.Store, *store.Company, error) {
	// These commands manage a running Chorus's identities: a database made up on the spot would
	// print keys that no server knows.
	if dsn := g.databaseURL(); !store.IsPostgresURL(dsn) {
		if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("no Chorus database at %s: run this where `chorus dev` keeps its state "+
				"(the directory you started it in, or pass --data-dir / CHORUS_DATA_DIR), or set CHORUS_DATABASE_URL "+
				"to the PostgreSQL database of your Chorus", dsn)
		}
	}
	st, err := g.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	company, err := st.DefaultCompany(ctx)
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return st, company, nil
}
