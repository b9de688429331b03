package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Notifications and the activity stream (docs/rules.md §4.16, §4.17, §7): reads of the caller's
// inbox and of a project's history.

// ListNotifications is a page of the caller's notifications, newest first; f.MarkRead marks the
// unread ones of the page read.
func (a *App) ListNotifications(ctx context.Context, r Request, f store.NotificationFilter) (*store.NotificationPage, error) {
	return a.Store.ListNotifications(ctx, r.Who.Caller, f)
}

// MarkNotificationRead marks one of the caller's notifications read and says how many changed.
func (a *App) MarkNotificationRead(ctx context.Context, r Request, notificationUUID string) (int, error) {
	return a.Store.MarkNotificationRead(ctx, r.Who.Caller, notificationUUID)
}

// MarkAllNotificationsRead marks all the caller's notifications read and says how many changed.
func (a *App) MarkAllNotificationsRead(ctx context.Context, r Request) (int, error) {
	return a.Store.MarkAllNotificationsRead(ctx, r.Who.Caller)
}

// ActivityQuery names a project's activity, or one entity's of that project (TargetType and
// TargetUUID, both or neither).
type ActivityQuery struct {
	ProjectUUID string
	TargetType  string
	TargetUUID  *string
}

// ListActivity is a page of what happened in a project, or to one entity of it, newest first, and
// how many there are.
func (a *App) ListActivity(ctx context.Context, r Request, q ActivityQuery, size, offset int) ([]store.Activity, int, error) {
	if (q.TargetType == "") != (q.TargetUUID == nil) {
		return nil, 0, Refuse(vocab.RefusedInvalid, "Input validation error: targetType and targetUuid go together: give "+
			"both to follow one entity, or neither for the whole project")
	}
	if _, err := a.Store.RequireProject(ctx, r.Who.Caller, q.ProjectUUID, store.AccessViewer); err != nil {
		return nil, 0, err
	}
	var target string
	if q.TargetUUID != nil {
		t, _, err := a.Store.EntityAccess(ctx, r.Who.Caller, q.TargetType, *q.TargetUUID, store.AccessViewer)
		if err != nil {
			return nil, 0, err
		}
		if t.ProjectUUID != q.ProjectUUID {
			return nil, 0, store.NotFound(store.EntityName(q.TargetType))
		}
		target = t.UUID
	}
	return a.Store.ListActivity(ctx, r.Who.Caller, q.ProjectUUID, q.TargetType, target, size, offset)
}

// UnreadNotifications counts the caller's unread notifications that ListNotifications would
// show (docs/rules.md §4.16: those of projects the caller can still see), in one query.
func (a *App) UnreadNotifications(ctx context.Context, r Request) (int, error) {
	return a.Store.UnreadNotifications(ctx, r.Who.Caller)
}

// WaitingFor counts the proposals to review and tasks to verify in the projects where the caller
// can decide them: editor or better (docs/rules.md §6.3, "Levels"); hidden projects count nothing.
func (a *App) WaitingFor(ctx context.Context, r Request) (store.Waiting, error) {
	return a.Store.WaitingFor(ctx, r.Who.Caller)
}
