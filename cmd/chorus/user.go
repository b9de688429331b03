package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/console"
	"github.com/chorus-dev/chorus/store"
)

// People of the company, who sign in to the console (docs/rules.md "People in the console").

func newUserCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Add and list the people who sign in to the console, and make sign-in links"}
	cmd.AddCommand(newUserCreateCmd(g), newUserListCmd(g), newUserLoginLinkCmd(g))
	return cmd
}

func newUserCreateCmd(g *globals) *cobra.Command {
	var name string
	var admin bool
	cmd := &cobra.Command{
		Use:   "create <email>",
		Short: "Add a person (a member; --admin for a company admin, who manages people, agents and keys)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			role := store.RoleMember
			if admin {
				role = store.RoleAdmin
			}
			u, err := st.CreateUser(ctx, company.UUID, args[0], name, role)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s %s (%s)\nsign-in link: chorus user login-link %s\n", u.Role, u.DisplayName(),
				u.UUID, deref(u.Email))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "display name (default: the e-mail)")
	cmd.Flags().BoolVar(&admin, "admin", false, "make the person a company admin")
	return cmd
}

func newUserListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the company's people",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			us, err := st.ListUsers(ctx, company.UUID)
			if err != nil {
				return err
			}
			if asJSON {
				rows := make([]map[string]any, 0, len(us))
				for _, u := range us {
					rows = append(rows, map[string]any{"uuid": u.UUID, "email": u.Email, "name": u.DisplayName(), "role": u.Role})
				}
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "UUID\tEMAIL\tNAME\tROLE")
			for _, u := range us {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.UUID, orDash(deref(u.Email)), u.DisplayName(), u.Role)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newUserLoginLinkCmd(g *globals) *cobra.Command {
	var base string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "login-link <email>",
		Short: "Print a one-time console sign-in link for a person (it works once, until it expires)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl <= 0 || ttl > 7*24*time.Hour {
				return fmt.Errorf("--ttl must be above 0 and at most 168h, got %s", ttl)
			}
			ctx := cmd.Context()
			st, company, err := g.openCompany(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			u, err := st.UserByEmail(ctx, company.UUID, args[0])
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no user with e-mail %s: add them with chorus user create %s", args[0], args[0])
			}
			if err != nil {
				return err
			}
			if base == "" {
				base = defaultConsoleOrigin(g.dataDir)
			}
			link, err := loginLink(ctx, st, u, base, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), link)
			return nil
		},
	}
	cmd.Flags().StringVar(&base, "console-url", envOr("CHORUS_CONSOLE_URL", ""),
		"where people reach the console, e.g. https://chorus.example.com (default: the origin of CHORUS_URL, else the "+
			"address chorus dev last served on, else http://127.0.0.1:8637; env CHORUS_CONSOLE_URL)")
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the link stays usable")
	return cmd
}

// consoleOriginFile is where chorus dev notes the origin it serves the console on, for
// chorus user login-link.
const consoleOriginFile = "console.origin"

// defaultConsoleOrigin is the console's origin when --console-url is not given: the origin of
// CHORUS_URL, else what chorus dev noted in dataDir, else the default address.
func defaultConsoleOrigin(dataDir string) string {
	if mcpURL, err := url.Parse(envOr("CHORUS_URL", "")); err == nil && mcpURL.Host != "" {
		return mcpURL.Scheme + "://" + mcpURL.Host
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, consoleOriginFile)); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "http://127.0.0.1:8637"
}

// loginLink makes a sign-in link for u at the console under base, an http(s) origin.
func loginLink(ctx context.Context, st *store.Store, u *store.User, base string, ttl time.Duration) (string, error) {
	if p, err := url.Parse(base); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("--console-url %q must be an http(s) origin such as https://chorus.example.com", base)
	}
	token, err := st.CreateLoginLink(ctx, u, ttl)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(base, "/") + console.Path + "/login/link/" + token, nil
}
