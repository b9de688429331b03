package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"go.temporal.io/sdk/temporal"

	"github.com/chorus-dev/chorus/store"
)

// Notify asks for one notification (SPEC 6.2) to each recipient; the workflow chooses them.
type Notify = store.NotifySpec

// Recipient is a user or an agent.
type Recipient = store.Recipient

// chorusNS is the namespace of the name-based (v5) uuids Chorus derives.
var chorusNS = uuid.MustParse("6f0a4b6e-5c1d-4d7e-9a43-3f2b8c1d9e70")

// DerivedUUID returns a uuid determined by parts: the same parts always give the same uuid, so
// rows a workflow creates have ids that survive retries and replays. It is a name-based hash
// laid out as a version-4 uuid, like every other Chorus id (SPEC 1): the hash bits are as
// unpredictable as random ones to anyone who does not know the parts. Workflows name child
// workflows with these ids, so changing this function changes workflow commands: do it only
// behind workflow.GetVersion.
func DerivedUUID(parts ...string) string {
	u := uuid.NewSHA1(chorusNS, []byte(strings.Join(parts, "/")))
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}

// errGone is returned when the row a change applies to has been deleted meanwhile.
func errGone(entity string) error {
	return temporal.NewNonRetryableApplicationError(entity+" not found", "chorus.NotFound", nil)
}

// bumpVersion moves table's row uuid to version, in tx. It reports applied=false when the row
// already has that version or a later one: an earlier attempt of the same change committed, so
// the caller must write nothing more. A missing row is errGone.
func bumpVersion(ctx context.Context, tx bun.Tx, table, entity, uuid string, version int64, at time.Time, q *bun.UpdateQuery) (bool, error) {
	if q == nil {
		q = tx.NewUpdate().Table(table)
	}
	res, err := q.Set("version = ?", version).Set("updated_at = ?", at).
		Where("uuid = ?", uuid).Where("version < ?", version).Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	exists, err := tx.NewSelect().Table(table).Where("uuid = ?", uuid).Exists(ctx)
	if err != nil {
		return false, err
	}
	if !exists {
		return false, errGone(entity)
	}
	return false, nil
}

// writeAudit inserts activity rows and notifications in tx; both have derived uuids, so a retry
// inserts nothing twice.
func writeAudit(ctx context.Context, tx bun.Tx, companyUUID string, acts []ActivityRecord, notes []Notify) error {
	for _, r := range acts {
		row := r.row()
		if _, err := tx.NewInsert().Model(&row).On("CONFLICT (uuid) DO NOTHING").Exec(ctx); err != nil {
			return fmt.Errorf("insert activity %s: %w", r.Action, err)
		}
	}
	for _, n := range notes {
		if err := store.InsertNotifications(ctx, tx, companyUUID, n); err != nil {
			return err
		}
	}
	return nil
}

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
