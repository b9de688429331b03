package mcp

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

func listNames(t *testing.T, s *mcpsdk.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// expectedTools derives, from the table itself, what a permission set must see.
func expectedTools(perms perm.Set) []string {
	var names []string
	for _, e := range toolTable() {
		if perms.Has(e.spec().Perm) {
			names = append(names, e.spec().Name)
		}
	}
	slices.Sort(names)
	return names
}

func TestToolListIsFilteredByPreset(t *testing.T) {
	e := newEnv(t, "sqlite")
	for _, preset := range perm.PresetNames {
		t.Run(preset, func(t *testing.T) {
			got := listNames(t, e.client(e.agent("a-"+preset, preset)))
			require.Equal(t, expectedTools(perm.Preset(preset)), got)
		})
	}
	// The developer preset must not see project creation; pm and admin must.
	dev := listNames(t, e.client(e.agent("dev", perm.DeveloperAgent)))
	require.NotContains(t, dev, "chorus_admin_create_project")
	require.Contains(t, dev, "chorus_checkin")
	pm := listNames(t, e.client(e.agent("pm", perm.PMAgent)))
	require.Contains(t, pm, "chorus_admin_create_project")
}

func TestCustomPermissionBitsApplyOnNextRequest(t *testing.T) {
	e := newEnv(t, "sqlite")
	ctx := context.Background()
	owner := e.owner
	a, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "custom", Roles: []string{}, OwnerUUID: &owner})
	require.NoError(t, err)
	s := e.client(key)
	require.NotContains(t, listNames(t, s), "chorus_admin_create_project")
	_, err = e.st.DB.NewUpdate().Model((*store.Agent)(nil)).Set("permissions = ?", `["project:write"]`).Where("uuid = ?", a.UUID).Exec(ctx)
	require.NoError(t, err)
	require.Contains(t, listNames(t, s), "chorus_admin_create_project")
}

func TestHiddenToolAnswersLikeUnknownTool(t *testing.T) {
	e := newEnv(t, "sqlite")
	dev := e.client(e.agent("dev", perm.DeveloperAgent))
	hidden := fails(t, dev, "chorus_admin_create_project", map[string]any{"name": "x"})
	require.Equal(t, "Tool chorus_admin_create_project not found", hidden)
	unknown := fails(t, dev, "chorus_no_such_tool", map[string]any{})
	require.Equal(t, "Tool chorus_no_such_tool not found", unknown)
	// Nothing was created by the refused call.
	var list ProjectList
	ok(t, e.client(e.adminKey), "chorus_list_projects", map[string]any{}, &list)
	require.Equal(t, 0, list.Total)
}

func TestAuthFailuresAre401WithJSON(t *testing.T) {
	e := newEnv(t, "sqlite")
	ctx := context.Background()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

	revokedKey := e.agent("revoked", perm.DeveloperAgent)
	_, err := e.st.RevokeKey(ctx, e.company, revokedKey)
	require.NoError(t, err)

	a, _, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "expiring", Roles: []string{perm.DeveloperAgent}})
	require.NoError(t, err)
	past := time.Now().Add(-time.Hour)
	_, expiredKey, err := e.st.CreateKey(ctx, e.company, a.UUID, "old", &past)
	require.NoError(t, err)

	cases := []struct{ name, auth, msg string }{
		{"missing", "", "Missing or invalid API key"},
		{"not bearer", "Basic abc", "Missing or invalid API key"},
		{"not cho_", "Bearer sk_live_123", "Missing or invalid API key"},
		{"unknown", "Bearer " + store.GenerateKey(), "Invalid API key"},
		{"revoked", "Bearer " + revokedKey, "API key has been revoked"},
		{"expired", "Bearer " + expiredKey, "API key has expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, got := e.rawPost(c.auth, body)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
			var m map[string]string
			require.NoError(t, json.Unmarshal([]byte(got), &m), got)
			require.Equal(t, c.msg, m["error"])
		})
	}
}

