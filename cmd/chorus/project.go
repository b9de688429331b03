package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Operators' commands for project access (docs/rules.md §6.3) and agent settings, beside
// chorus agent create/list and chorus key.

func newProjectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "List projects and manage their members (works while chorus dev is running)"}
	member := &cobra.Command{Use: "member", Short: "Add, list and remove the users who hold a role on a project"}
	member.AddCommand(newMemberAddCmd(g), newMemberListCmd(g), newMemberRemoveCmd(g))
	cmd.AddCommand(newProjectListCmd(g), newProjectSetClaimTTLCmd(g), newProjectGatesCmd(g), member)
	return cmd
}

func newProjectListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every project of the company (operators see all, whatever their visibility)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			ps, err := st.ListAllProjects(ctx, company.UUID)
			if err != nil {
				return err
			}
			if asJSON {
				rows := make([]map[string]any, 0, len(ps))
				for _, p := range ps {
					rows = append(rows, map[string]any{"uuid": p.UUID, "name": p.Name, "visibility": p.Visibility, "groupUuid": p.GroupUUID})
				}
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "UUID\tNAME\tVISIBILITY\tGROUP")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.UUID, p.Name, p.Visibility, orDash(deref(p.GroupUUID)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// operator is who runs these commands: the company's operator, who manages every project's
// members under the same rules as the member tools (app.GrantProjectRole).
func operator(companyUUID string) app.Manager { return app.Operator(companyUUID) }

// members are the member use cases over st (they need only the store).
func members(st *store.Store) *app.App { return &app.App{Store: st} }

// memberTarget resolves --project and --user (a uuid or an email; with create, an unknown email
// makes the user, as chorus agent create --owner-email does).
func memberTarget(cmd *cobra.Command, st *store.Store, company, project, user string, create bool) (*store.Project, *store.User, error) {
	if project == "" {
		return nil, nil, errors.New("--project is required (a uuid or a name; see chorus project list)")
	}
	p, err := st.ProjectRef(cmd.Context(), company, project)
	if err != nil {
		return nil, nil, err
	}
	if user == "" {
		return p, nil, nil
	}
	u, err := st.UserRef(cmd.Context(), company, user)
	if errors.Is(err, store.ErrNotFound) && create && strings.Contains(user, "@") {
		u, err = st.EnsureUser(cmd.Context(), company, user, "")
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, fmt.Errorf("no user %q in the company (give an email to create one with member add)", user)
	}
	return p, u, err
}

func newMemberAddCmd(g *globals) *cobra.Command {
	var project, user, role string
	cmd := &cobra.Command{
		Use:   "add --project P --user EMAIL|UUID --role viewer|editor|admin",
		Short: "Give a user a role on a project (or change it); its agents act with it on their next request",
		Long: `Give a user a role on a project, or change the role it has. Agents act with their owner's
access, so every agent the user owns sees the change on its next request. On a private project the
role is the access (viewer reads, editor changes, admin manages the project); on a public project
everyone is at least editor, so only admin adds anything. An email that names no user creates one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user == "" {
				return errors.New("--user is required (an email or a user uuid)")
			}
			if err := app.CheckRole(role); err != nil {
				return err // before an unknown email makes a user
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, u, err := memberTarget(cmd, st, company.UUID, project, user, true)
			if err != nil {
				return err
			}
			_, _, changed, err := members(st).GrantProjectRole(ctx, operator(company.UUID), p.UUID, u.UUID, role)
			if err != nil {
				return err
			}
			what := "is already"
			if changed {
				what = "is now"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s) %s %s of project %q (%s, %s)\n", u.DisplayName(), u.UUID, what, role,
				p.Name, p.UUID, p.Visibility)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", "", "the project: uuid or name (required)")
	f.StringVar(&user, "user", "", "the user: email or uuid (required)")
	f.StringVar(&role, "role", "", "viewer, editor or admin (required)")
	return cmd
}

func newMemberListCmd(g *globals) *cobra.Command {
	var project string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --project P",
		Short: "List a project's members and their roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, _, err := memberTarget(cmd, st, company.UUID, project, "", false)
			if err != nil {
				return err
			}
			_, ms, err := members(st).ProjectMembers(ctx, operator(company.UUID), p.UUID)
			if err != nil {
				return err
			}
			if asJSON {
				rows := make([]map[string]any, 0, len(ms))
				for _, m := range ms {
					rows = append(rows, map[string]any{"userUuid": m.UserUUID, "name": m.UserName, "email": m.UserEmail,
						"role": m.Role, "since": m.CreatedAt})
				}
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Project %q (%s, %s)\nUSER\tEMAIL\tROLE\tSINCE\n", p.Name, p.UUID, p.Visibility)
			for _, m := range ms {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.UserUUID, orDash(deref(m.UserEmail)), m.Role, when(&m.CreatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the project: uuid or name (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemberRemoveCmd(g *globals) *cobra.Command {
	var project, user string
	cmd := &cobra.Command{
		Use:   "remove --project P --user EMAIL|UUID",
		Short: "Take a user's role on a project away",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user == "" {
				return errors.New("--user is required (an email or a user uuid)")
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, u, err := memberTarget(cmd, st, company.UUID, project, user, false)
			if err != nil {
				return err
			}
			_, _, removed, err := members(st).RevokeProjectRole(ctx, operator(company.UUID), p.UUID, u.UUID)
			if err != nil {
				return err
			}
			if !removed {
				fmt.Fprintf(cmd.OutOrStdout(), "%s had no role on project %q; nothing changed\n", u.DisplayName(), p.Name)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s no longer has a role on project %q\n", u.DisplayName(), p.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the project: uuid or name (required)")
	cmd.Flags().StringVar(&user, "user", "", "the user: email or uuid (required)")
	return cmd
}

func newProjectSetClaimTTLCmd(g *globals) *cobra.Command {
	var project string
	var seconds int64
	cmd := &cobra.Command{
		Use:   "set-claim-ttl --project P --seconds N",
		Short: "Set how long a task claim lasts without a word from its holder (0: claims never lapse)",
		Long: `Set the project's claim time to live (docs/rules.md §5.10): a claim lapses when its holder sends no
task command or session heartbeat for that many seconds, and the task is released. The setting
applies to claims made after it; claims already held keep the lease they were given. 0 turns
leases off for later claims.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seconds < 0 || seconds > app.MaxClaimTTLSeconds {
				return fmt.Errorf("--seconds must be between 0 and %d (30 days), got %d", app.MaxClaimTTLSeconds, seconds)
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, _, err := memberTarget(cmd, st, company.UUID, project, "", false)
			if err != nil {
				return err
			}
			if _, err := members(st).SetProjectClaimTTL(ctx, operator(company.UUID), p.UUID, seconds); err != nil {
				return err
			}
			if seconds == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "Claims made on project %q from now on do not lapse\n", p.Name)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Claims made on project %q from now on lapse after %ds without a word from their holder\n", p.Name, seconds)
			return nil
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the project: uuid or name (required)")
	cmd.Flags().Int64Var(&seconds, "seconds", 0, "the claim time to live in seconds, 1 to 2592000; 0 for none (required)")
	_ = cmd.MarkFlagRequired("seconds")
	return cmd
}

// ---- chorus agent update ----

func newAgentUpdateCmd(g *globals) *cobra.Command {
	var presets, permissions []string
	var noPermissions, asJSON bool
	cmd := &cobra.Command{
		Use:   "update AGENT_UUID [--preset P]... [--permission resource:action]... [--no-permissions]",
		Short: "Change an agent's presets and extra permission bits; its next request sees them",
		Long: `Change an agent's presets (--preset, repeatable: the list given replaces the agent's) and its
extra permission bits (--permission, repeatable: the list given replaces the agent's; --no-permissions
removes them all). What is not given stays. Permissions are computed on every request, so the
agent's next tools/list and tool calls follow at once; its keys stay valid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var u store.AgentUpdate
			if cmd.Flags().Changed("preset") {
				roles := []string{}
				for _, p := range presets {
					r, err := perm.ParsePreset(p)
					if err != nil {
						return err
					}
					if !slices.Contains(roles, r) {
						roles = append(roles, r)
					}
				}
				u.Roles = &roles
			}
			if noPermissions && cmd.Flags().Changed("permission") {
				return errors.New("--permission and --no-permissions cannot be used together")
			}
			if cmd.Flags().Changed("permission") || noPermissions {
				custom, err := perm.Sorted(permissions)
				if err != nil {
					return err
				}
				if custom == nil {
					custom = []string{}
				}
				u.Permissions = &custom
			}
			if u.Roles == nil && u.Permissions == nil {
				return errors.New("nothing to change: give --preset, --permission or --no-permissions")
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			a, err := st.UpdateAgent(ctx, company.UUID, strings.ToLower(strings.TrimSpace(args[0])), u)
			if err != nil {
				return err
			}
			eff := perm.Effective(a.Roles, a.Permissions)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"uuid": a.UUID, "name": a.Name, "roles": a.Roles,
					"permissions": a.Permissions, "effectivePermissions": eff.Strings()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Updated agent %q (%s)\n  roles:       %s\n  extra bits:  %s\n  permissions: %d of 15 (%s)\n",
				a.Name, a.UUID, orDash(strings.Join(a.Roles, ", ")), orDash(strings.Join(a.Permissions, ", ")),
				len(eff.Bits()), strings.Join(eff.Strings(), " "))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&presets, "preset", nil, "role preset: developer_agent, pm_agent or admin_agent (repeatable; replaces the presets)")
	f.StringArrayVar(&permissions, "permission", nil, "extra permission bit resource:action (repeatable; replaces the extra bits)")
	f.BoolVar(&noPermissions, "no-permissions", false, "remove every extra permission bit")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
