package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// page is what every template gets: the layout's parts and the page's own Data.
type page struct {
	Title string
	// Nav names the menu entry to highlight.
	Nav string
	// Error is shown at the top of the page; Fields holds errors shown beside a form's fields,
	// by field name (the name the tool's input uses).
	Error  string
	Fields map[string]string
	Notice string
	// CSRF is the token every form carries (set by render for a signed-in person).
	CSRF string
	User *store.User
	// Refresh reloads the page every so many seconds (a board that follows the agents' work);
	// 0: never.
	Refresh int
	// Follow is a project whose events reload the page as they come (GET /api/events); Refresh
	// is then the fallback while the stream is down.
	Follow string
	// Unread counts the signed-in person's unread notifications, shown in the nav (set by render).
	Unread int
	Data   any
}

// funcs are the helpers the templates may call.
var funcs = template.FuncMap{
	// eventKinds lists the event kinds a following page listens for (docs/rules.md §7.4).
	"eventKinds": func() string { return strings.Join(vocab.EventKinds, ",") },
	// requestId is a fresh idempotency key for a form: the browser sends the same one if the
	// form is submitted twice, so the action applies once.
	"requestId": func() string { return store.NewUUID() },
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if v != nil {
				return v.UTC().Format("2006-01-02 15:04 UTC")
			}
		}
		return ""
	},
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"short": func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	},
	"join": strings.Join,
	"pct": func(n, of int) int {
		if of == 0 {
			return 0
		}
		return n * 100 / of
	},
	"add":   func(a, b int) int { return a + b },
	"field": func(p page, name string) string { return p.Fields[name] },
	// mentions shows a comment's text with its @-mention markup as @Name (inbox area).
	"mentions": showMentions,
}

// parsePages parses every page template with the layout and the shared partials: page
// "board" is templates/board.html; files starting with "_" are partials, layout.html the frame.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	var shared []string
	for _, n := range names {
		if b := path.Base(n); b == "layout.html" || strings.HasPrefix(b, "_") {
			shared = append(shared, n)
		}
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		b := path.Base(n)
		if b == "layout.html" || strings.HasPrefix(b, "_") {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, append(append([]string{}, shared...), n)...)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", b, err)
		}
		pages[strings.TrimSuffix(b, ".html")] = t
	}
	return pages, nil
}

// render writes page name with status. A signed-in person's user and CSRF token are filled in.
func (c *Console) render(ctx echo.Context, status int, name string, p page) error {
	t, ok := c.pages[name]
	if !ok {
		return fmt.Errorf("console: no page %q", name)
	}
	if w := c.who(ctx); w != nil {
		p.User, p.CSRF = w.user, w.csrf
		n, err := c.app.UnreadNotifications(ctxOf(ctx), c.request(ctx))
		if err != nil {
			c.log.WarnContext(ctxOf(ctx), "console unread count", "err", err)
		}
		p.Unread = n
	}
	if p.Notice == "" {
		p.Notice = c.takeNotice(ctx)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		c.log.ErrorContext(ctxOf(ctx), "console render", "page", name, "err", err)
		return ctx.String(http.StatusInternalServerError, "The console could not draw this page. The server log has the details.")
	}
	return ctx.HTMLBlob(status, buf.Bytes())
}

// failure shows an error from a use case as a page: a refusal in its own words with a status
// that fits, hidden and missing entities as not found, an outage as "try again", and anything
// else as an internal error whose details go to the log only.
func (c *Console) failure(ctx echo.Context, err error) error {
	v := app.Classify(err)
	status, msg := statusOf(v), v.Msg
	if v.Outcome == vocab.OutcomeError && v.Kind == string(vocab.FailedInternal) {
		c.log.ErrorContext(ctxOf(ctx), "console", "path", ctx.Request().URL.Path, "err", err)
		msg = "Something went wrong on the server; nothing is shown of it here. The server log has the details."
	}
	title := "Not done"
	if status == http.StatusNotFound {
		title = "Not found"
	}
	return c.render(ctx, status, "error", page{Title: title, Error: msg})
}

// statusOf is the HTTP status of a use case's verdict.
func statusOf(v app.Verdict) int {
	if v.Outcome == vocab.OutcomeError {
		switch vocab.FailureKind(v.Kind) {
		case vocab.FailedUnavailable, vocab.FailedStillRunning:
			return http.StatusServiceUnavailable
		}
		return http.StatusInternalServerError
	}
	switch vocab.RefusalKind(v.Kind) {
	case vocab.RefusedNotFound:
		return http.StatusNotFound
	case vocab.RefusedForbidden:
		return http.StatusForbidden
	case vocab.RefusedInvalid:
		return http.StatusUnprocessableEntity
	}
	return http.StatusConflict
}

// fieldError splits a refusal about one input field ("note: required ...", "Input validation
// error: title must ...") into the field and the message, so a form shows it beside the field;
// ok is false when the message names none of fields.
func fieldError(msg string, fields ...string) (field string, ok bool) {
	lower := strings.ToLower(msg)
	for _, f := range fields {
		lf := strings.ToLower(f)
		for _, shape := range []string{lf + ":", lf + " ", "\"" + lf + "\"", "`" + lf + "`"} {
			if strings.HasPrefix(lower, shape) || strings.Contains(lower, "error: "+shape) ||
				strings.Contains(lower, " "+shape) {
				return f, true
			}
		}
	}
	return "", false
}
