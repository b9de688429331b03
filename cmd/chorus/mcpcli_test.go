package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/vocab"
)

func TestCallArguments(t *testing.T) {
	got, err := callArguments(nil, []string{"title=Dark mode", "storyPoints=2.5", "isContainer=true", `inputUuids=["a","b"]`, "note="})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"title": "Dark mode", "storyPoints": 2.5, "isContainer": true,
		"inputUuids": []any{"a", "b"}, "note": ""}, got)
	got, err = callArguments(nil, []string{`{"name":"x"}`})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "x"}, got)
	got, err = callArguments(strings.NewReader(`{"a":1}`), []string{"-"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": float64(1)}, got)
	_, err = callArguments(nil, []string{"oops"})
	require.ErrorContains(t, err, "not key=value")
	_, err = callArguments(nil, []string{"{broken"})
	require.ErrorContains(t, err, "not a JSON object")
}

// connectAgent connects a test's agent to the MCP endpoint url with key (every toolset the key
// permits).
func connectAgent(ctx context.Context, url, key string) (*mcpclient.Agent, error) {
	return mcpclient.Connect(ctx, url, key, &mcpsdk.Implementation{Name: "chorus-test", Version: version})
}

// Issue 19: `chorus mcp call --field` on a tool whose result has no such field (a tool that
// answers with text, or a path that is not in its JSON) says so and exits 3, which is not 1 (the
// tool refused): the call succeeded and its write happened.
func TestCallFieldOnAResultWithoutIt(t *testing.T) {
	ctx := context.Background()
	dir, st, boot := bootstrappedDataDir(t)
	ep, err := mcp.NewEndpoint(&mcp.Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "test")
	require.NoError(t, err)
	ech := echo.New()
	ep.Mount(ech)
	srv := httptest.NewServer(ech)
	t.Cleanup(srv.Close)
	t.Setenv("CHORUS_URL", srv.URL+mcp.Path)
	t.Setenv("CHORUS_API_KEY", boot.Key)

	run := func(args ...string) (stdout, stderr string, err error) {
		cmd := newRootCmd()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--data-dir=" + dir, "mcp", "call"}, args...))
		err = cmd.ExecuteContext(ctx)
		return out.String(), errOut.String(), err
	}
	project, _, err := run("chorus_admin_create_project", "name=Platform", "--field", "uuid")
	require.NoError(t, err)
	project = strings.TrimSpace(project)
	require.True(t, vocab.IsUUID(project), project)
	doc, _, err := run("chorus_pm_create_document", "projectUuid="+project, "type=guide", "title=Runbook", "--field", "uuid")
	require.NoError(t, err)
	doc = strings.TrimSpace(doc)
	require.True(t, vocab.IsUUID(doc), doc)

	// A text result: printed, with a note, and exit 3.
	out, errOut, err := run("chorus_admin_delete_document", "documentUuid="+doc, "--field", "uuid")
	require.Equal(t, exitError{code: 3}, err)
	require.Equal(t, "Document "+doc+" deleted\n", out)
	require.Contains(t, errOut, "answered with text, not JSON, so --field uuid does not apply; the call succeeded")
	_, _, err = run("chorus_get_document", "documentUuid="+doc)
	require.Equal(t, exitError{code: 1}, err, "the document was deleted")

	// A JSON result without the field: the same.
	out, errOut, err = run("chorus_admin_create_project_group", "name=Data", "--field", "nope")
	require.Equal(t, exitError{code: 3}, err)
	require.Contains(t, out, `"name": "Data"`)
	require.Contains(t, errOut, `the result has no field "nope"`)
	require.Contains(t, errOut, "the call succeeded")
}
