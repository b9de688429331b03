package mcp

import (
	"context"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Comments, notifications and the activity stream (docs/rules.md §4.15-§4.17, §7). Comments
// are records: plain store transactions, no workflow.

// ---- comments (docs/rules.md §4.15) ----

// CommentTargetIn names what a comment is on.
type CommentTargetIn struct {
	TargetType string `json:"targetType" chorus:"enum=idea|proposal|task|document"`
	TargetUUID UUID   `json:"targetUuid"`
}

// AddCommentIn is chorus_add_comment's input.
type AddCommentIn struct {
	CommentTargetIn
	Content string `json:"content" jsonschema:"markdown" chorus:"minLength=1"`
}

// CommentView is a comment as tools show it.
type CommentView struct {
	UUID       string         `json:"uuid"`
	TargetType string         `json:"targetType"`
	TargetUUID string         `json:"targetUuid"`
	Content    string         `json:"content"`
	Author     store.ActorRef `json:"author"`
	CreatedAt  time.Time      `json:"createdAt"`
	UpdatedAt  time.Time      `json:"updatedAt"`
}

func commentView(ctx context.Context, nm *store.Namer, c store.Comment) CommentView {
	return CommentView{UUID: c.UUID, TargetType: c.TargetType, TargetUUID: c.TargetUUID, Content: c.Content,
		Author:    store.ActorRef{Type: c.AuthorType, UUID: c.AuthorUUID, Name: nm.Name(ctx, c.AuthorType, c.AuthorUUID)},
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

var addComment = tool[AddCommentIn, CommentView]{
	Name: "chorus_add_comment", Title: "Add a comment", Toolset: tsCollab, Perm: perm.Public, Effect: writes,
	Desc: "Comment on an idea, proposal, task or document; the people it concerns and @-mentions are notified.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddCommentIn) (CommentView, error) {
		c, err := d.app().AddComment(ctx, call.Request, app.AddCommentInput{TargetType: in.TargetType,
			TargetUUID: string(in.TargetUUID), Content: in.Content})
		if err != nil {
			return CommentView{}, err
		}
		return commentView(ctx, d.Store.NewNamer(), *c), nil
	},
}

// GetCommentsIn is chorus_get_comments' input.
type GetCommentsIn struct {
	CommentTargetIn
	PageIn
}

// CommentList is chorus_get_comments' result.
type CommentList struct {
	Comments []CommentView `json:"comments"`
	Meta
}

var getComments = tool[GetCommentsIn, CommentList]{
	Name: "chorus_get_comments", Title: "List comments", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "List the comments on an idea, proposal, task or document, newest first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetCommentsIn) (CommentList, error) {
		page, size, offset := in.window(20)
		cs, total, err := d.app().ListComments(ctx, call.Request, in.TargetType, string(in.TargetUUID), size, offset)
		if err != nil {
			return CommentList{}, err
		}
		nm := d.Store.NewNamer()
		refs := make([]store.ActorRef, len(cs))
		for i, c := range cs {
			refs[i] = store.ActorRef{Type: c.AuthorType, UUID: c.AuthorUUID}
		}
		nm.Prefetch(ctx, refs...)
		rows := make([]CommentView, len(cs))
		for i, c := range cs {
			rows[i] = commentView(ctx, nm, c)
		}
		wrap := func(r []CommentView) any {
			return CommentList{Comments: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(rows, wrap)).(CommentList), nil
	},
}

// ---- notifications (docs/rules.md §4.16) ----

// GetNotificationsIn is chorus_get_notifications' input.
type GetNotificationsIn struct {
	Status       string `json:"status,omitempty" jsonschema:"default unread" chorus:"enum=unread|read|all"`
	Limit        int    `json:"limit,omitempty" jsonschema:"default 20" chorus:"min=1;max=100"`
	Offset       int    `json:"offset,omitempty" chorus:"min=0;max=1000000"`
	AutoMarkRead *bool  `json:"autoMarkRead,omitempty" jsonschema:"default true"`
}

// NotificationRow is one notification.
type NotificationRow struct {
	UUID        string     `json:"uuid"`
	ProjectUUID *string    `json:"projectUuid"`
	ProjectName string     `json:"projectName"`
	EntityType  string     `json:"entityType" jsonschema:"task, idea, proposal, document or agent"`
	EntityUUID  string     `json:"entityUuid"`
	EntityTitle string     `json:"entityTitle"`
	Action      string     `json:"action" jsonschema:"what happened: task_assigned, comment_added, mentioned, ..."`
	Message     string     `json:"message"`
	ActorType   string     `json:"actorType"`
	ActorUUID   string     `json:"actorUuid"`
	ActorName   string     `json:"actorName"`
	ReadAt      *time.Time `json:"readAt"`
	CreatedAt   time.Time  `json:"createdAt"`
}

// NotificationList is chorus_get_notifications' result.
type NotificationList struct {
	Notifications []NotificationRow `json:"notifications"`
	Meta
	UnreadCount int `json:"unreadCount" jsonschema:"your unread notifications before this call marked any read"`
}

var getNotifications = tool[GetNotificationsIn, NotificationList]{
	Name: "chorus_get_notifications", Title: "Notifications", Toolset: tsCore, Perm: perm.Public, Effect: writes,
	Desc: "List your notifications, newest first; unread ones by default, then marked read unless autoMarkRead " +
		"is false.",
	ReadOnlyForm: true,
	Run: func(ctx context.Context, d *Deps, call *Call, in GetNotificationsIn) (NotificationList, error) {
		markRead := in.AutoMarkRead == nil || *in.AutoMarkRead
		if call.Conn.ReadOnly {
			if in.AutoMarkRead != nil && *in.AutoMarkRead {
				return NotificationList{}, refuseAs(KindReadOnly, "autoMarkRead true would mark notifications read, and this "+
					"connection is read-only; leave autoMarkRead out (nothing is marked read here)")
			}
			markRead = false
		}
		limit := in.Limit
		if limit < 1 {
			limit = 20
		}
		status := in.Status
		if status == "" {
			status = "unread"
		}
		p, err := d.app().ListNotifications(ctx, call.Request, store.NotificationFilter{Status: status,
			Limit: limit, Offset: in.Offset, MarkRead: markRead})
		if err != nil {
			return NotificationList{}, err
		}
		rows := make([]NotificationRow, len(p.Rows))
		for i, n := range p.Rows {
			rows[i] = NotificationRow{UUID: n.UUID, ProjectUUID: n.ProjectUUID, ProjectName: clip(n.ProjectName),
				EntityType: n.EntityType, EntityUUID: n.EntityUUID, EntityTitle: clip(n.EntityTitle), Action: n.Action,
				Message: n.Message, ActorType: n.ActorType, ActorUUID: n.ActorUUID, ActorName: clip(n.ActorName),
				ReadAt: n.ReadAt, CreatedAt: n.CreatedAt}
		}
		wrap := func(r []NotificationRow) any {
			return NotificationList{Notifications: r, UnreadCount: p.Unread,
				Meta: Meta{Returned: len(r), Page: in.Offset/limit + 1, PageSize: limit, Total: p.Total}}
		}
		return wrap(fit(rows, wrap)).(NotificationList), nil
	},
}

// MarkNotificationReadIn is chorus_mark_notification_read's input.
type MarkNotificationReadIn struct {
	NotificationUUID *UUID `json:"notificationUuid,omitempty"`
	All              bool  `json:"all,omitempty"`
}

// MarkedRead is chorus_mark_notification_read's result.
type MarkedRead struct {
	Success bool `json:"success"`
	Marked  int  `json:"marked" jsonschema:"how many notifications went from unread to read"`
}

var markNotificationRead = tool[MarkNotificationReadIn, MarkedRead]{
	Name: "chorus_mark_notification_read", Title: "Mark notifications read", Toolset: tsCollab, Perm: perm.Public, Effect: writes, Idempotent: true,
	Desc: "Mark one of your notifications read, or all of them.",
	Run: func(ctx context.Context, d *Deps, call *Call, in MarkNotificationReadIn) (MarkedRead, error) {
		if in.All {
			n, err := d.app().MarkAllNotificationsRead(ctx, call.Request)
			return MarkedRead{Success: err == nil, Marked: n}, err
		}
		if in.NotificationUUID == nil {
			return MarkedRead{}, invalid("notificationUuid is required unless all is true: name the notification to mark read, or pass all: true")
		}
		n, err := d.app().MarkNotificationRead(ctx, call.Request, string(*in.NotificationUUID))
		return MarkedRead{Success: err == nil, Marked: n}, err
	},
}

// ---- activity stream (docs/rules.md §4.17) ----

// GetActivityIn is chorus_get_activity's input.
type GetActivityIn struct {
	ProjectUUID UUID   `json:"projectUuid"`
	TargetType  string `json:"targetType,omitempty" chorus:"enum=idea|proposal|task|document"`
	TargetUUID  *UUID  `json:"targetUuid,omitempty" jsonschema:"with targetType: follow one entity"`
	Page        int    `json:"page,omitempty" chorus:"min=1;max=1000000"`
	PageSize    int    `json:"pageSize,omitempty" jsonschema:"default 50" chorus:"min=1;max=100"`
}

// ActivityRow is one activity.
type ActivityRow struct {
	UUID        string     `json:"uuid"`
	TargetType  string     `json:"targetType"`
	TargetUUID  string     `json:"targetUuid"`
	ActorType   string     `json:"actorType"`
	ActorUUID   string     `json:"actorUuid"`
	ActorName   string     `json:"actorName"`
	Action      string     `json:"action"`
	Value       JSONObject `json:"value" jsonschema:"details of the action, or null"`
	SessionUUID *string    `json:"sessionUuid" jsonschema:"the session the actor worked in, when it named one"`
	SessionName *string    `json:"sessionName"`
	CreatedAt   time.Time  `json:"createdAt"`
}

// ActivityList is chorus_get_activity's result.
type ActivityList struct {
	Activities []ActivityRow `json:"activities"`
	Meta
}

var getActivity = tool[GetActivityIn, ActivityList]{
	Name: "chorus_get_activity", Title: "Activity", Toolset: tsCollab, Perm: perm.Public, Effect: reads,
	Desc: "List what happened in a project, or to one entity, newest first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetActivityIn) (ActivityList, error) {
		page, size, offset := PageIn{Page: in.Page, PageSize: in.PageSize}.window(50)
		acts, total, err := d.app().ListActivity(ctx, call.Request, app.ActivityQuery{ProjectUUID: string(in.ProjectUUID),
			TargetType: in.TargetType, TargetUUID: (*string)(in.TargetUUID)}, size, offset)
		if err != nil {
			return ActivityList{}, err
		}
		nm := d.Store.NewNamer()
		refs := make([]store.ActorRef, len(acts))
		for i, a := range acts {
			refs[i] = store.ActorRef{Type: a.ActorType, UUID: a.ActorUUID}
		}
		nm.Prefetch(ctx, refs...)
		rows := make([]ActivityRow, len(acts))
		for i, a := range acts {
			rows[i] = ActivityRow{UUID: a.UUID, TargetType: a.TargetType, TargetUUID: a.TargetUUID, ActorType: a.ActorType,
				ActorUUID: a.ActorUUID, ActorName: nm.Name(ctx, a.ActorType, a.ActorUUID), Action: a.Action,
				Value: jsonValue(a.Value), SessionUUID: a.SessionUUID, SessionName: a.SessionName, CreatedAt: a.CreatedAt}
		}
		wrap := func(r []ActivityRow) any {
			return ActivityList{Activities: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		return wrap(fit(rows, wrap)).(ActivityList), nil
	},
}
