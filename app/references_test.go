package app

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The inline references' per-item checks (docs/rules.md §1.16), in the order they are made: type,
// then url, then title; the texts are the ones agents read in referenceErrors.
func TestInlineReferenceProblem(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, c := range []struct {
		name string
		in   ReferenceInput
		want string
	}{
		{"valid", ReferenceInput{Type: "repo", URL: " https://github.com/acme/apollo ", Title: "Repo"}, ""},
		{"type first", ReferenceInput{Type: "wiki", URL: "ftp://x", Title: ""},
			"Invalid reference type: wiki. Use one of docs, repo, issue_pr, paper_blog."},
		{"long type clipped", ReferenceInput{Type: long, URL: "https://x.dev", Title: "T"},
			"Invalid reference type: " + strings.Repeat("x", 57) + ".... Use one of docs, repo, issue_pr, paper_blog."},
		{"scheme", ReferenceInput{Type: "docs", URL: "ftp://example.com", Title: "T"},
			"Invalid reference url: ftp://example.com. Give a full address starting with http:// or https://."},
		{"no host", ReferenceInput{Type: "docs", URL: "https://", Title: "T"},
			"Invalid reference url: https://. Give a full address starting with http:// or https://."},
		{"blank title", ReferenceInput{Type: "paper_blog", URL: "HTTP://Example.com/a", Title: "  "},
			"Reference title must not be blank: say what the link is."},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, inlineReferenceProblem(c.in))
		})
	}
	u, msg := checkReferenceURL("  https://example.com/x  ")
	require.Empty(t, msg)
	require.Equal(t, "https://example.com/x", u, "the url is stored trimmed")
}
