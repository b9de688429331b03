package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
)

// The bounds of a form post, the console's side of what the MCP endpoint bounds (docs/rules.md
// §3.5, docs/write-path.md "Bounded state and payloads"): a body of at most maxFormBody bytes,
// and values that take at most app.MaxChangeBytes as JSON, checked before any use case runs, so
// a long note never reaches Temporal over its payload limits.

// maxFormBody is the largest form body the console reads: 4 MiB, the HTTP edge's limit of the
// MCP endpoint.
const maxFormBody = 4 << 20

// readForm reads a post's form within maxFormBody. ok is false when it was answered already: a
// body over the limit (413), or one that could not be read (400); nothing was changed.
func (c *Console) readForm(ctx echo.Context) (ok bool, err error) {
	req := ctx.Request()
	if req.ContentLength > maxFormBody {
		return false, c.tooLarge(ctx)
	}
	req.Body = http.MaxBytesReader(ctx.Response(), req.Body, maxFormBody)
	if _, err := ctx.FormParams(); err != nil {
		var over *http.MaxBytesError
		if errors.As(err, &over) {
			return false, c.tooLarge(ctx)
		}
		return false, c.render(ctx, http.StatusBadRequest, "error", page{Title: "Not changed",
			Error: "The form could not be read. Nothing was changed: reload the page and submit again."})
	}
	return true, nil
}

// tooLarge answers a body over maxFormBody.
func (c *Console) tooLarge(ctx echo.Context) error {
	return c.render(ctx, http.StatusRequestEntityTooLarge, "error", page{Title: "Not changed",
		Error: fmt.Sprintf("The form is over %d bytes (4 MiB), more than the console reads. Nothing was changed: "+
			"shorten the text and submit again.", maxFormBody)})
}

// formTooLarge is the refusal of a form whose values take more than app.MaxChangeBytes as JSON,
// naming the largest field; "" when it is within the bound. The CSRF token and the requestId do
// not count (the tool's arguments do not carry them either).
func formTooLarge(form url.Values) string {
	total, largest, largestSize := 0, "", -1
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == csrfField || k == requestIDField {
			continue
		}
		n := jsonSize(k) + 1 + jsonSize(form[k])
		total += n + 1
		if n > largestSize {
			largest, largestSize = k, n
		}
	}
	if total <= app.MaxChangeBytes {
		return ""
	}
	return fmt.Sprintf("%s: the form's text takes %d bytes as JSON, and one change may carry at most %d (512 KiB); "+
		"shorten it. Nothing was changed", largest, total, app.MaxChangeBytes)
}

// jsonSize is how many bytes v takes as JSON without HTML escaping (as Temporal's payloads are
// written, workflows.DataConverter).
func jsonSize(v any) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0
	}
	return b.Len() - 1 // Encode ends with a newline
}
