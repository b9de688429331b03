package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
)

// A project's settings (issue 22): visibility, members and their roles, claim time to live, and
// (another area's) the human-gate policy. Every change runs the use case the MCP tools and the
// operator commands run (app.SetProjectVisibility, GrantProjectRole, RevokeProjectRole,
// SetProjectClaimTTL) as the person: a viewer reads the page and every change is refused with
// the use case's text; a person who cannot see the project gets "Project not found".

func (c *Console) settingsRoutes(g *echo.Group) {
	g.GET("/projects/:uuid/settings", c.settingsPage)
	g.POST("/projects/:uuid/settings/visibility", c.setVisibility)
	g.POST("/projects/:uuid/settings/claim-ttl", c.setClaimTTL)
	g.POST("/projects/:uuid/settings/members", c.addMember)
	g.POST("/projects/:uuid/settings/members/:user", c.changeMember)
	g.POST("/projects/:uuid/settings/members/:user/remove", c.removeMember)
	c.webhookRoutes(g) // webhooks.go
}

// settingsPath is a project's settings page.
func settingsPath(projectUUID string) string { return Path + "/projects/" + projectUUID + "/settings" }

func (c *Console) settingsPage(ctx echo.Context) error {
	return c.showSettings(ctx, http.StatusOK, page{}, map[string]string{}, nil)
}

// showSettings draws the settings page with p's error and fields; form holds inputs to show
// again after a refusal; confirm, when set, is a visibility change waiting for confirmation.
func (c *Console) showSettings(ctx echo.Context, status int, p page, form map[string]string, confirm *app.VisibilityImpact) error {
	return c.showSettingsWith(ctx, status, p, form, confirm, nil)
}

// showSettingsWith is showSettings with the webhook just added and its secret, shown once.
func (c *Console) showSettingsWith(ctx echo.Context, status int, p page, form map[string]string, confirm *app.VisibilityImpact,
	added *webhooksView) error {
	r := c.request(ctx)
	pv, err := c.app.GetProject(ctxOf(ctx), r, ctx.Param("uuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	_, members, err := c.app.ProjectMembers(ctxOf(ctx), r.Agent(), pv.UUID)
	if err != nil {
		return c.failure(ctx, err)
	}
	ttl := ""
	if pv.ClaimTTLSeconds != nil {
		ttl = strconv.FormatInt(*pv.ClaimTTLSeconds, 10)
	}
	if v, ok := form["claimTtlSeconds"]; ok {
		ttl = v
	}
	gates, err := c.gatePolicyView(ctx, pv.UUID)
	if err != nil {
		return c.failure(ctx, err)
	}
	if v, ok := form["expireAfterSeconds"]; ok {
		gates.Expire = v
	}
	hooks, err := c.webhooksOf(ctx, pv)
	if err != nil {
		return c.failure(ctx, err)
	}
	if hooks != nil && added != nil {
		hooks.Added, hooks.Secret = added.Added, added.Secret
	}
	p.Title, p.Nav = "Settings of "+pv.Name, "projects"
	p.Data = map[string]any{"Project": pv, "Level": pv.Level().String(), "Members": members, "ClaimTTL": ttl,
		"Form": form, "Roles": []string{"viewer", "editor", "admin"}, "Confirm": confirm, "Gates": gates, "Webhooks": hooks}
	return c.render(ctx, status, "settings", p)
}

// settingsDone answers a settings post: back to the page with a notice, or the page again with
// the refusal beside the field it names (fields), or a failure page (not found, an outage).
func (c *Console) settingsDone(ctx echo.Context, err error, notice string, form map[string]string, fields ...string) error {
	if err == nil {
		return c.redirect(ctx, settingsPath(ctx.Param("uuid")), notice)
	}
	if p, ok := refused(err, fields...); ok {
		return c.showSettings(ctx, statusOfErr(err), p, form, nil)
	}
	return c.failure(ctx, err)
}

// setVisibility makes the project public or private (admin on the project) in two steps, as
// every change of who may see what (docs/rules.md §6.5): the first post previews the change and
// asks to confirm it, listing who gains or loses access; the confirmation carries the preview's
// token and applies it, unless access changed in between (then it is refused as stale).
func (c *Console) setVisibility(ctx echo.Context) error {
	v := app.VisibilityChange{ProjectUUID: ctx.Param("uuid"), Visibility: ctx.FormValue("visibility"),
		Token: ctx.FormValue("token")}
	v.Preview = v.Token == ""
	p, impact, err := c.app.SetProjectVisibility(ctxOf(ctx), c.request(ctx).Agent(), v)
	switch {
	case err != nil:
		return c.settingsDone(ctx, err, "", nil, "visibility")
	case v.Preview && impact.RequiresConfirmation:
		return c.showSettings(ctx, http.StatusOK, page{}, nil, impact)
	case v.Preview:
		return c.redirect(ctx, settingsPath(v.ProjectUUID), "The project is "+impact.Visibility+" already; nothing changed.")
	}
	return c.redirect(ctx, settingsPath(v.ProjectUUID), "The project is now "+p.Visibility+".")
}

// setClaimTTL sets the claim time to live in seconds; empty or 0 turns leases off.
func (c *Console) setClaimTTL(ctx echo.Context) error {
	raw := strings.TrimSpace(ctx.FormValue("claimTtlSeconds"))
	form := map[string]string{"claimTtlSeconds": raw}
	var seconds int64
	if raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			p := page{Error: "claimTtlSeconds: " + strconv.Quote(raw) + " is not a whole number of seconds; " +
				"give 0 (claims never lapse) to " + strconv.Itoa(app.MaxClaimTTLSeconds) + " (30 days)"}
			p.Fields = map[string]string{"claimTtlSeconds": p.Error}
			return c.showSettings(ctx, http.StatusUnprocessableEntity, p, form, nil)
		}
		seconds = n
	}
	_, err := c.app.SetProjectClaimTTL(ctxOf(ctx), c.request(ctx).Agent(), ctx.Param("uuid"), seconds)
	notice := "Claims made from now on never lapse."
	if seconds > 0 {
		notice = "Claims made from now on lapse after " + strconv.FormatInt(seconds, 10) + " s without a word from their holder."
	}
	return c.settingsDone(ctx, err, notice, form, "claimTtlSeconds")
}

