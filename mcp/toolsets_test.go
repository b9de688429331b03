package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

func newTestEndpoint(t *testing.T) *Endpoint {
	t.Helper()
	ep, err := NewEndpoint(&Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "test")
	require.NoError(t, err)
	return ep
}

// Every tool belongs to exactly one known toolset, and every toolset holds a tool: a tool that
// forgot its toolset would be listed by no connection.
func TestEveryToolHasAToolset(t *testing.T) {
	ep := newTestEndpoint(t)
	held := map[toolset]int{}
	for _, bt := range ep.tools {
		require.NotZero(t, bt.spec.Toolset, "%s has no toolset: set Toolset in its table entry", bt.spec.Name)
		require.NotEqual(t, "none", bt.spec.Toolset.String(), "%s: unknown toolset %d", bt.spec.Name, bt.spec.Toolset)
		held[bt.spec.Toolset]++
	}
	for _, ts := range toolsetTable {
		require.NotZero(t, held[ts.id], "toolset %s holds no tool", ts.name)
	}
}

func TestParseSelection(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"develop,collab", "core,develop,collab", ""},
		{" Develop , collab ,", "core,develop,collab", ""},
		{"core", "core", ""},
		{"ALL", strings.Join(allToolsets.names(), ","), ""},
		{"review,all", strings.Join(allToolsets.names(), ","), ""},
		{"develop,bogus", "", `unknown toolset "bogus"; the toolsets are core, ideas, proposals, develop, sessions, review, collab, projects, all`},
		{" , ", "", "no toolset named; the toolsets are core, ideas"},
	} {
		got, err := parseSelection(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got.String(), tc.in)
	}
}

// Without a selection, each preset gets the toolsets its role uses (docs/rules.md §3.3); an agent
// with no preset gets core and the toolsets of the gated tools it holds.
func TestDefaultSelections(t *testing.T) {
	ep := newTestEndpoint(t)
	for _, tc := range []struct {
		roles []string
		perms perm.Set
		want  string
	}{
		{[]string{perm.DeveloperAgent}, perm.Preset(perm.DeveloperAgent), "core,develop"},
		{[]string{"pm"}, perm.Preset(perm.PMAgent), "core,ideas,proposals"},
		{[]string{perm.AdminAgent}, perm.All, "core,proposals,review"},
		{[]string{perm.DeveloperAgent, perm.PMAgent}, perm.Preset(perm.PMAgent), "core,ideas,proposals,develop"},
		{nil, perm.Set(0).With(perm.TaskAdmin), "core,review"},
		{nil, 0, "core"},
	} {
		require.Equal(t, tc.want, defaultSelection(ep.tools, tc.roles, tc.perms).String(), "%v", tc.roles)
	}
}

// What reaches the model stays within budget (docs/rules.md §3.3): tool count and bytes of name,
// title, description and input schema of every listed tool, plus the instructions, per preset
// with its default toolsets, and for an admin key with all of them.
func TestSurfaceBudgets(t *testing.T) {
	ep := newTestEndpoint(t)
	require.LessOrEqual(t, len(instructions), 1536, "the instructions are at most 1.5 KB")
	for _, tc := range []struct {
		preset      string
		all         bool
		tools, kb   int
		wantPresent []string
	}{
		{perm.DeveloperAgent, false, 15, 12, []string{"chorus_checkin", "chorus_claim_next_task", "chorus_submit_for_verify"}},
		{perm.PMAgent, false, 30, 24, []string{"chorus_claim_idea", "chorus_pm_submit_proposal"}},
		{perm.AdminAgent, false, 40, 32, []string{"chorus_admin_approve_proposal", "chorus_admin_verify_task"}},
		{perm.AdminAgent, true, 1000, 40, nil},
	} {
		perms := perm.Preset(tc.preset)
		conn := Conn{Toolsets: defaultSelection(ep.tools, []string{tc.preset}, perms)}
		if tc.all {
			conn.Toolsets = allToolsets
		}
		got := ep.surface(perms, conn)
		t.Logf("%s (%s): %d tools, %d bytes", tc.preset, conn.Toolsets, got.Tools, got.Bytes)
		require.LessOrEqual(t, got.Tools, tc.tools, "%s (%s): tools listed", tc.preset, conn.Toolsets)
		require.LessOrEqual(t, got.Bytes, tc.kb*1024, "%s (%s): bytes that reach the model", tc.preset, conn.Toolsets)
		var names []string
		for _, bt := range ep.listed(perms, conn) {
			names = append(names, bt.spec.Name)
		}
		for _, n := range tc.wantPresent {
			require.Contains(t, names, n, "%s's default selection lacks a tool its role needs", tc.preset)
		}
	}
}

