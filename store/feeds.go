package store

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// The caller's notifications and a project's activity stream (docs/rules.md §4.16, §4.17).

// NotificationFilter is one chorus_get_notifications call.
type NotificationFilter struct {
	Status   string // "unread" (default), "read" or "all"
	Limit    int
	Offset   int
	MarkRead bool // mark the unread rows returned as read (only with Status "unread")
}

// NotificationPage is a page of an agent's notifications.
type NotificationPage struct {
	Rows  []Notification
	Total int
	// Unread counts the agent's unread notifications before this call marked any.
	Unread int
}

// callerInbox selects the notifications addressed to the caller that are not archived and
// whose project the caller can still see (docs/rules.md §4.16): one of a project it lost access
// to, or of a project deleted since, is neither shown nor counted nor marked. An agent's are
// those with recipient type "agent"; a person's in the console (Caller.Kind "user", AgentUUID
// the user's uuid) those with recipient type "user", such as an agent's @-mention of them (§7.3).
func (s *Store) callerInbox(db bun.IDB, model any, c Caller) *bun.SelectQuery {
	return db.NewSelect().Model(model).Where("recipient_type = ?", c.Kind()).Where("recipient_uuid = ?", c.AgentUUID).
		Where("archived_at IS NULL").Where("(project_uuid IS NULL OR project_uuid IN (?))", s.visibleProjectIDs(c))
}

// ListNotifications returns a page of the agent's notifications, newest first, and, when
// f.MarkRead, marks the unread ones returned as read, in one transaction.
func (s *Store) ListNotifications(ctx context.Context, c Caller, f NotificationFilter) (*NotificationPage, error) {
	var out NotificationPage
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = NotificationPage{}
		unread, err := s.callerInbox(tx, (*Notification)(nil), c).Where("read_at IS NULL").Count(ctx)
		if err != nil {
			return err
		}
		out.Unread = int(unread)
		q := s.callerInbox(tx, &out.Rows, c)
		switch f.Status {
		case "read":
			q = q.Where("read_at IS NOT NULL")
		case "all":
		default:
			q = q.Where("read_at IS NULL")
		}
		total, err := q.Order("created_at DESC", "uuid DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
		if err != nil {
			return err
		}
		out.Total = int(total)
		if !f.MarkRead || (f.Status != "" && f.Status != "unread") {
			return nil
		}
		var ids []string
		now := Now()
		for i := range out.Rows {
			if out.Rows[i].ReadAt == nil {
				ids = append(ids, out.Rows[i].UUID)
				out.Rows[i].ReadAt = &now
			}
		}
		if len(ids) == 0 {
			return nil
		}
		_, err = tx.NewUpdate().Model((*Notification)(nil)).Set("read_at = ?", now).Set("updated_at = ?", now).
			Where("uuid IN (?)", bun.List(ids)).Where("read_at IS NULL").Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// MarkNotificationRead marks one of the agent's notifications read and returns 1, or 0 when it
// was read already; "Notification not found" when it does not exist, is someone else's, or its
// project is hidden from the caller.
func (s *Store) MarkNotificationRead(ctx context.Context, c Caller, uuid string) (int, error) {
	if !vocab.IsUUID(uuid) {
		return 0, NotFound("Notification")
	}
	var n Notification
	if err := s.callerInbox(s.DB, &n, c).Where("uuid = ?", uuid).Scan(ctx); err != nil {
		return 0, mapErr(err, "Notification")
	}
	now := Now()
	res, err := s.DB.NewUpdate().Model((*Notification)(nil)).Set("read_at = ?", now).Set("updated_at = ?", now).
		Where("uuid = ?", uuid).Where("read_at IS NULL").Exec(ctx)
	if err != nil {
		return 0, err
	}
	k, _ := res.RowsAffected()
	return int(k), nil
}

// MarkAllNotificationsRead marks every unread notification the agent can see read and returns how many.
func (s *Store) MarkAllNotificationsRead(ctx context.Context, c Caller) (int, error) {
	now := Now()
	res, err := s.DB.NewUpdate().Model((*Notification)(nil)).Set("read_at = ?", now).Set("updated_at = ?", now).
		Where("uuid IN (?)", s.callerInbox(s.DB, (*Notification)(nil), c).Column("uuid").Where("read_at IS NULL")).Exec(ctx)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// UnreadNotifications counts the caller's unread notifications (the ones ListNotifications
// counts as Unread), in one query: the console's nav shows it on every page.
func (s *Store) UnreadNotifications(ctx context.Context, c Caller) (int, error) {
	n, err := s.callerInbox(s.DB, (*Notification)(nil), c).Where("read_at IS NULL").Count(ctx)
	return int(n), err
}

// ListActivity returns a page of a project's activities, or of one entity's when targetUUID is
// given, newest first, and their count. Rows one change wrote share a time and keep the order
// they were written in (reversed): PostgreSQL numbers rows in activities.seq (migration
// 20261201000010), SQLite by rowid.
//
// What a row says of another project is shown only to a caller who can see that project
// (docs/rules.md §6.3, "Across projects"; see foreignNames).
func (s *Store) ListActivity(ctx context.Context, c Caller, projectUUID, targetType, targetUUID string, limit, offset int) ([]Activity, int, error) {
	var rows []Activity
	q := s.DB.NewSelect().Model(&rows).Where("activity.project_uuid = ?", projectUUID)
	if targetUUID != "" {
		q = q.Where("activity.target_type = ?", targetType).Where("activity.target_uuid = ?", targetUUID)
	}
	order := "activity.rowid DESC"
	if s.Dialect() == "pg" {
		order = "activity.seq DESC"
	}
	total, err := q.OrderExpr("activity.created_at DESC").OrderExpr(order).
		Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, err
	}
	return rows, int(total), s.foreignNames(ctx, c, rows)
}

// foreignNames withholds, from a caller who cannot see it, the other project an activity names:
// the source project of a "moved" (fromProjectUuid, fromProjectName become null). Every other
// activity is written in the project of what it tells (docs/rules.md §7.1), so this is the one
// value that crosses projects; it is judged when read, since access changes after it is written.
func (s *Store) foreignNames(ctx context.Context, c Caller, rows []Activity) error {
	var from []string
	values := make([]map[string]any, len(rows))
	for i, a := range rows {
		if a.Action != "moved" || len(a.Value) == 0 {
			continue
		}
		var v map[string]any
		if json.Unmarshal(a.Value, &v) != nil {
			continue
		}
		if p, ok := v["fromProjectUuid"].(string); ok && vocab.IsUUID(p) {
			values[i] = v
			from = append(from, p)
		}
	}
	if len(from) == 0 {
		return nil
	}
	var visible []string
	if err := s.visibleProjectIDs(c).Where("vp.uuid IN (?)", bun.List(from)).Scan(ctx, &visible); err != nil {
		return err
	}
	for i, v := range values {
		if v == nil || slices.Contains(visible, v["fromProjectUuid"].(string)) {
			continue
		}
		v["fromProjectUuid"], v["fromProjectName"] = nil, nil
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		rows[i].Value = b
	}
	return nil
}