// addMember gives a person of the company, named by e-mail, a role on the project.
func (c *Console) addMember(ctx echo.Context) error {
	email, role := ctx.FormValue("email"), ctx.FormValue("role")
	form := map[string]string{"email": email, "role": role}
	// The project and the right to manage it are checked before the e-mail is looked at: a hidden
	// project is not found, and a person who may not manage it learns nothing of who is in the company.
	_, u, changed, err := c.app.GrantProjectRoleByEmail(ctxOf(ctx), c.request(ctx).Agent(), ctx.Param("uuid"), email, role)
	notice := ""
	if err == nil {
		notice = roleNotice(u.DisplayName(), role, changed)
	}
	return c.settingsDone(ctx, err, notice, form, "email", "role")
}

// changeMember changes a member's role.
func (c *Console) changeMember(ctx echo.Context) error {
	role := ctx.FormValue("role")
	_, u, changed, err := c.app.GrantProjectRole(ctxOf(ctx), c.request(ctx).Agent(), ctx.Param("uuid"), ctx.Param("user"), role)
	notice := ""
	if err == nil {
		notice = roleNotice(u.DisplayName(), role, changed)
	}
	return c.settingsDone(ctx, err, notice, nil, "role")
}

// removeMember takes a member's role on the project away.
func (c *Console) removeMember(ctx echo.Context) error {
	_, u, removed, err := c.app.RevokeProjectRole(ctxOf(ctx), c.request(ctx).Agent(), ctx.Param("uuid"), ctx.Param("user"))
	notice := ""
	if err == nil {
		notice = u.DisplayName() + " had no role on the project; nothing changed."
		if removed {
			notice = u.DisplayName() + " no longer has a role on the project."
		}
	}
	return c.settingsDone(ctx, err, notice, nil)
}

// roleNotice says what a grant did.
func roleNotice(name, role string, changed bool) string {
	if changed {
		return name + " is now " + role + " of the project."
	}
	return name + " is already " + role + " of the project; nothing changed."
}