// The requestId rule is told once, in the instructions: no tool repeats it.
func TestRequestIDRuleToldOnce(t *testing.T) {
	ep := newTestEndpoint(t)
	require.Contains(t, instructions, "requestId")
	for _, bt := range ep.tools {
		b, err := json.Marshal(bt.tool.InputSchema)
		require.NoError(t, err)
		require.NotContains(t, strings.ToLower(string(b)), "idempotency", bt.spec.Name)
		require.NotContains(t, strings.ToLower(bt.tool.Description), "requestid", bt.spec.Name)
	}
}

// wantNames is what a connection with perms and conn must list, computed from the table alone.
func wantNames(ep *Endpoint, perms perm.Set, sel selection, readOnly bool) []string {
	var names []string
	for _, bt := range ep.tools {
		if !perms.Has(bt.spec.Perm) || !sel.has(bt.spec.Toolset) || (readOnly && !bt.spec.servesReadOnly()) {
			continue
		}
		names = append(names, bt.spec.Name)
	}
	return names
}

// A connection lists the tools of the toolsets it selects (header or path; core always) and the
// preset's default without a selection; a tool outside them answers which toolset holds it,
// while a tool the key lacks answers exactly like an unknown tool.
func TestToolsetSelectionThroughClient(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		ep := newTestEndpoint(t)
		dev := e.agent("Dev", perm.DeveloperAgent)
		devPerms := perm.Preset(perm.DeveloperAgent)

		byDefault := e.connectAs(dev, "", nil)
		require.ElementsMatch(t, wantNames(ep, devPerms, selection(0).with(tsCore).with(tsDevelop), false), listNames(t, byDefault))

		want := wantNames(ep, devPerms, selection(0).with(tsCore).with(tsDevelop).with(tsCollab), false)
		byHeader := e.connectAs(dev, "", http.Header{ToolsetsHeader: {"develop,collab"}})
		require.ElementsMatch(t, want, listNames(t, byHeader))
		byPath := e.connectAs(dev, "x/develop,collab", nil)
		require.ElementsMatch(t, want, listNames(t, byPath))
		require.ElementsMatch(t, wantNames(ep, devPerms, allToolsets, false), listNames(t, e.client(dev)))

		// Outside the selection: one sentence naming the toolset, and nothing ran.
		msg := fails(t, byDefault, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": store.NewUUID(), "content": "hi"})
		require.Contains(t, msg, "chorus_add_comment is in the collab toolset, which this connection has not selected")
		require.Contains(t, msg, ToolsetsHeader+": core,develop,collab")

		// A tool the key lacks reads exactly like one that does not exist, selected or not.
		unknown := fails(t, byDefault, "chorus_no_such_tool", map[string]any{})
		require.Equal(t, "Tool chorus_no_such_tool not found", unknown)
		for _, s := range []*mcpsdk.ClientSession{byDefault, e.client(dev)} {
			require.Equal(t, "Tool chorus_admin_verify_task not found",
				fails(t, s, "chorus_admin_verify_task", map[string]any{"taskUuid": store.NewUUID()}))
		}

		// checkin says which toolsets exist and which are on.
		var out CheckinOut
		ok(t, byHeader, "chorus_checkin", map[string]any{}, &out)
		var on []string
		for _, ts := range out.Toolsets {
			require.NotEmpty(t, ts.Description, ts.Name)
			if ts.Enabled {
				on = append(on, ts.Name)
			}
		}
		require.Len(t, out.Toolsets, len(toolsetTable))
		require.Equal(t, []string{"core", "develop", "collab"}, on)
		require.False(t, out.ReadOnly)
	})
}

