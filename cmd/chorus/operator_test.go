package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/chorus-dev/chorus/workflows"
)

// The ready queries of the operations guide (docs/operations.md, "The Temporal UI") are links
// that open the UI's workflow list on each; each link carries the query printed beside it, and
// the server (the version the dev stack runs) accepts every one.
func TestOperationsGuideReadyQueriesRun(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	guide := string(b)
	link := regexp.MustCompile(`\[([^\]]+)\]\((http://127\.0\.0\.1:8233/namespaces/default/workflows\?query=[^)]+)\)[^\x60]*\x60([^\x60]+)\x60`)
	found := map[string]string{}
	for _, m := range link.FindAllStringSubmatch(guide, -1) {
		u, err := url.Parse(m[2])
		require.NoError(t, err)
		q := u.Query().Get("query")
		require.Equal(t, m[3], q, "the link %q opens another query than the one printed beside it", m[1])
		found[m[1]] = q
	}
	for _, want := range []string{"Waiting for review", "Waiting for a person", "Stuck", "Failed"} {
		require.Contains(t, found, want, "docs/operations.md lacks the ready query %q", want)
	}
	tmp := startReadyTemporal(t)
	for name, q := range found {
		_, err := tmp.tc.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: workflows.Namespace, Query: q})
		require.NoError(t, err, "the server refuses the ready query %q: %s", name, q)
	}
	require.True(t, strings.Contains(guide, "](temporal-ui-workflows.png)"), "the Temporal UI section shows the screenshot")
	_, err = os.Stat(filepath.Join("..", "..", "docs", "temporal-ui-workflows.png"))
	require.NoError(t, err, "docs/temporal-ui-workflows.png is missing: make screenshot")
}
