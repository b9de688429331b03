package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/ops"
)

func newOpsBindCmd(g *globals) *cobra.Command {
	o := opsOptions{}
	var replace bool
	cmd := &cobra.Command{
		Use:   "bind",
		Short: "Record the Temporal cluster and namespace this database belongs to (--replace after a move)",
		Long: `A database belongs to one Temporal cluster and namespace: the first chorus serve or chorus dev start
records the one it reaches, and every chorus ops command (and every later start) refuses another,
naming both, so that one deployment's rows are never compared with, or repaired into, another's
workflows.

"chorus ops bind" records the Temporal it reaches when the database has none recorded yet, and
says which one is recorded. After moving a deployment to another Temporal on purpose (its
workflows with it, or to be restarted there by "chorus ops repair --all"), "chorus ops bind
--replace" records the new one.

Exit status: 0 when the Temporal reached is (now) the database's, 1 when another is recorded
(without --replace), 2 when it could not run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			st, err := g.openStore(ctx)
			if err != nil {
				return exitWith(2, err)
			}
			defer st.Close()
			addr := o.address(g)
			c := o.temporal
			c.address = addr
			tc, err := dialTemporal(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), c, 10*time.Second)
			if err != nil {
				return exitWith(2, err)
			}
			defer tc.Close()
			if replace {
				before, after, err := ops.Rebind(ctx, st, tc, o.temporal.namespace, addr)
				if err != nil {
					return exitWith(2, err)
				}
				if before != nil {
					fmt.Fprintf(out, "was: %s at %s\n", ops.DescribeBinding(*before), before.Address)
				}
				fmt.Fprintf(out, "now: %s at %s\n", ops.DescribeBinding(after), after.Address)
				return nil
			}
			b, err := ops.BindCluster(ctx, st, tc, o.temporal.namespace, addr)
			switch {
			case errors.Is(err, ops.ErrForeignCluster):
				fmt.Fprintln(out, err)
				return exitError{code: 1}
			case err != nil:
				return exitWith(2, err)
			case b == nil:
				return exitWith(2, fmt.Errorf("the Temporal at %s does not say who it is (does namespace %q exist?)", addr, o.temporal.namespace))
			}
			fmt.Fprintf(out, "this database belongs to %s, reached at %s\n", ops.DescribeBinding(*b), addr)
			return nil
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&replace, "replace", false, "replace the recorded Temporal with the one reached (after a deliberate move)")
	return cmd
}