// An unknown toolset is refused before anything runs, with HTTP 400, a JSON-RPC error body and
// the list of known toolsets; so are a path below /api/mcp that is not a selection and a
// read-only header that means nothing.
func TestToolsetSelectionRefusals(t *testing.T) {
	e := newEnv(t, "sqlite")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, tc := range []struct {
		path   string
		header http.Header
		status int
		msg    string
	}{
		{"", http.Header{ToolsetsHeader: {"develop,reviews"}}, 400,
			`Bad toolset selection in the X-Chorus-Toolsets header: unknown toolset "reviews"; the toolsets are core, ideas, proposals, develop, sessions, review, collab, projects, all`},
		{"/x/nope", nil, 400, `Bad toolset selection in the path: unknown toolset "nope"`},
		{"/readonly/x/nope", nil, 400, `unknown toolset "nope"`},
		{"/x/", nil, 400, "No toolset named in the path"},
		{"/x/develop", http.Header{ToolsetsHeader: {"collab"}}, 400, "Toolsets are named twice"},
		{"", http.Header{ReadonlyHeader: {"yes"}}, 400, "X-Chorus-Readonly must be true or false"},
		{"/y/develop", nil, 404, "Not found"},
		{"/readonlyx", nil, 404, "Not found"},
	} {
		req, err := http.NewRequest(http.MethodPost, e.url+tc.path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.adminKey)
		for k, v := range tc.header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, "%s %v: %s", tc.path, tc.header, b)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var rpc struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(b, &rpc), string(b))
		require.Equal(t, "2.0", rpc.JSONRPC)
		require.Equal(t, codeInvalidRequest, rpc.Error.Code)
		require.Contains(t, rpc.Error.Message, tc.msg)
	}
}

// Read-only mode wins over everything: by header, by path, or by key, only tools that change
// nothing are listed (annotated read-only) and callable, whatever the toolsets selected.
func TestReadOnlyMode(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		ep := newTestEndpoint(t)
		ctx := context.Background()
		pmAgent, _, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "PM",
			Roles: []string{perm.PMAgent}, OwnerUUID: &e.owner})
		require.NoError(t, err)
		_, roKey, err := e.st.CreateKeyWith(ctx, e.company, pmAgent.UUID, store.NewKey{Name: "ro", ReadOnly: true})
		require.NoError(t, err)
		pmPerms := perm.Preset(perm.PMAgent)

		conns := map[string]*mcpsdk.ClientSession{
			"header":          e.connectAs(e.adminKey, "", http.Header{ReadonlyHeader: {"True"}, ToolsetsHeader: {"all"}}),
			"path":            e.connectAs(e.adminKey, "readonly/x/all", nil),
			"key":             e.connectAs(roKey, "x/all", nil),
			"key, header off": e.connectAs(roKey, "", http.Header{ReadonlyHeader: {"false"}, ToolsetsHeader: {"all"}}),
		}
		for how, s := range conns {
			perms := perm.All
			if strings.HasPrefix(how, "key") {
				perms = pmPerms
			}
			var listed []string
			for tool, err := range s.Tools(ctx, nil) {
				require.NoError(t, err)
				listed = append(listed, tool.Name)
				require.True(t, tool.Annotations.ReadOnlyHint, "%s: %s is listed read-only without readOnlyHint", how, tool.Name)
			}
			require.ElementsMatch(t, wantNames(ep, perms, allToolsets, true), listed, how)
			require.Contains(t, listed, "chorus_get_notifications")
			require.Contains(t, listed, "chorus_checkin")
			require.NotContains(t, listed, "chorus_add_comment")

			msg := fails(t, s, "chorus_pm_create_idea", map[string]any{"projectUuid": store.NewUUID(), "title": "x"})
			require.Contains(t, msg, "chorus_pm_create_idea changes data, and this connection cannot", how)
			require.Contains(t, msg, "nothing was changed")
		}
		// The sentence says what made the connection read-only.
		require.Contains(t, fails(t, conns["key"], "chorus_claim_idea", map[string]any{"ideaUuid": store.NewUUID()}), "its key is read-only")
		require.Contains(t, fails(t, conns["path"], "chorus_claim_idea", map[string]any{"ideaUuid": store.NewUUID()}), "/api/mcp/readonly")
		require.Contains(t, fails(t, conns["header"], "chorus_claim_idea", map[string]any{"ideaUuid": store.NewUUID()}), "X-Chorus-Readonly is true")
		// Read-only mode beats the toolset refusal: selecting the toolset would not help.
		devOnly := e.connectAs(e.adminKey, "readonly/x/develop", nil)
		require.Contains(t, fails(t, devOnly, "chorus_add_comment", map[string]any{"targetType": "task",
			"targetUuid": store.NewUUID(), "content": "x"}), "changes data")
		// A key the agent lacks the bit for still reads as unknown.
		require.Equal(t, "Tool chorus_admin_verify_task not found", fails(t, conns["key"], "chorus_admin_verify_task",
			map[string]any{"taskUuid": store.NewUUID()}))

		var out CheckinOut
		ok(t, conns["key"], "chorus_checkin", map[string]any{}, &out)
		require.True(t, out.ReadOnly)
	})
}

