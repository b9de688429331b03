package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
)

// The admin creates an agent with the pm preset and an extra bit; its key is shown once, works
// over MCP, and once revoked the next connection and call get 401.
func TestAgentCreateKeyShownOnceAndRevoked(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/agents")
	require.Contains(t, b.text("#agents"), "Admin Agent", "the admin sees the company's agents")
	b.fill("#name", "Planner")
	eval[bool](b, `document.querySelector('input[name=presets][value=pm_agent]').checked = true`)
	b.fill("#permissions", "idea:admin")
	b.fill("#persona", "Plans the work")
	b.click("#create")
	b.waitText("shown only now")
	key := strings.TrimSpace(b.text("#key"))
	uuid := strings.TrimSpace(b.text("#agent-uuid"))
	require.True(t, strings.HasPrefix(key, store.KeyPrefix), "a key: %q", key)

	ag, err := s.st.GetAgent(ctx, s.company, uuid)
	require.NoError(t, err)
	assert.Equal(t, "Planner", ag.Name)
	assert.Equal(t, []string{"pm_agent"}, ag.Roles)
	assert.Equal(t, []string{"idea:admin"}, ag.Permissions)
	require.NotNil(t, ag.OwnerUUID)
	assert.Equal(t, s.admin.UUID, *ag.OwnerUUID, "the person's agent is their own")
	require.NotNil(t, ag.Persona)
	assert.Equal(t, "Plans the work", *ag.Persona)

	b.open("/console/agents/" + uuid)
	assert.NotContains(t, b.page(), key, "the key is shown once, never again")
	assert.NotContains(t, b.page(), "shown only now")

	a := s.connect(key)
	out := s.call(a, "chorus_checkin", map[string]any{})
	assert.Contains(t, jsonText(t, out), "Planner", "the key works over MCP")
	b.open("/console/agents")
	row := eval[string](b, `[...document.querySelectorAll('#agents tr')].find(r => r.innerText.includes('Planner')).innerText`)
	assert.Contains(t, row, "UTC", "the list shows the agent's last activity: %q", row)
	assert.Contains(t, row, "idea:admin")
	b.open("/console/agents/" + uuid)

	b.click("#keys button.revoke")
	b.waitText("revoked: its next call is refused")
	assert.Contains(t, b.text("#keys"), "revoked")

	_, err = mcpclient.Connect(ctx, s.url+mcp.Path, key, &mcpsdk.Implementation{Name: "console-test", Version: "1"})
	require.Error(t, err, "a revoked key cannot connect")
	req, _ := http.NewRequest(http.MethodPost, s.url+mcp.Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	readAll(t, res)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "a revoked key's next call gets 401")
	var failed map[string]any
	assert.Error(t, a.Call(ctx, "chorus_checkin", map[string]any{}, &failed), "the open session's next call fails too")
}

// A member sees only the agents they own; another's agent and key are not found, and a post
// on them changes nothing.
func TestAgentMemberSeesOnlyTheirOwn(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	mia := s.user("mia@example.com", store.RoleMember)
	mine, _, err := s.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: s.company, Name: "Mia's helper", Roles: []string{"developer_agent"},
		OwnerUUID: &mia.UUID})
	require.NoError(t, err)
	theirs, theirKey, err := s.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: s.company, Name: "Ada's secret agent",
		Roles: []string{"admin_agent"}, OwnerUUID: &s.admin.UUID})
	require.NoError(t, err)

	c, _ := s.httpSignIn(mia)
	res, err := c.Get(s.url + "/console/agents")
	require.NoError(t, err)
	body := readAll(t, res)
	assert.Contains(t, body, "Mia&#39;s helper")
	assert.NotContains(t, body, "Ada&#39;s secret agent")
	assert.NotContains(t, body, "Admin Agent")

	res, err = c.Get(s.url + "/console/agents/" + theirs.UUID)
	require.NoError(t, err)
	body = readAll(t, res)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Contains(t, body, "Agent not found")

	past := store.Now().Add(-time.Hour)
	_, _, err = s.st.CreateKeyWith(ctx, s.company, mine.UUID, store.NewKey{Name: "old laptop", ExpiresAt: &past})
	require.NoError(t, err)
	res, err = c.Get(s.url + "/console/agents/" + mine.UUID)
	require.NoError(t, err)
	body = readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Regexp(t, `old laptop</td>\s*<td class="state">expired`, body, "an expired key shows as expired")
	csrf := formValue(body, "_csrf")
	k, err := s.st.KeyByRef(ctx, s.company, theirKey)
	require.NoError(t, err)
	for _, path := range []string{"/console/agents/" + theirs.UUID + "/keys/" + k.UUID + "/revoke",
		"/console/agents/" + mine.UUID + "/keys/" + k.UUID + "/revoke", "/console/agents/" + theirs.UUID + "/keys"} {
		res, err = c.PostForm(s.url+path, url.Values{"_csrf": {csrf}, "requestId": {store.NewUUID()}})
		require.NoError(t, err)
		body = readAll(t, res)
		assert.Equal(t, http.StatusNotFound, res.StatusCode, path)
		assert.Regexp(t, "(Agent|API key) not found", body, path)
	}
	_, err = s.st.Authenticate(ctx, theirKey)
	assert.NoError(t, err, "the other's key is still valid")
	keys, err := s.st.ListKeys(ctx, s.company, theirs.UUID)
	require.NoError(t, err)
	assert.Len(t, keys, 1, "no key was issued for the other's agent")
}

