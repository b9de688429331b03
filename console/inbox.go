package console

// The inbox (issue 22, "Notifications and comments"): what waits for the signed-in person — their
// notifications (the same rows chorus_get_notifications gives an agent, addressed to the person:
// recipient type "user", docs/rules.md §4.16, §7.2), unread first, and how many proposals to
// review and tasks to verify wait in the projects where they can decide them — and comments on
// every entity (comments.go).
//
// How another page shows an entity's comments (the placeholders `{{/* comments: inbox helper */}}`):
//
//	cv, err := c.commentsFor(ctx, "task", taskUUID) // in the page's handler, after its own read
//	if err != nil { return c.failure(ctx, err) }
//	... Data: map[string]any{..., "Comments": cv}
//
// and in its template, where the comments go:
//
//	{{template "comments" .Data.Comments}}
//
// The partial (templates/_comments.html) lists a page of the comments (query parameter "coff"
// pages through them), and a form that posts to /console/comments and comes back to the page it
// was on (#comments); a refused comment (blank, or a viewer's) is shown on /console/comments/:type/:uuid
// with the message beside the field and the text kept.

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/store"
)

// inboxPageSize is how many notifications the inbox shows at once.
const inboxPageSize = 50

// inboxRoutes: the inbox, marking notifications read, and comments.
func (c *Console) inboxRoutes(g *echo.Group) {
	g.GET("/inbox", c.inboxPage)
	g.POST("/inbox/read", c.markRead)
	g.POST("/inbox/read-all", c.markAllRead)
	g.GET("/comments/:type/:uuid", c.commentPage)
	g.POST("/comments", c.addComment)
}

// inboxRow is a notification as the inbox shows it.
type inboxRow struct {
	store.Notification
	// Link is the console page of what it is about.
	Link string
}

// inboxView is the inbox page's Data.
type inboxView struct {
	Rows    []inboxRow
	Unread  int // all unread notifications
	Total   int // unread and read
	Offset  int
	Next    int // offset of the next page; 0: none
	Prev    int // offset of the previous page; -1: none
	Waiting store.Waiting
}

// inboxPage lists the person's notifications, unread ones first (each part newest first), 50 to
// a page (query parameter "offset" counts into that order), with what waits for them.
func (c *Console) inboxPage(ctx echo.Context) error {
	off := queryNumber(ctx.QueryParam("offset"))
	r := c.request(ctx)
	unread, err := c.app.ListNotifications(ctxOf(ctx), r, store.NotificationFilter{Status: "unread", Limit: inboxPageSize, Offset: off})
	if err != nil {
		return c.failure(ctx, err)
	}
	rows := unread.Rows
	readOff := max(off-unread.Total, 0)
	read, err := c.app.ListNotifications(ctxOf(ctx), r, store.NotificationFilter{Status: "read",
		Limit: max(inboxPageSize-len(rows), 1), Offset: readOff})
	if err != nil {
		return c.failure(ctx, err)
	}
	if len(rows) < inboxPageSize {
		rows = append(rows, read.Rows...)
	}
	waiting, err := c.app.WaitingFor(ctxOf(ctx), r)
	if err != nil {
		return c.failure(ctx, err)
	}
	v := inboxView{Unread: unread.Total, Total: unread.Total + read.Total, Offset: off, Prev: -1, Waiting: waiting}
	for _, n := range rows {
		v.Rows = append(v.Rows, inboxRow{Notification: n, Link: entityLink(n)})
	}
	if off+len(rows) < v.Total {
		v.Next = off + len(rows)
	}
	if off > 0 {
		v.Prev = max(off-inboxPageSize, 0)
	}
	return c.render(ctx, http.StatusOK, "inbox", page{Title: "Inbox", Nav: "inbox", Data: v})
}

// entityLink is the console page of a notification's entity: an idea's, a proposal's, a task's
// page; a document's comments; the agents page for an agent's check-in; else its project.
func entityLink(n store.Notification) string {
	switch n.EntityType {
	case "idea":
		return Path + "/ideas/" + n.EntityUUID
	case "proposal":
		return Path + "/proposals/" + n.EntityUUID
	case "task":
		return Path + "/tasks/" + n.EntityUUID
	case "project":
		return Path + "/projects/" + n.EntityUUID
	case "document":
		return Path + "/comments/document/" + n.EntityUUID
	case "agent":
		return Path + "/agents"
	}
	if n.ProjectUUID != nil {
		return Path + "/projects/" + *n.ProjectUUID
	}
	return Path + "/inbox"
}

// markRead marks one notification read (chorus_mark_notification_read with notificationUuid):
// one that is not the person's, or of a project they no longer see, is "Notification not found".
func (c *Console) markRead(ctx echo.Context) error {
	n, err := c.app.MarkNotificationRead(ctxOf(ctx), c.request(ctx), ctx.FormValue("notificationUuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	notice := "Marked read."
	if n == 0 {
		notice = "That notification was read already."
	}
	return c.redirect(ctx, c.inboxBack(ctx), notice)
}

// markAllRead marks every unread notification of the person read (chorus_mark_notification_read
// with all: true).
func (c *Console) markAllRead(ctx echo.Context) error {
	n, err := c.app.MarkAllNotificationsRead(ctxOf(ctx), c.request(ctx))
	if err != nil {
		return c.failure(ctx, err)
	}
	notice := "Marked " + strconv.Itoa(n) + " notifications read."
	if n == 1 {
		notice = "Marked 1 notification read."
	}
	return c.redirect(ctx, c.inboxBack(ctx), notice)
}

// inboxBack is the inbox page a mark-read form came from (its offset kept).
func (c *Console) inboxBack(ctx echo.Context) string {
	if off, err := strconv.Atoi(ctx.FormValue("offset")); err == nil && off > 0 {
		return Path + "/inbox?offset=" + strconv.Itoa(off)
	}
	return Path + "/inbox"
}