// In read-only mode chorus_checkin and chorus_get_notifications read notifications without
// marking them read, and refuse an explicit autoMarkRead.
func TestReadOnlyNotificationsStayUnread(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		a, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: "Reader",
			Roles: []string{perm.DeveloperAgent}, OwnerUUID: &e.owner})
		require.NoError(t, err)
		for i := range 3 {
			n := store.Notification{UUID: store.NewUUID(), CompanyUUID: e.company, RecipientType: "agent", RecipientUUID: a.UUID,
				EntityType: "agent", EntityUUID: a.UUID, EntityTitle: "Reader", Action: "mentioned",
				Message: "hello " + string(rune('a'+i)), ActorType: "user", ActorUUID: e.owner, ActorName: "Owner",
				CreatedAt: store.Now(), UpdatedAt: store.Now()}
			_, err := e.st.DB.NewInsert().Model(&n).Exec(ctx)
			require.NoError(t, err)
		}
		ro := e.connectAs(key, "readonly", nil)
		var c CheckinOut
		ok(t, ro, "chorus_checkin", map[string]any{}, &c)
		require.Len(t, c.Notifications.Recent, 3)
		require.Equal(t, 3, c.Notifications.Unread, "a read-only check-in marks nothing read")
		var nl NotificationList
		ok(t, ro, "chorus_get_notifications", map[string]any{}, &nl)
		require.Len(t, nl.Notifications, 3)
		ok(t, ro, "chorus_get_notifications", map[string]any{"autoMarkRead": nil}, &nl)
		require.Equal(t, 3, nl.UnreadCount, "still unread after a read-only read")
		require.Contains(t, fails(t, ro, "chorus_get_notifications", map[string]any{"autoMarkRead": true}),
			"autoMarkRead true would mark notifications read, and this connection is read-only")
		unread, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("recipient_uuid = ?", a.UUID).
			Where("read_at IS NULL").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 3, unread)
		firsts, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("action = 'agent_checkin'").
			Where("entity_uuid = ?", a.UUID).Count(ctx)
		require.NoError(t, err)
		require.Zero(t, firsts, "a read-only check-in does not record the agent's first check-in")

		// The same calls on an ordinary connection do mark them read.
		rw := e.connectAs(key, "", nil)
		ok(t, rw, "chorus_get_notifications", map[string]any{}, &nl)
		ok(t, rw, "chorus_get_notifications", map[string]any{}, &nl)
		require.Zero(t, nl.UnreadCount)
	})
}

