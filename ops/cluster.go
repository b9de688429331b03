package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// A database belongs to one Temporal cluster and namespace: the one its first chorus serve or
// chorus dev start reached (store.TemporalBinding). Pointed at another (another deployment's, or
// a dev server started afresh), chorus ops would take that cluster's workflows for this
// database's and "repair" them into it, so it refuses, naming both.

// ErrForeignCluster is the error of a process pointed at a Temporal other than its database's.
var ErrForeignCluster = errors.New("this database belongs to another Temporal")

// BindCluster is what a server does at start: it records the Temporal tc reaches (at address, for
// namespace) as the database's when none is recorded yet, and refuses one of another deployment
// (an error matching ErrForeignCluster). It returns the binding recorded, nil when the server
// could not say who it is (its namespace is missing: /readyz reports that).
func BindCluster(ctx context.Context, st *store.Store, tc client.Client, namespace, address string) (*store.TemporalBinding, error) {
	c, err := workflows.IdentifyCluster(ctx, tc, namespace)
	if err != nil {
		return nil, nil
	}
	b, err := st.BindTemporal(ctx, binding(c, address), false)
	if err != nil {
		return nil, fmt.Errorf("record the Temporal this database belongs to: %w", err)
	}
	if !same(b, c) {
		return &b, foreign(b, c, address)
	}
	return &b, nil
}

// VerifyCluster is what chorus ops does before it reads workflows: it refuses a Temporal of
// another deployment (an error matching ErrForeignCluster, naming both). It returns the recorded
// binding, nil when none is recorded yet (a database no server of this version has started on),
// which it accepts.
func VerifyCluster(ctx context.Context, st *store.Store, tc client.Client, namespace, address string) (*store.TemporalBinding, error) {
	b, err := st.TemporalBinding(ctx)
	if err != nil || b == nil {
		return nil, err
	}
	c, err := workflows.IdentifyCluster(ctx, tc, namespace)
	if err != nil {
		return b, fmt.Errorf("%w; this database belongs to %s", err, DescribeBinding(*b))
	}
	if !same(*b, c) {
		return b, foreign(*b, c, address)
	}
	return b, nil
}

// Rebind records the Temporal tc reaches as the database's, replacing the recorded one: for a
// deployment moved to another Temporal on purpose (chorus ops bind --replace). It returns the
// binding before (nil for none) and after.
func Rebind(ctx context.Context, st *store.Store, tc client.Client, namespace, address string) (*store.TemporalBinding, store.TemporalBinding, error) {
	before, err := st.TemporalBinding(ctx)
	if err != nil {
		return nil, store.TemporalBinding{}, err
	}
	c, err := workflows.IdentifyCluster(ctx, tc, namespace)
	if err != nil {
		return before, store.TemporalBinding{}, err
	}
	after, err := st.BindTemporal(ctx, binding(c, address), true)
	return before, after, err
}

func binding(c workflows.Cluster, address string) store.TemporalBinding {
	return store.TemporalBinding{ClusterID: c.ID, ClusterName: c.Name, Namespace: c.Namespace, NamespaceID: c.NamespaceID,
		Address: address}
}

// same: the namespace (name and id) is the recorded one, and so is the cluster where both sides
// know its id.
func same(b store.TemporalBinding, c workflows.Cluster) bool {
	return b.Namespace == c.Namespace && b.NamespaceID == c.NamespaceID && (b.ClusterID == "" || c.ID == "" || b.ClusterID == c.ID)
}

// DescribeBinding names a recorded binding for people: cluster, namespace and when it was recorded.
func DescribeBinding(b store.TemporalBinding) string {
	return fmt.Sprintf("Temporal %s (recorded %s, when it was reached at %s)",
		workflows.Cluster{ID: b.ClusterID, Name: b.ClusterName, Namespace: b.Namespace, NamespaceID: b.NamespaceID},
		b.BoundAt.UTC().Format(time.RFC3339), b.Address)
}

func foreign(b store.TemporalBinding, c workflows.Cluster, address string) error {
	return fmt.Errorf("%w: it belongs to %s, but %s reaches Temporal %s. Point chorus at the database's own Temporal "+
		"(--temporal-address or TEMPORAL_ADDRESS, or the --data-dir of its chorus dev stack), or, if this deployment "+
		"moved to this Temporal on purpose (its workflows with it), record the move with `chorus ops bind --replace`",
		ErrForeignCluster, DescribeBinding(b), address, c)
}
