package activities

import (
	"context"
	"encoding/json"
	"time"

	"github.com/chorus-dev/chorus/store"
)

// Activities is the receiver of every Chorus activity. Register one value with the worker.
type Activities struct {
	Store *store.Store
}

// New returns the activities over a store.
func New(st *store.Store) *Activities { return &Activities{Store: st} }

// ActivityRecord is one audit row to append (SPEC 1.16, 6.1).
type ActivityRecord struct {
	UUID        string
	CompanyUUID string
	ProjectUUID string
	TargetType  string
	TargetUUID  string
	ActorType   string
	ActorUUID   string
	Action      string
	Value       json.RawMessage
	SessionUUID *string
	SessionName *string
	CreatedAt   time.Time
}

// row is the store row of an activity record.
func (r ActivityRecord) row() store.Activity {
	return store.Activity{UUID: r.UUID, CompanyUUID: r.CompanyUUID, ProjectUUID: r.ProjectUUID, TargetType: r.TargetType,
		TargetUUID: r.TargetUUID, ActorType: r.ActorType, ActorUUID: r.ActorUUID, Action: r.Action, Value: r.Value,
		SessionUUID: r.SessionUUID, SessionName: r.SessionName, CreatedAt: r.CreatedAt}
}

// RecordActivity appends one audit row. The row's uuid is chosen by the caller (derived from
// the workflow and update), so a retry inserts nothing twice.
func (a *Activities) RecordActivity(ctx context.Context, r ActivityRecord) error {
	row := r.row()
	_, err := a.Store.DB.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx)
	return err
}