// A refused call keeps its answer to the caller, and is logged with the tool, the agent and the
// reason, and counted under a refusal kind of its own (docs/agents.md "Agents and keys").
func TestRefusalsAreLoggedAndCounted(t *testing.T) {
	e := newEnv(t, "sqlite")
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	deps := &Deps{Store: e.st, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: NewMetrics(reg)}
	e.url = serve(t, deps)
	dev := e.agent("Dev", perm.DeveloperAgent)
	s := e.connectAs(dev, "", nil)
	ro := e.connectAs(dev, "readonly", nil)

	require.Equal(t, "Tool chorus_nope not found", fails(t, s, "chorus_nope", map[string]any{}))
	require.Equal(t, "Tool chorus_admin_verify_task not found", fails(t, s, "chorus_admin_verify_task", map[string]any{"taskUuid": store.NewUUID()}))
	require.Contains(t, fails(t, s, "chorus_add_comment", map[string]any{}), "collab toolset")
	require.Contains(t, fails(t, ro, "chorus_claim_task", map[string]any{"taskUuid": store.NewUUID()}), "changes data")

	for _, kind := range []string{KindUnknownTool, KindMissingPermission, KindOutsideToolsets, KindReadOnly} {
		var m dto.Metric
		require.NoError(t, deps.Metrics.refusals.WithLabelValues(kind).Write(&m))
		require.Equal(t, 1.0, m.GetCounter().GetValue(), kind)
	}
	type line struct {
		Msg, Tool, Kind, Reason, Agent, AgentName string
	}
	var got []line
	for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var ln line
		require.NoError(t, json.Unmarshal([]byte(l), &ln))
		if ln.Msg == "tool refused" {
			got = append(got, ln)
		}
	}
	require.Len(t, got, 4, logs.String())
	byTool := map[string]line{}
	for _, l := range got {
		byTool[l.Tool] = l
		require.Equal(t, "Dev", l.AgentName)
		require.NotEmpty(t, l.Agent)
	}
	require.Equal(t, KindMissingPermission, byTool["chorus_admin_verify_task"].Kind)
	require.Equal(t, "the key lacks task:admin", byTool["chorus_admin_verify_task"].Reason)
	require.Equal(t, KindUnknownTool, byTool["chorus_nope"].Kind)
	require.Equal(t, KindOutsideToolsets, byTool["chorus_add_comment"].Kind)
	require.Equal(t, KindReadOnly, byTool["chorus_claim_task"].Kind)
}

