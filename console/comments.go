package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
)

// Comments on every entity (docs/rules.md §4.15): the partial templates/_comments.html, the data
// it takes (commentsFor), the form's post (the same use case as chorus_add_comment) and a page
// of one entity's comments. inbox.go says how a page includes the partial.

const (
	// commentsPageSize is how many comments the partial shows at once.
	commentsPageSize = 20
	// mentionablesShown bounds the people the form offers to @-mention.
	mentionablesShown = 30
)

// commentRow is a comment as the partial shows it.
type commentRow struct {
	UUID       string
	AuthorType string // "user" or "agent"
	AuthorName string
	Content    string
	CreatedAt  time.Time
}

// mentionHint is someone the form offers to @-mention, with the markup that mentions them.
type mentionHint struct {
	Type, Name, Markup string
}

// commentsView is the data of {{template "comments" .}}: one entity's comments and the form.
type commentsView struct {
	TargetType string // idea, proposal, task or document
	TargetUUID string
	Comments   []commentRow
	Total      int
	// More and Newer are links to the next and previous pages of comments ("" when none).
	More, Newer string
	// Back is the console page the form returns to (the page that shows the partial).
	Back      string
	CSRF      string
	RequestID string // a fresh idempotency key: a double submit adds one comment
	Mentions  []mentionHint
	// Content and Error: a refused comment's text, kept, and the refusal shown beside the field.
	Content, Error string
}

// commentsFor is the partial's data for an entity the person can see, on the page being drawn:
// a page of its comments (query parameter "coff"), newest first, the people who can be
// @-mentioned on it, and the form's CSRF token and requestId. A hidden or missing entity is the
// use case's "<Entity> not found" (answer it with c.failure).
func (c *Console) commentsFor(ctx echo.Context, targetType, targetUUID string) (commentsView, error) {
	return c.commentsView(ctx, targetType, targetUUID, ctx.Request().URL)
}

// commentsView builds the partial's data for the page at here (which the form returns to).
func (c *Console) commentsView(ctx echo.Context, targetType, targetUUID string, here *url.URL) (commentsView, error) {
	off := queryNumber(here.Query().Get("coff"))
	r := app.Request{Who: c.request(ctx).Who}
	rows, total, err := c.app.ListComments(ctxOf(ctx), r, targetType, targetUUID, commentsPageSize, off)
	if err != nil {
		return commentsView{}, err
	}
	v := commentsView{TargetType: targetType, TargetUUID: targetUUID, Total: total, Back: safeNext(withoutQuery(here, "coff")),
		RequestID: store.NewUUID()}
	if w := c.who(ctx); w != nil {
		v.CSRF = w.csrf
	}
	nm := c.app.Store.NewNamer()
	refs := make([]store.ActorRef, len(rows))
	for i, cm := range rows {
		refs[i] = store.ActorRef{Type: cm.AuthorType, UUID: cm.AuthorUUID}
	}
	nm.Prefetch(ctxOf(ctx), refs...)
	for _, cm := range rows {
		v.Comments = append(v.Comments, commentRow{UUID: cm.UUID, AuthorType: cm.AuthorType, Content: cm.Content,
			AuthorName: nm.Name(ctxOf(ctx), cm.AuthorType, cm.AuthorUUID), CreatedAt: cm.CreatedAt})
	}
	if off+len(rows) < total {
		v.More = withParam(here, "coff", off+len(rows)) + "#comments"
	}
	if off > 0 {
		v.Newer = withParam(here, "coff", max(off-commentsPageSize, 0)) + "#comments"
	}
	people, err := c.app.Mentionables(ctxOf(ctx), r, "", targetType, &targetUUID)
	if err != nil {
		return commentsView{}, err
	}
	for _, p := range people[:min(len(people), mentionablesShown)] {
		v.Mentions = append(v.Mentions, mentionHint{Type: p.Type, Name: p.Name, Markup: mentionMarkup(p.Type, p.Name, p.UUID)})
	}
	return v, nil
}

