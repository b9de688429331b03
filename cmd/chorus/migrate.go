package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/store"
)

func newMigrateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, undo or list database migrations (CHORUS_DATABASE_URL, else the SQLite file in --data-dir)",
	}
	open := func(cmd *cobra.Command) (*store.Store, error) { return store.Open(cmd.Context(), g.databaseURL()) }
	cmd.AddCommand(&cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			names, err := st.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date\n", store.DescribeURL(g.databaseURL()))
			}
			for _, n := range names {
				fmt.Fprintf(cmd.OutOrStdout(), "applied %s\n", n)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "down",
		Short: "Undo the most recently applied group of migrations (destroys the data in the tables it drops)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			names, err := st.Rollback(cmd.Context())
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to undo")
			}
			for _, n := range names {
				fmt.Fprintf(cmd.OutOrStdout(), "rolled back %s\n", n)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := open(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			ms, err := st.Migrations(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MIGRATION\tSTATUS\tAPPLIED AT")
			for _, m := range ms {
				status, at := "pending", ""
				if m.Applied {
					status, at = "applied", m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
				}
				fmt.Fprintf(tw, "%s_%s\t%s\t%s\n", m.Name, m.Comment, status, at)
			}
			return tw.Flush()
		},
	})
	return cmd
}