// tools/list and prompts/list answers depend on the key, so they are marked private: no shared
// cache may serve one to another caller.
func TestListsAreNotSharedCacheable(t *testing.T) {
	e := newEnv(t, "sqlite")
	for _, method := range []string{"tools/list", "prompts/list"} {
		resp, body := e.rawPost("Bearer "+e.adminKey, `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		var rpc struct {
			Result struct {
				CacheScope string `json:"cacheScope"`
			} `json:"result"`
		}
		data := body
		if d := eventData(body); d != "" {
			data = d
		}
		require.NoError(t, json.Unmarshal([]byte(data), &rpc), body)
		require.Equal(t, "private", rpc.Result.CacheScope, method)
	}
}

// The playbooks are MCP prompts any client can list and fetch.
func TestPlaybookPrompts(t *testing.T) {
	e := newEnv(t, "sqlite")
	s := e.connectAs(e.agent("PM", perm.PMAgent), "", nil)
	ctx := context.Background()
	var names []string
	for p, err := range s.Prompts(ctx, nil) {
		require.NoError(t, err)
		names = append(names, p.Name)
		require.NotEmpty(t, p.Description)
	}
	require.Equal(t, []string{"idea-to-proposal", "review-and-verify", "task-to-submission"}, slices.Sorted(slices.Values(names)))
	idea := store.NewUUID()
	got, err := s.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "idea-to-proposal", Arguments: map[string]string{"ideaUuid": idea}})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	body := got.Messages[0].Content.(*mcpsdk.TextContent).Text
	require.Contains(t, body, idea)
	require.Contains(t, body, "chorus_pm_submit_proposal")
	all := newTestEndpoint(t).ToolNames(perm.All)
	for _, pb := range playbooks {
		for _, name := range regexp.MustCompile(`chorus_[a-z_]+`).FindAllString(pb.steps("")+pb.about, -1) {
			require.Contains(t, all, name, "playbook %s names a tool that does not exist", pb.name)
		}
	}
	_, err = s.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "task-to-submission", Arguments: map[string]string{"taskUuid": "not a uuid"}})
	require.ErrorContains(t, err, "taskUuid must be a uuid")
}

// Every tool a read-only connection lists changes nothing: each is called with valid arguments
// against a lifecycle fixture, and every row of every table is the same afterwards (the key's
// and agent's last-use bookkeeping of authentication aside).
func TestReadOnlyToolsChangeNothing(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		pm := e.pmWithIdeaAdmin("PM")
		project := createProject(t, admin, "Apollo")
		idea, tasks := approvedIdea(t, pm, admin, project)
		var proposals ProposalList
		ok(t, admin, "chorus_get_proposals", map[string]any{"projectUuid": project}, &proposals)
		doc := createDocument(t, admin, project)
		adminAgent := agentUUID(t, e, "Admin Agent")
		ok(t, pm, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": tasks[0],
			"content": "Please look, " + mention("Admin Agent", "agent", adminAgent)}, nil)
		var session SessionView
		ok(t, admin, "chorus_create_session", map[string]any{"name": "main"}, &session)
		ok(t, admin, "chorus_session_checkin_task", map[string]any{"sessionUuid": session.UUID, "taskUuid": tasks[0]}, nil)
		var group GroupView
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Space"}, &group)

		args := map[string]map[string]any{
			"chorus_checkin":                    {},
			"chorus_list_projects":              {},
			"chorus_get_project":                {"projectUuid": project},
			"chorus_get_idea":                   {"ideaUuid": idea},
			"chorus_get_task":                   {"taskUuid": tasks[0]},
			"chorus_get_references":             {"targetType": "task", "targetUuid": tasks[0]},
			"chorus_get_task_dependencies":      {"taskUuid": tasks[0], "direction": "dependedBy"},
			"chorus_get_my_assignments":         {},
			"chorus_get_notifications":          {},
			"chorus_get_ideas":                  {"projectUuid": project},
			"chorus_get_available_ideas":        {"projectUuid": project},
			"chorus_get_elaboration":            {"ideaUuid": idea},
			"chorus_get_proposals":              {"projectUuid": project},
			"chorus_get_proposal":               {"proposalUuid": proposals.Proposals[0].UUID, "section": "full"},
			"chorus_pm_validate_proposal":       {"proposalUuid": proposals.Proposals[0].UUID},
			"chorus_get_available_tasks":        {"projectUuid": project},
			"chorus_get_unblocked_tasks":        {"projectUuid": project},
			"chorus_list_sessions":              {},
			"chorus_get_session":                {"sessionUuid": session.UUID},
			"chorus_list_tasks":                 {"projectUuid": project},
			"chorus_get_comments":               {"targetType": "task", "targetUuid": tasks[0]},
			"chorus_get_activity":               {"projectUuid": project},
			"chorus_search":                     {"query": "Root"},
			"chorus_search_mentionables":        {"query": ""},
			"chorus_get_documents":              {"projectUuid": project},
			"chorus_get_document":               {"documentUuid": doc},
			"chorus_get_project_groups":         {},
			"chorus_get_project_group":          {"groupUuid": group.UUID},
			"chorus_get_group_dashboard":        {"groupUuid": group.UUID},
			"chorus_list_project_members":       {"projectUuid": project},
			"chorus_list_project_group_members": {"groupUuid": group.UUID},
		}
		requireEventually(t, func() bool {
			unread, err := e.st.DB.NewSelect().Model((*store.Notification)(nil)).Where("recipient_uuid = ?", adminAgent).
				Where("read_at IS NULL").Count(ctx)
			return err == nil && unread > 0
		}, "the fixture leaves the admin unread notifications, which a read could mark read")

		ro := e.connectAs(e.adminKey, "readonly/x/all", nil)
		before := snapshot(t, e)
		var listed []string
		for tool, err := range ro.Tools(ctx, nil) {
			require.NoError(t, err)
			listed = append(listed, tool.Name)
			a, known := args[tool.Name]
			require.True(t, known, "%s is listed read-only: give it valid arguments here so this test proves it changes nothing", tool.Name)
			// A tool that takes a requestId gets one: the ledger is a table like any other.
			if props, _ := tool.InputSchema.(map[string]any)["properties"].(map[string]any); props[requestIDField] != nil {
				a = maps.Clone(a)
				a[requestIDField] = "read-only-" + tool.Name
			}
			res := call(t, ro, tool.Name, a)
			require.False(t, res.IsError, "%s: %s", tool.Name, text(res))
		}
		require.ElementsMatch(t, slices.Collect(maps.Keys(args)), listed)
		require.Equal(t, before, snapshot(t, e), "a tool listed in read-only mode changed a row")
	})
}

// snapshot is every row of every table of the env's database, each as JSON, sorted; the columns
// that authentication updates on every request are left out.
func snapshot(t *testing.T, e *env) map[string][]string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if e.st.Dialect() == "pg" {
		q = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
	}
	require.NoError(t, e.st.DB.NewRaw(q).Scan(ctx, &tables))
	skip := map[string][]string{"api_keys": {"last_used_at"}, "agents": {"last_active_at"}}
	out := map[string][]string{}
	for _, table := range tables {
		var rows []map[string]any
		require.NoError(t, e.st.DB.NewRaw("SELECT * FROM "+table).Scan(ctx, &rows), table)
		for _, r := range rows {
			for _, c := range skip[table] {
				delete(r, c)
			}
			b, err := json.Marshal(r)
			require.NoError(t, err)
			out[table] = append(out[table], string(b))
		}
		slices.Sort(out[table])
	}
	require.NotEmpty(t, out["tasks"])
	return out
}

// Each playbook's toolsets are what its steps use: every tool it names is in core or in one of
// them, each of them holds a tool it names, and its description names them (chorus init selects
// a role's toolsets from them).
func TestPlaybookToolsets(t *testing.T) {
	ep := newTestEndpoint(t)
	toolsetOf := map[string]string{}
	for _, bt := range ep.listed(perm.All, Conn{Toolsets: allToolsets}) {
		toolsetOf[bt.spec.Name] = bt.spec.Toolset.String()
	}
	pbs := Playbooks()
	require.Len(t, pbs, len(playbooks))
	for _, pb := range pbs {
		require.NotEmpty(t, pb.Toolsets, pb.Name)
		used := map[string]bool{}
		for _, name := range regexp.MustCompile(`chorus_[a-z_]+`).FindAllString(pb.Text, -1) {
			ts := toolsetOf[name]
			require.True(t, ts == "core" || slices.Contains(pb.Toolsets, ts),
				"playbook %s names %s, of the %s toolset, which it does not list", pb.Name, name, ts)
			used[ts] = true
		}
		for _, ts := range pb.Toolsets {
			require.True(t, used[ts], "playbook %s lists the %s toolset and names none of its tools", pb.Name, ts)
			require.Contains(t, pb.About, ts, "playbook %s's description does not name its %s toolset", pb.Name, ts)
		}
		require.Contains(t, []string{"pm", "developer", "admin"}, pb.Role, pb.Name)
	}
}

// NormalizeToolsets writes a selection the way the server reads it, and refuses an unknown name
// with the list of toolsets.
func TestNormalizeToolsets(t *testing.T) {
	for in, want := range map[string]string{"develop,collab": "develop,collab", " Collab , develop": "develop,collab",
		"core": "core", "core,review": "review", "all": "all", "develop,all": "all"} {
		got, err := NormalizeToolsets(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := NormalizeToolsets("develop,nope")
	require.ErrorContains(t, err, `unknown toolset "nope"; the toolsets are core, ideas, proposals, develop, sessions, review, collab, projects, all`)
	_, err = NormalizeToolsets(" , ")
	require.ErrorContains(t, err, "no toolset named")
}