// Bad input shows the use case's field-named error beside the field and creates nothing; a
// double submit of the create form (the same requestId) creates one agent.
func TestAgentBadInputAndDoubleSubmit(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/agents")
	require.NoError(t, err)
	body := readAll(t, res)
	csrf, rid := formValue(body, "_csrf"), formValue(body, "requestId")
	require.NotEmpty(t, rid)
	before, err := s.st.ListAgents(ctx, s.company)
	require.NoError(t, err)

	for _, bad := range []struct {
		form  url.Values
		field string
		text  string
	}{
		{url.Values{"name": {"  "}}, "name", "name: an agent needs a name"},
		{url.Values{"name": {"x"}, "presets": {"boss_agent"}}, "presets", "presets: unknown preset &#34;boss_agent&#34;"},
		{url.Values{"name": {"x"}, "permissions": {"task:fly"}}, "permissions", "permissions: permission &#34;task:fly&#34;"},
	} {
		bad.form.Set("_csrf", csrf)
		bad.form.Set("requestId", store.NewUUID())
		res, err := c.PostForm(s.url+"/console/agents", bad.form)
		require.NoError(t, err)
		body := readAll(t, res)
		assert.Equal(t, http.StatusUnprocessableEntity, res.StatusCode, bad.field)
		i := strings.Index(body, `id="`+bad.field+`-error"`)
		require.Positive(t, i, "the error is beside the %s field:\n%s", bad.field, body)
		assert.Contains(t, body[i:i+300], bad.text)
	}
	after, err := s.st.ListAgents(ctx, s.company)
	require.NoError(t, err)
	assert.Len(t, after, len(before), "refused creates made nothing")

	form := url.Values{"_csrf": {csrf}, "requestId": {rid}, "name": {"Twin"}, "presets": {"developer_agent"}}
	var bodies []string
	for range 2 {
		res, err := c.PostForm(s.url+"/console/agents", form)
		require.NoError(t, err)
		bodies = append(bodies, readAll(t, res))
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	assert.Contains(t, bodies[0], `id="key"`, "the first answer shows the key")
	assert.NotContains(t, bodies[1], `id="key"`, "the second shows no key")
	assert.Contains(t, bodies[1], "already submitted")
	after, err = s.st.ListAgents(ctx, s.company)
	require.NoError(t, err)
	twins := 0
	for _, a := range after {
		if a.Name == "Twin" {
			twins++
			// Its uuid is derived from the form's requestId bound to the form's values
			// (console.formRequestID), not from the bare requestId.
			bare := app.Request{Who: app.UserPrincipal(s.admin), RequestID: rid}.NewID("agent")
			assert.NotEqual(t, bare, a.UUID, "the bare requestId is not the key")
		}
	}
	assert.Equal(t, 1, twins, "a double submit creates one agent")
}

// The browser shows a refusal beside its field and keeps what was typed.
func TestAgentEmptyNameInTheBrowser(t *testing.T) {
	s := newStack(t, "sqlite")
	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/agents")
	b.fill("#permissions", "task:admin")
	b.click("#create")
	b.waitText("name: an agent needs a name")
	assert.Contains(t, b.text("#name-error"), "name: an agent needs a name")
	assert.Equal(t, "task:admin", eval[string](b, `document.querySelector('#permissions').value`), "the form keeps its input")
	assert.NotContains(t, b.page(), "shown only now")
}

// jsonText is v as JSON text.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
