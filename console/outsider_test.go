package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The console's version of mcp/outsider_test.go: a person who may not see a private project (a
// member of the company who is not on it, and the admin of another company) meets every route
// the console mounted, GET and POST, with the uuids of what is in that project, of another
// person's notification, agent and key: each answer is 404 with the text the tool gives ("Task
// not found"), names nothing of what it hides, and changes nothing. The routes come from the
// router itself, so a route added later without a case here fails the test.

// outsiderWorld is what the outsiders aim at: a private project of the admin with an idea, a
// pending proposal, a task waiting for verification, a document and a member; the admin's
// notification, agent and key; and a public project the company's member does see.
type outsiderWorld struct {
	public, project, idea, proposal, task, criterion, document string
	notification, agent, key, member, gate                     string
	webhook, delivery                                          string
	secrets                                                    []string // titles no outsider page may show
}

func (s *stack) outsiderWorld() outsiderWorld {
	s.t.Helper()
	ctx := context.Background()
	f := s.pendingProposal("private")
	v := s.toVerify()
	admin := s.connect(s.adminKey)
	w := outsiderWorld{project: f.project, idea: f.idea, proposal: f.proposal, task: v.task, criterion: v.criteria[0],
		secrets: []string{"Checkout v2", "One-page checkout", "Ship the login form", "Vault PRD", "Ada&#39;s vault agent"}}
	w.public = s.createProject("Open house")
	w.document = str(s.call(admin, "chorus_pm_create_document", map[string]any{"projectUuid": f.project, "type": "prd",
		"title": "Vault PRD", "content": "secret"}), "uuid")
	s.call(f.pm, "chorus_add_comment", map[string]any{"targetType": "idea", "targetUuid": f.idea,
		"content": "Please look, @[Ada Admin](user:" + s.admin.UUID + ")"})
	require.NoError(s.t, s.st.DB.NewSelect().Table("notifications").Column("uuid").
		Where("recipient_uuid = ?", s.admin.UUID).Limit(1).Scan(ctx, &w.notification))
	ag, key, err := s.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: s.company, Name: "Ada's vault agent",
		Roles: []string{perm.AdminAgent}, OwnerUUID: &s.admin.UUID})
	require.NoError(s.t, err)
	k, err := s.st.KeyByRef(ctx, s.company, key)
	require.NoError(s.t, err)
	w.agent, w.key = ag.UUID, k.UUID
	m := s.user("member@example.com", store.RoleMember)
	s.call(admin, "chorus_admin_add_project_member", map[string]any{"projectUuid": f.project, "userUuid": m.UUID, "role": "editor"})
	w.member = m.UUID
	_, err = s.app.SetGatePolicyAsOperator(ctx, s.company, f.project, app.GatePolicyInput{Commands: []string{vocab.GateApproveProposal}})
	require.NoError(s.t, err)
	w.gate = str(s.call(admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": f.proposal}), "awaitingHuman.gateUuid")
	hook := &store.Webhook{UUID: store.NewUUID(), CompanyUUID: s.company, ProjectUUID: f.project, URL: "https://93.184.216.34/vault-hook",
		Secret: "whsec_vault", CreatedByType: "user", CreatedByUUID: s.admin.UUID}
	require.NoError(s.t, s.st.CreateWebhook(ctx, hook))
	require.NoError(s.t, store.InsertNotifications(ctx, s.st.DB, s.company, store.NotifySpec{Seed: store.NewUUID(), ProjectUUID: f.project,
		Action: "task_assigned", EntityType: "task", EntityUUID: v.task, ActorType: "user", ActorUUID: s.admin.UUID}))
	_, err = s.st.SequenceEvents(ctx)
	require.NoError(s.t, err)
	_, err = s.st.DispatchWebhookEvents(ctx, 10)
	require.NoError(s.t, err)
	ds, err := s.st.WebhookDeliveries(ctx, hook.UUID, "", 1)
	require.NoError(s.t, err)
	require.Len(s.t, ds, 1)
	require.NoError(s.t, s.st.MarkDeliveryDead(ctx, ds[0].UUID))
	w.webhook, w.delivery = hook.UUID, ds[0].UUID
	w.secrets = append(w.secrets, "vault-hook", "whsec_vault")
	return w
}

// otherCompanyAdmin makes a second company with its admin.
func (s *stack) otherCompanyAdmin() *store.User {
	s.t.Helper()
	ctx := context.Background()
	co := store.Company{UUID: store.NewUUID(), Name: "Other Co", EmailDomains: []string{}, CreatedAt: store.Now(), UpdatedAt: store.Now()}
	_, err := s.st.DB.NewInsert().Model(&co).Exec(ctx)
	require.NoError(s.t, err)
	u, err := s.st.CreateUser(ctx, co.UUID, "eve@other.example", "Eve", store.RoleAdmin)
	require.NoError(s.t, err)
	return u
}

// snapshot is what an outsider's request must not change: row counts and states of everything
// the console's forms touch.
func (s *stack) snapshot() map[string]int {
	s.t.Helper()
	out := map[string]int{}
	for name, q := range map[string]string{
		"activities": "SELECT count(*) FROM activities", "comments": "SELECT count(*) FROM comments",
		"agents": "SELECT count(*) FROM agents", "live keys": "SELECT count(*) FROM api_keys WHERE revoked_at IS NULL",
		"members":           "SELECT count(*) FROM project_members",
		"private projects":  "SELECT count(*) FROM projects WHERE visibility = 'private'",
		"claim ttls":        "SELECT count(*) FROM projects WHERE claim_ttl_seconds IS NOT NULL",
		"unread":            "SELECT count(*) FROM notifications WHERE read_at IS NULL",
		"awaiting gates":    "SELECT count(*) FROM gate_requests WHERE status = 'awaiting'",
		"gate policies":     "SELECT count(*) FROM gate_policies WHERE commands <> ''",
		"pending proposals": "SELECT count(*) FROM proposals WHERE status = 'pending'",
		"tasks to verify":   "SELECT count(*) FROM tasks WHERE status = 'to_verify'",
		"answers":           "SELECT count(*) FROM elaboration_questions WHERE answered_at IS NOT NULL",
		"marks":             "SELECT count(*) FROM acceptance_criteria WHERE status <> 'pending'",
		"webhooks":          "SELECT count(*) FROM webhooks",
		"dead deliveries":   "SELECT count(*) FROM webhook_deliveries WHERE state = 'dead'",
	} {
		var n int
		require.NoError(s.t, s.st.DB.QueryRowContext(context.Background(), q).Scan(&n), name)
		out[name] = n
	}
	return out
}

// outsiderCase is one request an outsider makes: the path, the form (POST) and the text of the
// not-found answer.
type outsiderCase struct {
	path string
	form url.Values
	want string
}

// outsiderCases are the requests aimed at w for each route the console mounts ("METHOD /path"
// as echo lists it). A route with no case fails the test; nil: a route that reaches only the
// person's own things (their lists, their sign-out, creating their own agent), checked apart.
func outsiderCases(w outsiderWorld) map[string][]outsiderCase {
	p := "/console/projects/" + w.project
	mark := url.Values{"criteria[0].uuid": {w.criterion}, "criteria[0].status": {"passed"}}
	comment := func(typ, id, want string) outsiderCase {
		return outsiderCase{"/console/comments", url.Values{"targetType": {typ}, "targetUuid": {id}, "content": {"hi"},
			"back": {"/console/"}}, want}
	}
	return map[string][]outsiderCase{
		"GET /console/":                nil,
		"GET /console/review":          nil,
		"GET /console/verify":          nil,
		"GET /console/inbox":           nil,
		"GET /console/agents":          nil,
		"POST /console/agents":         nil,
		"POST /console/logout":         nil,
		"POST /console/inbox/read-all": nil,
		"GET /console/gates":           nil,
		// The person's own event stream; following a project they cannot see is "Project not
		// found" (stream.TestStreamFollowsAProject).
		"GET /console/events":               nil,
		"POST /console/gates/:uuid/approve": {{path: "/console/gates/" + w.gate + "/approve", want: "Gate not found"}},
		"POST /console/gates/:uuid/refuse": {{path: "/console/gates/" + w.gate + "/refuse", form: url.Values{"note": {"no"}},
			want: "Gate not found"}},
		"POST /console/projects/:uuid/settings/gates": {{path: p + "/settings/gates",
			form: url.Values{"commands": {"verify_task"}}, want: "Project not found"}},
		"GET /console/projects/:uuid":       {{path: p, want: "Project not found"}},
		"GET /console/ideas/:uuid/graph":    {{path: "/console/ideas/" + w.idea + "/graph", want: "Idea not found"}},
		"GET /console/projects/:uuid/ideas": {{path: p + "/ideas", want: "Project not found"}},
		"GET /console/ideas/:uuid":          {{path: "/console/ideas/" + w.idea, want: "Idea not found"}},
		"POST /console/ideas/:uuid/answers": {{path: "/console/ideas/" + w.idea + "/answers",
			form: url.Values{"question": {"q1"}, "text:q1": {"mine"}}, want: "Idea not found"}},
		"POST /console/ideas/:uuid/resolve": {{path: "/console/ideas/" + w.idea + "/resolve", want: "Idea not found"}},
		"GET /console/proposals/:uuid":      {{path: "/console/proposals/" + w.proposal, want: "Proposal not found"}},
		"POST /console/proposals/:uuid/:action": {
			{path: "/console/proposals/" + w.proposal + "/approve", want: "Proposal not found"},
			{path: "/console/proposals/" + w.proposal + "/reject", form: url.Values{"reviewNote": {"no"}}, want: "Proposal not found"},
			{path: "/console/proposals/" + w.proposal + "/close", form: url.Values{"reviewNote": {"no"}}, want: "Proposal not found"}},
		"GET /console/tasks/:uuid":           {{path: "/console/tasks/" + w.task, want: "Task not found"}},
		"POST /console/tasks/:uuid/criteria": {{path: "/console/tasks/" + w.task + "/criteria", form: mark, want: "Task not found"}},
		"POST /console/tasks/:uuid/verify":   {{path: "/console/tasks/" + w.task + "/verify", want: "Task not found"}},
		"POST /console/tasks/:uuid/reopen": {{path: "/console/tasks/" + w.task + "/reopen", form: url.Values{"force": {"1"}},
			want: "Task not found"}},
		"POST /console/tasks/:uuid/close": {{path: "/console/tasks/" + w.task + "/close", want: "Task not found"}},
		"POST /console/inbox/read": {{path: "/console/inbox/read", form: url.Values{"notificationUuid": {w.notification}},
			want: "Notification not found"}},
		"GET /console/comments/:type/:uuid": {
			{path: "/console/comments/idea/" + w.idea, want: "Idea not found"},
			{path: "/console/comments/proposal/" + w.proposal, want: "Proposal not found"},
			{path: "/console/comments/task/" + w.task, want: "Task not found"},
			{path: "/console/comments/document/" + w.document, want: "Document not found"}},
		"POST /console/comments": {comment("idea", w.idea, "Idea not found"), comment("proposal", w.proposal, "Proposal not found"),
			comment("task", w.task, "Task not found"), comment("document", w.document, "Document not found")},
		"GET /console/agents/:uuid":       {{path: "/console/agents/" + w.agent, want: "Agent not found"}},
		"POST /console/agents/:uuid/keys": {{path: "/console/agents/" + w.agent + "/keys", want: "Agent not found"}},
		"POST /console/agents/:uuid/keys/:key/revoke": {{path: "/console/agents/" + w.agent + "/keys/" + w.key + "/revoke",
			want: "Agent not found"}},
		"GET /console/projects/:uuid/settings": {{path: p + "/settings", want: "Project not found"}},
		"POST /console/projects/:uuid/settings/visibility": {
			{path: p + "/settings/visibility", form: url.Values{"visibility": {"public"}}, want: "Project not found"},
			{path: p + "/settings/visibility", form: url.Values{"visibility": {"public"}, "token": {"x"}}, want: "Project not found"}},
		"POST /console/projects/:uuid/settings/claim-ttl": {{path: p + "/settings/claim-ttl",
			form: url.Values{"claimTtlSeconds": {"60"}}, want: "Project not found"}},
		"POST /console/projects/:uuid/settings/members": {{path: p + "/settings/members",
			form: url.Values{"email": {"eve@other.example"}, "role": {"admin"}}, want: "Project not found"}},
		"POST /console/projects/:uuid/settings/members/:user": {{path: p + "/settings/members/" + w.member,
			form: url.Values{"role": {"viewer"}}, want: "Project not found"}},
		"POST /console/projects/:uuid/settings/members/:user/remove": {{path: p + "/settings/members/" + w.member + "/remove",
			want: "Project not found"}},
		"POST /console/projects/:uuid/settings/webhooks": {{path: p + "/settings/webhooks",
			form: url.Values{"url": {"https://93.184.216.34/mine"}}, want: "Project not found"}},
		"POST /console/projects/:uuid/settings/webhooks/:webhook/remove": {{path: p + "/settings/webhooks/" + w.webhook + "/remove",
			want: "Webhook not found"}},
		"GET /console/projects/:uuid/settings/webhooks/:webhook": {{path: p + "/settings/webhooks/" + w.webhook,
			want: "Project not found"}},
		"POST /console/projects/:uuid/settings/webhooks/:webhook/deliveries/:delivery/redeliver": {{path: p + "/settings/webhooks/" +
			w.webhook + "/deliveries/" + w.delivery + "/redeliver", want: "Delivery not found"}},
	}
}

// consoleRoutes are the signed-in routes the console mounted, as "METHOD /path".
func (s *stack) consoleRoutes() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		if !strings.HasPrefix(r.Path, "/console/") || strings.HasPrefix(r.Path, "/console/login") ||
			strings.HasPrefix(r.Path, "/console/static/") || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

func TestOutsiderEveryRouteIsNotFound(t *testing.T) {
	s := newStack(t, "sqlite")
	w := s.outsiderWorld()
	cases := outsiderCases(w)
	routes := s.consoleRoutes()
	require.NotEmpty(t, routes)
	for _, r := range routes {
		_, ok := cases[r]
		require.True(t, ok, "route %s has no outsider case: add one to outsiderCases", r)
	}
	mallory := s.user("mallory@example.com", store.RoleMember)
	eve := s.otherCompanyAdmin()
	for _, who := range []*store.User{mallory, eve} {
		c, _ := s.httpSignIn(who)
		res, err := c.Get(s.url + "/console/")
		require.NoError(t, err)
		csrf := formValue(readAll(t, res), "_csrf")
		require.NotEmpty(t, csrf)
		before := s.snapshot()
		for _, r := range routes {
			method := r[:strings.Index(r, " ")]
			for _, oc := range cases[r] {
				var res *http.Response
				if method == http.MethodGet {
					res, err = c.Get(s.url + oc.path)
				} else {
					form := url.Values{"_csrf": {csrf}, "requestId": {store.NewUUID()}}
					for k, v := range oc.form {
						form[k] = v
					}
					res, err = c.PostForm(s.url+oc.path, form)
				}
				require.NoError(t, err)
				body := readAll(t, res)
				name := fmt.Sprintf("%s as %s: %s %s", r, who.DisplayName(), method, oc.path)
				assert.Equal(t, http.StatusNotFound, res.StatusCode, name)
				assert.Contains(t, body, oc.want, name)
				assert.NotEmpty(t, res.Header.Get("Content-Security-Policy"), name)
				for _, secret := range w.secrets {
					assert.NotContains(t, body, secret, name)
				}
			}
		}
		// The lists name nothing of the private project.
		for _, path := range []string{"/console/", "/console/review", "/console/verify", "/console/inbox", "/console/agents",
			"/console/gates"} {
			res, err := c.Get(s.url + path)
			require.NoError(t, err)
			body := readAll(t, res)
			require.Equal(t, http.StatusOK, res.StatusCode, path)
			for _, secret := range w.secrets {
				assert.NotContains(t, body, secret, path)
			}
		}
		// Mark all read marks only the person's own.
		res, err = c.PostForm(s.url+"/console/inbox/read-all", url.Values{"_csrf": {csrf}, "requestId": {store.NewUUID()}})
		require.NoError(t, err)
		readAll(t, res)
		assert.Equal(t, before, s.snapshot(), "%s changed something", who.DisplayName())
	}

	// The company's member sees the public project, not the private project's idea through it.
	c, _ := s.httpSignIn(mallory)
	res, err := c.Get(s.url + "/console/projects/" + w.public + "?idea=" + w.idea)
	require.NoError(t, err)
	body := readAll(t, res)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Contains(t, body, "Idea not found")
	assert.NotContains(t, body, "One-page checkout")
	// The other company's admin does not see the public project either.
	ce, _ := s.httpSignIn(eve)
	res, err = ce.Get(s.url + "/console/projects/" + w.public)
	require.NoError(t, err)
	body = readAll(t, res)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Contains(t, body, "Project not found")
}

// A viewer of the private project posts every form the console has, aimed at what the project
// holds: each is refused (the use case's "Insufficient project access" or "Only project admins
// ...", or not found for what is not theirs: the admin's notification, agent and key) and
// nothing changes. The add-member form names an e-mail of no person: the viewer is refused for
// the project before the e-mail is looked at, so the form tells no one who is in the company.
func TestViewerEveryFormIsRefused(t *testing.T) {
	s := newStack(t, "sqlite")
	w := s.outsiderWorld()
	viewer := s.user("vera@example.com", store.RoleMember)
	s.call(s.connect(s.adminKey), "chorus_admin_add_project_member", map[string]any{"projectUuid": w.project,
		"userUuid": viewer.UUID, "role": "viewer"})
	p := s.poster(t, viewer)
	before := s.snapshot()
	cases := outsiderCases(w)
	posted := 0
	for _, r := range s.consoleRoutes() {
		if !strings.HasPrefix(r, "POST ") {
			continue
		}
		for _, oc := range cases[r] {
			form := url.Values{"requestId": {store.NewUUID()}}
			for k, v := range oc.form {
				form[k] = v
			}
			status, body := p.post(oc.path, form)
			posted++
			assert.True(t, status >= 400 && status < 500, "%s %s: %d", r, oc.path, status)
			assert.Regexp(t, "Insufficient project access|Only project admins can manage this project|not found", body, oc.path)
		}
	}
	require.Greater(t, posted, 15)
	assert.Equal(t, before, s.snapshot(), "the viewer changed something")
}

// The admin posts every form twice with the same requestId (a double submit): whatever the first
// post did, the second changes nothing more.
func TestEveryFormDoubleSubmitAppliesOnce(t *testing.T) {
	s := newStack(t, "sqlite")
	w := s.outsiderWorld()
	p := s.poster(t, s.admin)
	cases := outsiderCases(w)
	cases["POST /console/agents"] = []outsiderCase{{path: "/console/agents", form: url.Values{"name": {"Twin"}}}}
	cases["POST /console/inbox/read-all"] = []outsiderCase{{path: "/console/inbox/read-all"}}
	posted := 0
	for _, r := range s.consoleRoutes() {
		if !strings.HasPrefix(r, "POST ") || r == "POST /console/logout" {
			continue
		}
		for _, oc := range cases[r] {
			form := url.Values{"requestId": {store.NewUUID()}}
			for k, v := range oc.form {
				form[k] = v
			}
			p.post(oc.path, form)
			once := s.snapshot()
			status, _ := p.post(oc.path, form)
			posted++
			assert.Less(t, status, 500, oc.path)
			assert.Equal(t, once, s.snapshot(), "%s: the second post changed something", oc.path)
		}
	}
	require.Greater(t, posted, 15)
}
