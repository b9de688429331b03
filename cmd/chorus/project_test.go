package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/labstack/echo/v4"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// bearerKey authenticates with key and selects every toolset, so tools/list shows every tool the
// key's permissions grant.
type bearerKey struct{ key string }

func (b bearerKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	r.Header.Set(mcp.ToolsetsHeader, "all")
	return http.DefaultTransport.RoundTrip(r)
}

// runChorus runs the chorus command line in process and returns its standard output.
func runChorus(t *testing.T, args ...string) string {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	require.NoError(t, cmd.ExecuteContext(context.Background()), "chorus %v", args)
	return out.String()
}

// chorus project member add|list|remove and chorus agent update change what an agent may do on
// its very next request: its tools/list and its calls (docs/rules.md §6.1, §6.3).
func TestOperatorsChangeAccessForTheNextRequest(t *testing.T) {
	ctx := context.Background()
	dir, st, boot := bootstrappedDataDir(t)
	ownerCaller := store.Caller{CompanyUUID: boot.Company.UUID, OwnerUUID: boot.Owner.UUID}
	p, err := st.CreateProject(ctx, ownerCaller, store.NewProject{Name: "Vault", Visibility: "private"})
	require.NoError(t, err)
	dev, err := st.EnsureUser(ctx, boot.Company.UUID, "dev@example.com", "Dev")
	require.NoError(t, err)
	agent, key, err := st.CreateAgent(ctx, store.NewAgent{CompanyUUID: boot.Company.UUID, Name: "Dev Bot",
		Roles: []string{perm.DeveloperAgent}, OwnerUUID: &dev.UUID})
	require.NoError(t, err)

	ep, err := mcp.NewEndpoint(&mcp.Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "test")
	require.NoError(t, err)
	ech := echo.New()
	ep.Mount(ech)
	srv := httptest.NewServer(ech)
	t.Cleanup(srv.Close)
	session, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcpsdk.StreamableClientTransport{Endpoint: srv.URL + mcp.Path, HTTPClient: &http.Client{Transport: bearerKey{key}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	tools := func() []string {
		res, err := session.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	callText := func(name string, args map[string]any) (string, bool) {
		res, err := session.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		var s string
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				s += tc.Text
			}
		}
		return s, res.IsError
	}
	createDoc := map[string]any{"projectUuid": p.UUID, "type": "prd", "title": "Plan", "content": "x"}
	getProject := map[string]any{"projectUuid": p.UUID}
	data := "--data-dir=" + dir

	// A developer without a role: the document tool is not listed, the private project hidden.
	require.NotContains(t, tools(), "chorus_pm_create_document")
	msg, isErr := callText("chorus_get_project", getProject)
	require.True(t, isErr)
	require.Equal(t, "Project not found", msg)

	out := runChorus(t, data, "project", "member", "add", "--project", "Vault", "--user", "dev@example.com", "--role", "viewer")
	require.Contains(t, out, "is now viewer of project \"Vault\"")
	msg, isErr = callText("chorus_get_project", getProject)
	require.False(t, isErr, msg)
	require.Contains(t, msg, `"accessLevel":"viewer"`)

	out = runChorus(t, data, "agent", "update", agent.UUID, "--preset", "pm_agent")
	require.Contains(t, out, "pm_agent")
	require.Contains(t, tools(), "chorus_pm_create_document", "the next tools/list follows the new preset")
	msg, isErr = callText("chorus_pm_create_document", createDoc)
	require.True(t, isErr)
	require.Equal(t, "Insufficient project access", msg, "a viewer may not write")

	runChorus(t, data, "project", "member", "add", "--project", p.UUID, "--user", dev.UUID, "--role", "editor")
	msg, isErr = callText("chorus_pm_create_document", createDoc)
	require.False(t, isErr, msg)
	out = runChorus(t, data, "project", "member", "list", "--project", "Vault")
	require.Contains(t, out, "dev@example.com")
	require.Contains(t, out, "editor")

	out = runChorus(t, data, "project", "set-claim-ttl", "--project", "Vault", "--seconds", "45")
	require.Contains(t, out, "lapse after 45s")
	msg, _ = callText("chorus_get_project", getProject)
	require.Contains(t, msg, `"claimTtlSeconds":45`, "the project shows its new claim time to live")
	runChorus(t, data, "project", "set-claim-ttl", "--project", "Vault", "--seconds", "0")
	msg, _ = callText("chorus_get_project", getProject)
	require.NotContains(t, msg, `"claimTtlSeconds":45`)

	out = runChorus(t, data, "agent", "update", agent.UUID, "--preset", "developer_agent", "--permission", "document:read")
	require.Contains(t, out, "extra bits:  document:read")
	require.False(t, slices.Contains(tools(), "chorus_pm_create_document"))
	msg, isErr = callText("chorus_pm_create_document", createDoc)
	require.True(t, isErr)
	require.Equal(t, "Tool chorus_pm_create_document not found", msg, "the next call follows too")

	// The operators' commands and the member tools share one rule and its words: the last admin
	// role stays, a role is one of three.
	fail := func(args ...string) error {
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{data, "project", "member"}, args...))
		return cmd.ExecuteContext(ctx)
	}
	require.EqualError(t, fail("remove", "--project", "Vault", "--user", "owner@example.com"),
		"Cannot take away the last admin role of this project: make another user admin first")
	require.EqualError(t, fail("add", "--project", "Vault", "--user", "owner@example.com", "--role", "owner"),
		`role must be viewer, editor or admin, got "owner"`)

	out = runChorus(t, data, "project", "member", "remove", "--project", "Vault", "--user", "dev@example.com")
	require.Contains(t, out, "no longer has a role")
	msg, isErr = callText("chorus_get_project", getProject)
	require.True(t, isErr)
	require.Equal(t, "Project not found", msg)
	require.Contains(t, runChorus(t, data, "project", "list"), "Vault")
}

// The identity commands refuse to make up a database: a key printed from a fresh SQLite file
// would belong to no running Chorus.
func TestIdentityCommandsNeedAnExistingDatabase(t *testing.T) {
	t.Setenv("CHORUS_DATABASE_URL", "")
	dir := filepath.Join(t.TempDir(), ".chorus")
	for _, args := range [][]string{
		{"agent", "create", "--name", "X", "--preset", "developer_agent", "--key-only"},
		{"agent", "list"}, {"project", "list"},
	} {
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(append([]string{"--data-dir", dir}, args...))
		err := cmd.ExecuteContext(context.Background())
		require.ErrorContains(t, err, "no Chorus database at "+filepath.Join(dir, "chorus.db"), "chorus %v", args)
		require.ErrorContains(t, err, "CHORUS_DATABASE_URL")
		_, statErr := os.Stat(filepath.Join(dir, "chorus.db"))
		require.ErrorIs(t, statErr, os.ErrNotExist, "chorus %v made a database", args)
	}
}

// bootstrappedDataDir is a data dir (as --data-dir names it) holding a migrated SQLite database
// with the company Acme, its owner and the agent "Admin Agent", as `chorus dev` first makes it;
// the store is closed when the test ends.
func bootstrappedDataDir(t *testing.T) (string, *store.Store, *store.BootstrapResult) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "chorus.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner", OwnerEmail: "owner@example.com",
		AgentName: "Admin Agent"})
	require.NoError(t, err)
	return dir, st, boot
}