func TestStatelessTransport(t *testing.T) {
	e := newEnv(t, "sqlite")
	auth := "Bearer " + e.adminKey

	// tools/call works with no initialize and no session id, and answers JSON.
	resp, got := e.rawPost(auth, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chorus_checkin","arguments":{}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	require.Empty(t, resp.Header.Get("Mcp-Session-Id"))
	require.Contains(t, got, `"checkinTime"`)

	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, e.url, nil)
		req.Header.Set("Authorization", auth)
		r, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		r.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, r.StatusCode, m)
		require.Equal(t, -32601, body.Error.Code)
		require.Equal(t, "Method not allowed: stateless server has no sessions", body.Error.Message)
	}

	req, _ := http.NewRequest(http.MethodOptions, e.url, nil)
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusNoContent, r.StatusCode)
	require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "POST, OPTIONS", r.Header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Content-Type, Authorization, mcp-protocol-version, X-Chorus-Toolsets, X-Chorus-Readonly", r.Header.Get("Access-Control-Allow-Headers"))
}

func TestCheckinReportsIdentityAndPermissions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		var out CheckinOut
		ok(t, e.client(e.adminKey), "chorus_checkin", nil, &out)
		require.Equal(t, "Admin Agent", out.Agent.Name)
		require.NotNil(t, out.Agent.Owner)
		require.Equal(t, "Owner", out.Agent.Owner.Name)
		bits := 0
		for r, acts := range out.Agent.Permissions {
			require.Equal(t, []string{"read", "write", "admin"}, acts, r)
			bits += len(acts)
		}
		require.Equal(t, 15, bits)
		require.Empty(t, out.ActiveProjects)

		var dev CheckinOut
		ok(t, e.client(e.agent("dev", perm.DeveloperAgent)), "chorus_checkin", nil, &dev)
		require.Equal(t, map[string][]string{"idea": {"read"}, "proposal": {"read"}, "document": {"read"},
			"task": {"read", "write"}, "project": {"read"}}, dev.Agent.Permissions)

		// The first check-in stamps lastActiveAt and tells the owner once.
		n, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("action = 'agent_checkin'").Count(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		ok(t, e.client(e.adminKey), "chorus_checkin", nil, &out)
		n2, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("action = 'agent_checkin'").Count(context.Background())
		require.NoError(t, err)
		require.Equal(t, n, n2)
	})
}

func TestProjects(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		var p CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Apollo", "description": "moon"}, &p)
		require.Equal(t, "public", p.Visibility)
		var priv CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Secret", "visibility": "private"}, &priv)

		var got ProjectDetail
		ok(t, admin, "chorus_get_project", map[string]any{"projectUuid": p.UUID}, &got)
		require.Equal(t, "Apollo", got.Name)
		require.Equal(t, "moon", *got.Description)
		require.Equal(t, "admin", got.AccessLevel) // the creator's owner is the project's admin member

		var list ProjectList
		ok(t, admin, "chorus_list_projects", map[string]any{}, &list)
		require.Equal(t, 2, list.Total)
		require.Equal(t, 2, list.Returned)
		require.Equal(t, "Secret", list.Projects[0].Name, "newest first")

		// An agent of another owner sees the public project only; the private one is "not found".
		otherOwner, err := e.st.EnsureUser(context.Background(), e.company, "other@example.com", "Other")
		require.NoError(t, err)
		_, otherKey, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: "other",
			Roles: []string{perm.DeveloperAgent}, OwnerUUID: &otherOwner.UUID})
		require.NoError(t, err)
		other := e.client(otherKey)
		ok(t, other, "chorus_list_projects", map[string]any{}, &list)
		require.Equal(t, 1, list.Total)
		require.Equal(t, p.UUID, list.Projects[0].UUID)
		require.Equal(t, "Project not found", fails(t, other, "chorus_get_project", map[string]any{"projectUuid": priv.UUID}))
		require.Equal(t, "Project not found", fails(t, other, "chorus_get_project", map[string]any{"projectUuid": store.NewUUID()}))
		require.Equal(t, `Input validation error: projectUuid must be a uuid, got "not-a-uuid"`,
			fails(t, other, "chorus_get_project", map[string]any{"projectUuid": "not-a-uuid"}))

		// Paging: page 2 of size 1 is the older project.
		ok(t, admin, "chorus_list_projects", map[string]any{"page": 2, "pageSize": "1"}, &list)
		require.Equal(t, 1, list.Returned)
		require.Equal(t, 2, list.Page)
		require.Equal(t, 1, list.PageSize)
		require.Equal(t, "Apollo", list.Projects[0].Name)
	})
}

