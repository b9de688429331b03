package workflows

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Cluster identifies the Temporal a client reaches: the cluster (GetClusterInfo's id and name)
// and the namespace with its id. A namespace's id is drawn when it is created, so two servers
// never share one; ID and Name are "" where the server does not answer GetClusterInfo.
type Cluster struct {
	ID          string
	Name        string
	Namespace   string
	NamespaceID string
}

func (c Cluster) String() string {
	cluster := "cluster " + c.Name
	if c.ID != "" {
		cluster += " (" + c.ID + ")"
	}
	return fmt.Sprintf("%s, namespace %s (%s)", cluster, c.Namespace, c.NamespaceID)
}

// IdentifyCluster asks the server c reaches who it is, for namespace.
func IdentifyCluster(ctx context.Context, c client.Client, namespace string) (Cluster, error) {
	out := Cluster{Namespace: namespace}
	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		return out, fmt.Errorf("describe the Temporal namespace %q: %w", namespace, err)
	}
	out.NamespaceID = ns.GetNamespaceInfo().GetId()
	info, err := c.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
	var unimplemented *serviceerror.Unimplemented
	var denied *serviceerror.PermissionDenied
	switch {
	case errors.As(err, &unimplemented), errors.As(err, &denied):
		return out, nil // a hosted Temporal may not tell: the namespace id still does
	case err != nil:
		return out, fmt.Errorf("read the Temporal cluster's identity: %w", err)
	}
	out.ID, out.Name = info.GetClusterId(), info.GetClusterName()
	return out, nil
}
