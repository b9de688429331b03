package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/vocab"
)

// noticeCookie carries a one-line notice ("Proposal approved") across the redirect that follows
// a successful form post, to the page it lands on.
const noticeCookie = "chorus_notice"

// redirect answers a successful form post: 303 See Other to a page, which shows notice once.
// Reloading that page repeats nothing (post/redirect/get).
func (c *Console) redirect(ctx echo.Context, to, notice string) error {
	if notice != "" {
		c.setCookie(ctx, noticeCookie, url.QueryEscape(notice), 60)
	}
	return ctx.Redirect(http.StatusSeeOther, to)
}

// takeNotice is the notice a redirect left for this page, cleared as it is read.
func (c *Console) takeNotice(ctx echo.Context) string {
	ck, err := ctx.Cookie(noticeCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	c.clearCookie(ctx, noticeCookie)
	s, err := url.QueryUnescape(ck.Value)
	if err != nil {
		return ""
	}
	return s
}

// refused turns a use case's refusal into what a form shows: the message at the top, and beside
// the field it names when it names one of fields (the tool's input names, "note", "title", ...).
// ok is false for anything that is not a refusal a form can show (not found, an outage, a bug):
// answer those with c.failure.
func refused(err error, fields ...string) (p page, ok bool) {
	v := app.Classify(err)
	if v.Outcome != vocab.OutcomeRefused || vocab.RefusalKind(v.Kind) == vocab.RefusedNotFound {
		return page{}, false
	}
	p.Error = v.Msg
	if f, named := fieldError(v.Msg, fields...); named {
		p.Fields = map[string]string{f: v.Msg}
	}
	return p, true
}

// maxQueryNumber bounds a page number or offset taken from a URL: far past any real list, and
// small enough that page*size cannot overflow.
const maxQueryNumber = 1_000_000

// queryNumber reads a non-negative whole number from a URL value: missing, malformed or
// negative is 0, and anything above maxQueryNumber is maxQueryNumber (a page past the end
// shows an empty page with a way back, never an error).
func queryNumber(raw string) int {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0
	}
	return min(n, maxQueryNumber)
}

// pageNumber is the list page a URL asks for, from 1.
func pageNumber(ctx echo.Context) int { return max(queryNumber(ctx.QueryParam("page")), 1) }
