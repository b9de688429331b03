package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/chorus-dev/chorus/workflows"
)

// newTemporalCmd is `chorus temporal`: setting up the Temporal a production Chorus uses.
func newTemporalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "temporal",
		Short: "Set up the Temporal namespace Chorus uses (namespace and search attributes)",
	}
	cmd.AddCommand(newTemporalSetupCmd())
	return cmd
}

func newTemporalSetupCmd() *cobra.Command {
	var (
		tc        temporalConfig
		retention time.Duration
		wait      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Wait for Temporal, create the namespace unless it exists, and register Chorus's search attributes",
		Long: `Waits until the Temporal frontend at --temporal-address (env TEMPORAL_ADDRESS) is healthy, creates
--namespace (env TEMPORAL_NAMESPACE) with --retention unless it exists, registers those of
Chorus's search attributes it lacks, and waits until the frontend maps them all (until then it
refuses to start Chorus's workflows). Safe to run again: what exists is left alone. It fails if
any step is not done within --wait.

It connects as chorus serve does (TEMPORAL_TLS*, TEMPORAL_API_KEY; docs/security.md), and needs
Temporal's operator rights on the namespace. docs/production.md "Production without Docker", step 5.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v := envOr("TEMPORAL_NAMESPACE_RETENTION", ""); v != "" && !cmd.Flags().Changed("retention") {
				if _, err := time.ParseDuration(v); err != nil {
					return fmt.Errorf("TEMPORAL_NAMESPACE_RETENTION %q is not a duration: give hours, e.g. 720h", v)
				}
			}
			if retention < 24*time.Hour {
				return fmt.Errorf("--retention %s is too short: Temporal needs at least 24h (e.g. --retention 720h)", retention)
			}
			if wait <= 0 {
				return fmt.Errorf("--wait must be positive (e.g. --wait 3m)")
			}
			tc.namespace = strings.TrimSpace(tc.namespace)
			if tc.namespace == "" {
				return errors.New("--namespace is empty: name the Temporal namespace Chorus uses (e.g. --namespace default)")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			c, err := dialTemporal(ctx, log, tc, wait)
			if err != nil {
				return err
			}
			defer c.Close()
			return setupTemporal(ctx, c, tc.namespace, retention, cmd.OutOrStdout())
		},
	}
	tc.flags(cmd, true, "127.0.0.1:7233")
	cmd.Flags().DurationVar(&retention, "retention", envDuration("TEMPORAL_NAMESPACE_RETENTION", 720*time.Hour),
		"how long Temporal keeps a closed workflow's history, for a namespace it creates (env TEMPORAL_NAMESPACE_RETENTION)")
	cmd.Flags().DurationVar(&wait, "wait", 3*time.Minute, "how long to wait for Temporal and for each step before failing")
	return cmd
}

// envDuration is the duration in the environment variable name, else def (also when it does not
// parse; the command then refuses it by name).
func envDuration(name string, def time.Duration) time.Duration {
	if v := strings.TrimSpace(envOr(name, "")); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

// setupTemporal does `chorus temporal setup` on c until ctx ends: waits for the cluster to be
// healthy, registers namespace (retention) unless it exists, adds the search attributes it lacks
// (workflows.SearchAttributeKeys) and waits until the frontend maps them all. Each step says on
// out what it did. Idempotent.
func setupTemporal(ctx context.Context, c client.Client, namespace string, retention time.Duration, out io.Writer) error {
	retry := func(what string, step func() error) error {
		for {
			err := step()
			if err == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: not done in time: %w", what, err)
			case <-time.After(time.Second): // poll interval
			}
		}
	}
	if err := retry("wait for the Temporal cluster to be healthy", func() error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintln(out, "temporal setup: the Temporal cluster is healthy")

	created := false
	if err := retry("create namespace "+namespace, func() error {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		var nf *serviceerror.NamespaceNotFound
		if !errors.As(err, &nf) {
			return err
		}
		_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(retention),
			Description: "Chorus (created by chorus temporal setup)"})
		var exists *serviceerror.NamespaceAlreadyExists
		if errors.As(err, &exists) {
			return nil
		}
		created = err == nil
		return err
	}); err != nil {
		return err
	}
	if created {
		fmt.Fprintf(out, "temporal setup: created namespace %s (retention %s)\n", namespace, retention)
	} else {
		fmt.Fprintf(out, "temporal setup: namespace %s already exists\n", namespace)
	}

	// A new namespace reaches the server's namespace caches within about 10 s; until then its
	// search attributes cannot be listed or added.
	var missing []string
	if err := retry("read the search attributes of namespace "+namespace, func() (err error) {
		missing, err = workflows.MissingSearchAttributes(ctx, c, namespace)
		return err
	}); err != nil {
		return err
	}
	if len(missing) > 0 {
		if err := retry("register search attributes in namespace "+namespace, func() error {
			return workflows.EnsureSearchAttributes(ctx, c, namespace)
		}); err != nil {
			return err
		}
		fmt.Fprintf(out, "temporal setup: registered search attributes %s in %s\n", strings.Join(missing, ", "), namespace)
	} else {
		fmt.Fprintf(out, "temporal setup: namespace %s has every Chorus search attribute\n", namespace)
	}

	// The frontend refuses workflow starts with these attributes until its namespace cache maps
	// them, a few seconds after they were added.
	query := workflows.SearchAttributeReadyQuery()
	if err := retry("see the search attributes in namespace "+namespace, func() error {
		_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "temporal setup: namespace %s is ready for Chorus\n", namespace)
	return nil
}
