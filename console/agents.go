package console

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Agents and keys (issue 22): the agents a person manages with their presets, extra bits and last
// activity; create an agent, issue a key (shown once, on the page that answers the post), revoke
// a key. Every action runs the app use case the operator commands run (app.CreateAgent,
// IssueKey, RevokeKey), with the person's company role deciding (docs/rules.md "People in the
// console").

// agentsPerPage bounds the agents list.
const agentsPerPage = 50

// agentFields are the create form's inputs, as the use case's refusals name them.
var agentFields = []string{"name", "presets", "permissions", "persona"}

func (c *Console) agentRoutes(g *echo.Group) {
	g.GET("/agents", c.agentsPage)
	g.POST("/agents", c.createAgent)
	g.GET("/agents/:uuid", c.agentPage)
	g.POST("/agents/:uuid/keys", c.issueKey)
	g.POST("/agents/:uuid/keys/:key/revoke", c.revokeKey)
}

// agentForm is what the create form shows again after a refusal.
type agentForm struct {
	Name        string
	Presets     map[string]bool
	Permissions string
	Persona     string
}

// agentsPage lists one page of the agents the person manages, with the create form.
func (c *Console) agentsPage(ctx echo.Context) error {
	return c.showAgents(ctx, http.StatusOK, page{}, agentForm{Presets: map[string]bool{}})
}

// showAgents draws the agents page with p's error and fields and the form's values.
func (c *Console) showAgents(ctx echo.Context, status int, p page, form agentForm) error {
	n := pageNumber(ctx)
	agents, total, err := c.app.ListAgents(ctxOf(ctx), c.request(ctx).Agent(), agentsPerPage, (n-1)*agentsPerPage)
	if err != nil {
		return c.failure(ctx, err)
	}
	p.Title, p.Nav = "Agents", "agents"
	p.Data = map[string]any{"Agents": agents, "Total": total, "Page": n, "More": n*agentsPerPage < total,
		"Presets": perm.PresetNames, "Form": form, "All": c.who(ctx).user.Role == store.RoleAdmin}
	return c.render(ctx, status, "agents", p)
}

// createAgent creates an agent owned by the person and answers with its page, which shows the
// new key this once. A double submit (the same requestId) names the same agent: the second
// answer shows the agent without a key.
func (c *Console) createAgent(ctx echo.Context) error {
	form, err := ctx.FormParams()
	if err != nil {
		return c.failure(ctx, err)
	}
	f := agentForm{Name: form.Get("name"), Presets: map[string]bool{}, Permissions: form.Get("permissions"),
		Persona: form.Get("persona")}
	for _, p := range form["presets"] {
		f.Presets[p] = true
	}
	r := c.request(ctx)
	ag, key, created, err := c.app.CreateAgent(ctxOf(ctx), r.Agent(), app.NewAgent{UUID: r.NewID("agent"), Name: f.Name,
		Presets: form["presets"], Permissions: splitBits(f.Permissions), Persona: f.Persona})
	if err != nil {
		if p, ok := refused(err, agentFields...); ok {
			return c.showAgents(ctx, statusOfErr(err), p, f)
		}
		return c.failure(ctx, err)
	}
	p := page{Notice: "Agent " + ag.Name + " created."}
	if !created {
		p.Notice = "This form was already submitted: agent " + ag.Name + " exists, and its key was shown then. " +
			"Issue another key below if it was lost."
	}
	return c.showAgent(ctx, http.StatusOK, ag.UUID, p, key)
}

// splitBits reads the extra bits field: "resource:action" separated by spaces or commas.
func splitBits(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
}

// statusOfErr is the HTTP status of a use case's error.
func statusOfErr(err error) int { return statusOf(app.Classify(err)) }

// agentPage shows an agent the person manages: presets, extra bits, effective permissions,
// owner, last activity, its keys (prefixes only) and the forms to issue and revoke keys.
func (c *Console) agentPage(ctx echo.Context) error {
	return c.showAgent(ctx, http.StatusOK, ctx.Param("uuid"), page{}, "")
}

// showAgent draws an agent's page; key is a key just issued (shown this once), or "".
func (c *Console) showAgent(ctx echo.Context, status int, agentUUID string, p page, key string) error {
	d, err := c.app.GetAgent(ctxOf(ctx), c.request(ctx).Agent(), agentUUID)
	if err != nil {
		return c.failure(ctx, err)
	}
	p.Title, p.Nav = "Agent "+d.Agent.Name, "agents"
	p.Data = map[string]any{"Agent": d.Agent, "Owner": d.Owner, "Keys": d.Keys, "NewKey": key,
		"Effective": perm.Effective(d.Agent.Roles, d.Agent.Permissions).Strings(), "Now": store.Now()}
	return c.render(ctx, status, "agent", p)
}

// issueKey issues another key for the agent and answers with its page, the key shown this once.
func (c *Console) issueKey(ctx echo.Context) error {
	r := c.request(ctx)
	k, key, err := c.app.IssueKey(ctxOf(ctx), r.Agent(), ctx.Param("uuid"),
		store.NewKey{UUID: r.NewID("api-key"), Name: strings.TrimSpace(ctx.FormValue("keyName")),
			ReadOnly: ctx.FormValue("readOnly") == "1"})
	if err != nil {
		if p, ok := refused(err, "keyName"); ok {
			return c.showAgent(ctx, statusOfErr(err), ctx.Param("uuid"), p, "")
		}
		return c.failure(ctx, err)
	}
	p := page{Notice: "Key " + k.KeyPrefix + "… issued."}
	if key == "" {
		p.Notice = "This form was already submitted: key " + k.KeyPrefix + "… was issued and shown then. Issue another if it was lost."
	}
	return c.showAgent(ctx, http.StatusOK, k.AgentUUID, p, key)
}

// revokeKey revokes one of the agent's keys: its next call is refused (HTTP 401).
func (c *Console) revokeKey(ctx echo.Context) error {
	m := c.request(ctx).Agent()
	d, err := c.app.GetAgent(ctxOf(ctx), m, ctx.Param("uuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	keyUUID := ctx.Param("key")
	found := false
	for _, k := range d.Keys {
		found = found || k.UUID == keyUUID
	}
	if !found {
		return c.failure(ctx, store.NotFound("API key"))
	}
	k, err := c.app.RevokeKey(ctxOf(ctx), m, keyUUID)
	if err != nil {
		return c.failure(ctx, err)
	}
	return c.redirect(ctx, Path+"/agents/"+d.Agent.UUID, "Key "+k.KeyPrefix+"… revoked: its next call is refused.")
}
