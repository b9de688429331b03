package console

import (
	"bytes"
	"html/template"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Markdown in the console: document drafts and documents are written by agents, so they are
// untrusted. They are rendered with goldmark (CommonMark plus GitHub's tables, task lists,
// strikethrough and autolinks) and the HTML is then sanitized with bluemonday's policy for user
// content: no <script>, no event handler attributes (onerror=...), no javascript: links, no
// style="" (the console's CSP forbids it anyway).

// markdownEngine turns Markdown into HTML. Raw HTML in the source is left out by goldmark
// (it is not rendered unsafe), and table alignment is an align attribute, not a style.
var markdownEngine = goldmark.New(goldmark.WithExtensions(
	extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
	extension.Strikethrough, extension.Linkify, extension.TaskList,
))

// markdownPolicy is bluemonday's user-content policy, plus the disabled checkboxes of GitHub
// task lists ("- [x] done").
var markdownPolicy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^(|checked|disabled)$`)).OnElements("input")
	p.RequireNoFollowOnLinks(true)
	return p
}()

// markdown renders Markdown source as sanitized HTML, safe to put in a page. A source goldmark
// cannot render (it renders any text) is shown as escaped plain text.
func markdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := markdownEngine.Convert([]byte(src), &buf); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(markdownPolicy.SanitizeBytes(buf.Bytes())) //nolint:gosec // sanitized just above
}
