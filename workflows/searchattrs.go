package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/vocab"
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
	// TitleKey is the idea's, proposal's or task's title (its first MaxKeywordRunes runes), so the
	// Temporal UI's workflow list can show it as a column. A Keyword rather than a Text attribute:
	// PostgreSQL visibility casts Text values to tsvector, which refuses some titles (a trailing
	// backslash), and a Keyword needs no full-text index.
	TitleKey = temporal.NewSearchAttributeKeyKeyword("ChorusTitle")
	// AssigneeNameKey is the name of the agent or user holding an idea or a task (its uuid when
	// the name is not known to the workflow), empty when nobody does: the list column beside
	// ChorusAssignee's uuid.
	AssigneeNameKey = temporal.NewSearchAttributeKeyKeyword("ChorusAssigneeName")
)

// SearchAttributeKeys lists every custom search attribute, for registration: 8 Keyword
// attributes, of the 10 a namespace on SQL visibility (SQLite, PostgreSQL) can have.
var SearchAttributeKeys = []temporal.SearchAttributeKeyKeyword{ProjectUUIDKey, EntityKey, StatusKey, AssigneeKey, CreatorKey,
	ProgressKey, TitleKey, AssigneeNameKey}

// MaxKeywordRunes is the longest value Chorus puts into a Keyword search attribute; longer
// titles and names are cut to it (PostgreSQL visibility stores a Keyword in VARCHAR(255)).
const MaxKeywordRunes = 255

// keywordValue is s cut to MaxKeywordRunes runes (the last one an ellipsis when cut).
func keywordValue(s string) string {
	r := []rune(s)
	if len(r) <= MaxKeywordRunes {
		return s
	}
	return string(r[:MaxKeywordRunes-1]) + "…"
}

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
			strings.Join(names, ", "), err, SetupCommand(namespace))
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

// SetupCommand is the command that creates namespace unless it exists and registers Chorus's
// search attributes in it, for an operator whose workers may not (docs/production.md "Readiness
// and search attributes"): `chorus temporal setup`, which reaches Temporal as chorus serve does.
func SetupCommand(namespace string) string {
	return "chorus temporal setup --namespace " + namespace
}

// initialKeywords are the search attributes an idea, proposal or task workflow starts with, by
// name. A proposal has no assignee, so it starts without ChorusAssignee and ChorusAssigneeName.
func initialKeywords(e vocab.Entity, projectUUID, title, status, creator string) map[string]string {
	m := map[string]string{EntityKey.GetName(): string(e), ProjectUUIDKey.GetName(): projectUUID,
		StatusKey.GetName(): status, CreatorKey.GetName(): creator, TitleKey.GetName(): keywordValue(title)}
	if e != vocab.EntityProposal {
		m[AssigneeKey.GetName()], m[AssigneeNameKey.GetName()] = "", ""
	}
	return m
}

// SealedTitle is the ChorusTitle of a workflow started while payload encryption was on: search
// attributes are never encrypted, so such a workflow shows neither its title nor its assignee's
// name there (both stay in its memo and history, which are). The workflow keeps it for good
// (publishShown reads it from its own search attributes, which continue-as-new carries), so its
// replays publish the same whatever the worker's settings are now. docs/security.md.
const SealedTitle = "(sealed)"

// SealKeywords replaces, in keywords (by name), the title by SealedTitle and the assignee's
// name by "" (when present).
func SealKeywords(keywords map[string]string) {
	if _, ok := keywords[TitleKey.GetName()]; ok {
		keywords[TitleKey.GetName()] = SealedTitle
	}
	if _, ok := keywords[AssigneeNameKey.GetName()]; ok {
		keywords[AssigneeNameKey.GetName()] = ""
	}
}

// initialAttributes is initialKeywords as start options take them, sealed (SealKeywords) when
// seal is set.
func initialAttributes(e vocab.Entity, projectUUID, title, status, creator string, seal bool) temporal.SearchAttributes {
	var attrs []temporal.SearchAttributeUpdate
	keywords := initialKeywords(e, projectUUID, title, status, creator)
	if seal {
		SealKeywords(keywords)
	}
	for _, k := range SearchAttributeKeys {
		if v, ok := keywords[k.GetName()]; ok {
			attrs = append(attrs, k.ValueSet(v))
		}
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
