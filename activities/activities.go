package activities

import (
	"encoding/json"
	"errors"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/webhook"
)

// Activities is the receiver of every Chorus activity. Register one value with the worker.
type Activities struct {
	Store *store.Store
	// Temporal starts workflows from activities (approval's task workflows); nil in tests that
	// do not approve proposals.
	Temporal client.Client
	// Retention is how long Prune keeps the rows of each bounded table; a zero window means
	// store.DefaultRetention's.
	Retention store.Retention
	// NoNamespaceFloor lets the change journal keep exactly Retention.Journal even when the
	// namespace keeps closed workflows longer (whose resets would then find no journal): only for
	// `chorus bench --phases soak`, whose windows are minutes while a namespace keeps at least an hour.
	NoNamespaceFloor bool
	// SealKeywords, when set, rewrites the search attributes (by name) of each workflow an
	// activity starts: workflows.SealKeywords while payloads are encrypted.
	SealKeywords func(keywords map[string]string)
	// WebhookPolicy is where deliveries may connect (webhook.Policy, checked at each dial); set it
	// before the worker starts. The zero policy reaches public addresses only.
	WebhookPolicy webhook.Policy

	webhooks webhookClient
}

// New returns the activities over a store and a Temporal client.
func New(st *store.Store, tc client.Client) *Activities { return &Activities{Store: st, Temporal: tc} }

// MarshalValue encodes an activity row's value.
func MarshalValue(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	// Maps marshal with sorted keys, so this is deterministic inside workflow code.
	b, err := json.Marshal(v) //workflowcheck:ignore
	if err != nil {
		return nil
	}
	return b
}

// ErrProjectionConflict is the type of the non-retryable error an activity returns when a row is
// not where the change expects it (store.ProjectionConflict; docs/write-path.md). Its details
// hold the conflict.
const ErrProjectionConflict = "chorus.ProjectionConflict"

// outcome turns a store error into what Temporal should do with it: a projection conflict is a
// final, non-retryable outcome carrying its details; a refusal of a Chorus kind (not found)
// likewise; anything else (the database is down, a commit timed out) is retried.
func outcome(err error) error {
	var c *store.ProjectionConflict
	if errors.As(err, &c) {
		return temporal.NewNonRetryableApplicationError(c.Error(), ErrProjectionConflict, nil, *c)
	}
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return temporal.NewNonRetryableApplicationError(nf.Error(), "chorus.NotFound", nil)
	}
	var le *store.LineageError
	if errors.As(err, &le) {
		return temporal.NewNonRetryableApplicationError(le.Error(), ErrLineageChanged, nil, le.Lineage)
	}
	// The database refused the write for a constraint (a row it refers to was deleted meanwhile):
	// the same write would be refused forever, so retrying would only wedge the workflow.
	if store.IsConstraintViolation(err) {
		return temporal.NewNonRetryableApplicationError(constraintMessage, "chorus.Conflict", nil)
	}
	return err
}

// ErrLineageChanged is the type of the non-retryable error of a change whose parent idea no
// longer passes docs/rules.md §5.5 (store.LineageError); its details hold the store.Lineage found.
const ErrLineageChanged = "chorus.LineageChanged"

const constraintMessage = "The change could not be saved because a record it refers to was changed or deleted " +
	"meanwhile; nothing was changed. Read the entities involved and try again."

// AsLineageChanged recovers the lineage found by a change refused with ErrLineageChanged.
func AsLineageChanged(err error) (store.Lineage, bool) {
	var app *temporal.ApplicationError
	var l store.Lineage
	if !errors.As(err, &app) || app.Type() != ErrLineageChanged {
		return l, false
	}
	if app.HasDetails() {
		_ = app.Details(&l)
	}
	return l, true
}

// AsProjectionConflict recovers the conflict from an activity error, as a workflow sees it.
func AsProjectionConflict(err error) (*store.ProjectionConflict, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrProjectionConflict {
		return nil, false
	}
	var c store.ProjectionConflict
	if app.HasDetails() {
		_ = app.Details(&c)
	}
	return &c, true
}