func TestInputValidationNamesTheField(t *testing.T) {
	e := newEnv(t, "sqlite")
	admin := e.client(e.adminKey)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"chorus_admin_create_project", map[string]any{}, "Input validation error: name is required"},
		{"chorus_admin_create_project", map[string]any{"name": ""}, "Input validation error: name must not be empty"},
		{"chorus_admin_create_project", map[string]any{"name": "x", "visibility": "secret"},
			`Input validation error: visibility must be one of public, private, got "secret"`},
		{"chorus_list_projects", map[string]any{"pageSize": 500}, "Input validation error: pageSize must be at most 100, got 500"},
		{"chorus_admin_create_project", map[string]any{"name": "Big", "claimTtlSeconds": 2592001},
			"Input validation error: claimTtlSeconds must be at most 2592000, got 2592001"},
		{"chorus_list_projects", map[string]any{"page": "two"}, `Input validation error: page must be an integer, got "two"`},
		{"chorus_list_projects", map[string]any{"page": 1.5}, "Input validation error: page must be a whole number, got 1.5"},
		{"chorus_get_project", map[string]any{"projectUuid": 5}, `Input validation error: projectUuid must be a uuid, got "5"`},
	}
	for _, c := range cases {
		require.Equal(t, c.want, fails(t, admin, c.tool, c.args), "%s %v", c.tool, c.args)
	}
	// Nothing was created by any of them.
	var list ProjectList
	ok(t, admin, "chorus_list_projects", map[string]any{"pageSize": "5", "unknownArg": true, "page": nil}, &list)
	require.Equal(t, 0, list.Total)
	require.Equal(t, 5, list.PageSize)
}

func TestRequestIDMakesRetriesSafe(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		args := map[string]any{"name": "Once", "requestId": "req-1"}
		var a, b CreatedProject
		ok(t, admin, "chorus_admin_create_project", args, &a)
		ok(t, admin, "chorus_admin_create_project", args, &b)
		require.Equal(t, a.UUID, b.UUID)
		var list ProjectList
		ok(t, admin, "chorus_list_projects", nil, &list)
		require.Equal(t, 1, list.Total)

		msg := fails(t, admin, "chorus_admin_create_project", map[string]any{"name": "Other", "requestId": "req-1"})
		require.True(t, strings.HasPrefix(msg, `Input validation error: requestId "req-1" was already used`), msg)

		// Another agent may use the same requestId for its own call.
		var c CreatedProject
		ok(t, e.client(e.agent("pm", perm.PMAgent)), "chorus_admin_create_project", args, &c)
		require.NotEqual(t, a.UUID, c.UUID)
	})
}

func TestEveryTableEntryIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range toolTable() {
		s := e.spec()
		require.NotEmpty(t, s.Name)
		require.False(t, seen[s.Name], "duplicate tool %s", s.Name)
		seen[s.Name] = true
		require.True(t, strings.HasPrefix(s.Name, "chorus_"), s.Name)
		require.NotZero(t, s.Perm, "%s has no permission", s.Name)
		require.True(t, s.Perm == perm.Public || s.Perm.String() != "invalid", "%s has an invalid permission", s.Name)
		require.NotZero(t, s.Effect, "%s has no effect", s.Name)
		require.NotEmpty(t, s.Desc, "%s has no description", s.Name)
		require.True(t, s.HasRun, "%s has no handler", s.Name)
	}
}

