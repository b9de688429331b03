package console

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A document draft is agents' text: its Markdown becomes HTML (a GFM table, a task list, a link)
// and anything that could run in the reviewer's browser is stripped: a <script>, an onerror=
// attribute, a javascript: link, a style attribute.
func TestMarkdownRendersAndSanitizes(t *testing.T) {
	src := "# Plan\n\n| Step | Owner |\n|:--|--:|\n| Build | **Ada** |\n\n- [x] done\n- [ ] todo\n\n" +
		"<script>alert('x')</script>\n\n<img src=\"x.png\" onerror=\"alert(1)\">\n\n" +
		"[click](javascript:alert(1)) and <a href=\"javascript:alert(2)\">raw</a> and [ok](https://example.com/a)\n\n" +
		"<p style=\"color:red\">styled</p>\n"
	out := string(markdown(src))
	require.Contains(t, out, "<h1")
	require.Contains(t, out, "<table>")
	require.Contains(t, out, `<td align="left">Build</td>`)
	require.Contains(t, out, "<strong>Ada</strong>")
	require.Contains(t, out, `type="checkbox"`)
	require.Contains(t, out, `href="https://example.com/a"`)
	lower := strings.ToLower(out)
	for _, bad := range []string{"<script", "alert(", "onerror", "javascript:", "style="} {
		require.NotContains(t, lower, bad, "stripped: %s\n%s", bad, out)
	}

	// The sanitizer alone, on HTML that did get through (as if goldmark rendered raw HTML).
	clean := string(markdownPolicy.Sanitize(`<script>x()</script><img src="a.png" onerror="x()"><a href="javascript:x()">l</a><b>ok</b>`))
	require.NotContains(t, clean, "<script")
	require.NotContains(t, clean, "onerror")
	require.NotContains(t, clean, "javascript:")
	require.Contains(t, clean, "<b>ok</b>")
}