// mentionMarkup is the text that @-mentions someone (docs/rules.md §7.3): @[Name](type:uuid),
// brackets and line breaks taken out of the name (the syntax allows neither).
func mentionMarkup(typ, name, uuid string) string {
	name = strings.Map(func(r rune) rune {
		switch r {
		case '[', ']', '\n', '\r':
			return ' '
		}
		return r
	}, name)
	return "@[" + strings.TrimSpace(name) + "](" + typ + ":" + uuid + ")"
}

// withParam is here with query parameter k set to n (0: removed), as a path and query.
func withParam(here *url.URL, k string, n int) string {
	q := here.Query()
	q.Del(k)
	if n > 0 {
		q.Set(k, strconv.Itoa(n))
	}
	u := url.URL{Path: here.Path, RawQuery: q.Encode()}
	return u.RequestURI()
}

// withoutQuery is here without query parameter k, as a path and query.
func withoutQuery(here *url.URL, k string) string { return withParam(here, k, 0) }

// commentPage is one entity's comments on a page of their own: where a document's comments are
// read, and where a refused comment comes back to.
func (c *Console) commentPage(ctx echo.Context) error {
	v, err := c.commentsView(ctx, ctx.Param("type"), ctx.Param("uuid"), ctx.Request().URL)
	if err != nil {
		return c.failure(ctx, err)
	}
	if b := ctx.QueryParam("back"); b != "" {
		v.Back = safeNext(b)
	}
	return c.render(ctx, http.StatusOK, "comment", page{Title: "Comments", Data: v})
}

// addComment is the comment form's post: chorus_add_comment's use case with the form's
// requestId (docs/rules.md §4.15: editor on the target's project; the people it concerns and
// the @-mentioned are notified, the person as the actor). Done: back to the page the form was on.
// Refused (a blank text, a viewer): the comments page with the message beside the field and the
// text kept. A hidden or missing target: not found, as the tool says it.
func (c *Console) addComment(ctx echo.Context) error {
	in := app.AddCommentInput{TargetType: ctx.FormValue("targetType"), TargetUUID: ctx.FormValue("targetUuid"),
		Content: ctx.FormValue("content")}
	back := safeNext(ctx.FormValue("back"))
	_, err := c.app.AddComment(ctxOf(ctx), c.request(ctx), in)
	if err == nil {
		return c.redirect(ctx, back+"#comments", "Comment added.")
	}
	p, ok := refused(err, "content")
	if !ok {
		return c.failure(ctx, err)
	}
	here := &url.URL{Path: Path + "/comments/" + url.PathEscape(in.TargetType) + "/" + url.PathEscape(in.TargetUUID)}
	v, verr := c.commentsView(ctx, in.TargetType, in.TargetUUID, here)
	if verr != nil {
		return c.failure(ctx, verr)
	}
	v.Back, v.Content, v.Error = back, in.Content, p.Error
	p.Title, p.Data = "Comment not added", v
	return c.render(ctx, statusOf(app.Classify(err)), "comment", p)
}

// showMentions is a comment's text for display, escaped, with each @-mention markup
// (docs/rules.md §7.3) shown as @Name.
func showMentions(text string) template.HTML {
	var b strings.Builder
	at := 0
	for _, m := range store.MentionSpans(text) {
		b.WriteString(template.HTMLEscapeString(text[at:m[0]]))
		b.WriteString(`<span class="mention" title="` + template.HTMLEscapeString(text[m[4]:m[5]]) + `">@` +
			template.HTMLEscapeString(strings.TrimSpace(text[m[2]:m[3]])) + `</span>`)
		at = m[1]
	}
	b.WriteString(template.HTMLEscapeString(text[at:]))
	return template.HTML(b.String()) //nolint:gosec // every part is escaped above
}