// Any authenticated call, not only a check-in, moves the agent's lastActiveAt (what `chorus agent
// list` shows), at most once a minute; the owner's first-check-in notice still comes with the
// first check-in, whatever calls came before it.
func TestAnyCallMarksTheAgentActive(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		key := e.agent("Busy", perm.DeveloperAgent)
		lastActive := func() *time.Time {
			var a store.Agent
			require.NoError(t, e.st.DB.NewSelect().Model(&a).Where("name = ?", "Busy").Scan(ctx))
			return a.LastActiveAt
		}
		require.Nil(t, lastActive(), "a new agent has not been active")
		dev := e.client(key) // connecting is an authenticated request too
		ok(t, dev, "chorus_list_projects", nil, nil)
		first := lastActive()
		require.NotNil(t, first, "a plain call marks the agent active")
		ok(t, dev, "chorus_list_projects", nil, nil)
		require.True(t, lastActive().Equal(*first), "at most one write a minute")
		notices := func() int {
			n, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("action = 'agent_checkin'").
				Where("entity_title = ?", "Busy").Count(ctx)
			require.NoError(t, err)
			return int(n)
		}
		require.Zero(t, notices())
		ok(t, dev, "chorus_checkin", nil, nil)
		ok(t, dev, "chorus_checkin", nil, nil)
		require.Equal(t, 1, notices(), "the first check-in tells the owner, once")
	})
}

// rawToolCall sends one tools/call as the given protocol revision speaks it (from 2026-07-28 on,
// the per-request _meta triple, SEP-2575) and returns the JSON-RPC result member.
func (e *env) rawToolCall(t *testing.T, key, version, name string, args map[string]any) map[string]json.RawMessage {
	t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if version >= "2026-07-28" {
		params["_meta"] = map[string]any{mcpsdk.MetaKeyProtocolVersion: version,
			mcpsdk.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "1"},
			mcpsdk.MetaKeyClientCapabilities: map[string]any{}}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	require.NoError(t, err)
	header := map[string]string{"Authorization": "Bearer " + key, "Mcp-Protocol-Version": version}
	if version >= "2026-07-28" { // SEP-2243: the method and tool name travel as headers too
		header["Mcp-Method"], header["Mcp-Name"] = "tools/call", name
	}
	a := e.send(http.MethodPost, Path, header, string(body))
	require.Equal(t, http.StatusOK, a.status, a.body)
	var m struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &m), a.body)
	require.NotNil(t, m.Result, "a result, not an error: %s", a.body)
	return m.Result
}

// Case 09: the refusal of a hidden or unknown tool has exactly the shape of any other tool
// result on every protocol revision the server offers, resultType included from 2026-07-28 on
// (clients on that revision refuse a result without it).
func TestHiddenToolAnswerIsAValidResultOnEveryProtocol(t *testing.T) {
	e := newEnv(t, "sqlite")
	dev := e.agent("dev", perm.DeveloperAgent)
	for _, v := range mcpsdk.SupportedProtocolVersions() {
		t.Run(v, func(t *testing.T) {
			// An ordinary refusal, built by the SDK's tools/call path: the shape to match.
			want := e.rawToolCall(t, dev, v, "chorus_get_project", map[string]any{"projectUuid": store.NewUUID()})
			for _, name := range []string{"chorus_admin_create_project", "chorus_no_such_tool", refusalTool} {
				got := e.rawToolCall(t, dev, v, name, map[string]any{"name": "x"})
				require.ElementsMatch(t, slices.Collect(maps.Keys(want)), slices.Collect(maps.Keys(got)), "%s on %s", name, v)
				require.JSONEq(t, `true`, string(got["isError"]))
				require.JSONEq(t, `[{"type":"text","text":"Tool `+name+` not found"}]`, string(got["content"]))
				if v >= "2026-07-28" {
					require.JSONEq(t, `"complete"`, string(got["resultType"]), "%s on %s", name, v)
				}
			}
		})
	}
}
