package store

import (
	"context"

	"github.com/uptrace/bun"
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

// agentInbox selects the notifications addressed to an agent that are not archived.
func agentInbox(db bun.IDB, model any, agentUUID string) *bun.SelectQuery {
	return db.NewSelect().Model(model).Where("recipient_type = 'agent'").Where("recipient_uuid = ?", agentUUID).
		Where("archived_at IS NULL")
}

// ListNotifications returns a page of the agent's notifications, newest first, and, when
// f.MarkRead, marks the unread ones returned as read, in one transaction.
func (s *Store) ListNotifications(ctx context.Context, agentUUID string, f NotificationFilter) (*NotificationPage, error) {
	var out NotificationPage
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		out = NotificationPage{}
		unread, err := agentInbox(tx, (*Notification)(nil), agentUUID).Where("read_at IS NULL").Count(ctx)
		if err != nil {
			return err
		}
		out.Unread = int(unread)
		q := agentInbox(tx, &out.Rows, agentUUID)
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
// was read already; "Notification not found" when it does not exist or is someone else's.
func (s *Store) MarkNotificationRead(ctx context.Context, agentUUID, uuid string) (int, error) {
	if !IsUUID(uuid) {
		return 0, NotFound("Notification")
	}
	var n Notification
	if err := agentInbox(s.DB, &n, agentUUID).Where("uuid = ?", uuid).Scan(ctx); err != nil {
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

// MarkAllNotificationsRead marks every unread notification of the agent read and returns how many.
func (s *Store) MarkAllNotificationsRead(ctx context.Context, agentUUID string) (int, error) {
	now := Now()
	res, err := s.DB.NewUpdate().Model((*Notification)(nil)).Set("read_at = ?", now).Set("updated_at = ?", now).
		Where("recipient_type = 'agent'").Where("recipient_uuid = ?", agentUUID).Where("archived_at IS NULL").
		Where("read_at IS NULL").Exec(ctx)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ListActivity returns a page of a project's activities, or of one entity's when targetUUID is
// given, newest first, and their count. Rows one change wrote share a time and keep the order
// they were written in (reversed): PostgreSQL numbers rows in activities.seq (migration
// 20261201000010), SQLite by rowid.
func (s *Store) ListActivity(ctx context.Context, projectUUID, targetType, targetUUID string, limit, offset int) ([]Activity, int, error) {
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
	return rows, int(total), err
}
