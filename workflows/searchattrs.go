package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Custom search attributes Chorus keeps current on every workflow, so operators can filter in
// the Temporal UI, e.g. ChorusStatus="to_verify" AND ChorusEntity="task". They are for
// operators only; the app reads its own database. Each has one meaning on every entity:
// ChorusAssignee is the assignee of an idea or a task (proposals have none and leave it unset),
// ChorusCreator the uuid of whoever created the idea, proposal or task.
var (
	ProjectUUIDKey = temporal.NewSearchAttributeKeyKeyword("ChorusProjectUuid")
	EntityKey      = temporal.NewSearchAttributeKeyKeyword("ChorusEntity")
	StatusKey      = temporal.NewSearchAttributeKeyKeyword("ChorusStatus")
	AssigneeKey    = temporal.NewSearchAttributeKeyKeyword("ChorusAssignee")
	CreatorKey     = temporal.NewSearchAttributeKeyKeyword("ChorusCreator")
	// ProgressKey is an idea's derived status (docs/rules.md §5.1): todo, in_progress,
	// human_conduct_required or done. Only idea workflows set it; ChorusStatus keeps the stored
	// status. It follows the database within moments of a change (SignalRefreshProgress).
	ProgressKey = temporal.NewSearchAttributeKeyKeyword("ChorusProgress")
)

// SearchAttributeKeys lists every custom search attribute, for registration.
var SearchAttributeKeys = []temporal.SearchAttributeKeyKeyword{ProjectUUIDKey, EntityKey, StatusKey, AssigneeKey, CreatorKey,
	ProgressKey}

// SearchAttributeFlags are the `temporal server start-dev --search-attribute` values that
// pre-register Chorus's attributes on a dev server.
func SearchAttributeFlags() []string {
	var out []string
	for _, k := range SearchAttributeKeys {
		out = append(out, "--search-attribute", k.GetName()+"=Keyword")
	}
	return out
}

// EnsureSearchAttributes registers any of Chorus's search attributes the namespace lacks.
// It is idempotent and safe to run from every worker at start.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, k := range SearchAttributeKeys {
		if _, ok := have.GetCustomAttributes()[k.GetName()]; !ok {
			missing[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "already") {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("register search attributes %s: %w (an operator can register them with: %s)",
			strings.Join(names, ", "), err, strings.Join(SearchAttributeCommands(namespace), "; "))
	}
	return nil
}

// MissingSearchAttributes names Chorus's search attributes that namespace has not registered
// (nil when all are). It fails when the namespace cannot be read (it does not exist, or the
// server cannot be reached).
func MissingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, k := range SearchAttributeKeys {
		if _, ok := have.GetCustomAttributes()[k.GetName()]; !ok {
			missing = append(missing, k.GetName())
		}
	}
	return missing, nil
}

// SearchAttributeCommands are the Temporal CLI commands that register Chorus's search
// attributes in namespace by hand, for an operator whose workers may not (README "Readiness").
func SearchAttributeCommands(namespace string) []string {
	out := make([]string, 0, len(SearchAttributeKeys))
	for _, k := range SearchAttributeKeys {
		out = append(out, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type Keyword",
			namespace, k.GetName()))
	}
	return out
}

// initialAttributes are the search attributes an idea, proposal or task workflow starts with.
// A proposal has no assignee, so it starts without ChorusAssignee.
func initialAttributes(e Entity, projectUUID, status, creator string) temporal.SearchAttributes {
	attrs := []temporal.SearchAttributeUpdate{EntityKey.ValueSet(string(e)), ProjectUUIDKey.ValueSet(projectUUID),
		StatusKey.ValueSet(status), CreatorKey.ValueSet(creator)}
	if e != EntityProposal {
		attrs = append(attrs, AssigneeKey.ValueSet(""))
	}
	return temporal.NewSearchAttributes(attrs...)
}

// SearchAttributeReadyQuery is a visibility query naming every one of Chorus's search
// attributes: the frontend answers it once its namespace cache maps them all, and until then
// it also refuses to start workflows that set them.
func SearchAttributeReadyQuery() string {
	parts := make([]string, 0, len(SearchAttributeKeys))
	for _, k := range SearchAttributeKeys {
		parts = append(parts, k.GetName()+" = 'ready-check'")
	}
	return strings.Join(parts, " AND ")
}
