package console

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A project's webhooks in its settings (docs/rules.md §7.5), for project admins: add one (its
// secret shown on the answer to the post, once, never stored in a cookie or a URL), list and
// remove them, read a webhook's deliveries and redeliver a dead or delivered one. Each action
// runs the use case chorus webhook runs (app.AddWebhook, ListWebhooks, RemoveWebhook,
// ListDeliveries, Redeliver) as the person.

func (c *Console) webhookRoutes(g *echo.Group) {
	g.POST("/projects/:uuid/settings/webhooks", c.addWebhook)
	g.POST("/projects/:uuid/settings/webhooks/:webhook/remove", c.removeWebhook)
	g.GET("/projects/:uuid/settings/webhooks/:webhook", c.webhookPage)
	g.POST("/projects/:uuid/settings/webhooks/:webhook/deliveries/:delivery/redeliver", c.redeliver)
}

// webhooksView is the settings page's Webhooks section: the project's webhooks, the event kinds
// to choose from, and the secret of the one just added.
type webhooksView struct {
	Hooks  []store.Webhook
	Kinds  []string
	Added  *store.Webhook
	Secret string
}

// webhooksOf is the section for an admin of the project, nil for anyone else (they see nothing
// of its webhooks).
func (c *Console) webhooksOf(ctx echo.Context, pv *store.ProjectView) (*webhooksView, error) {
	if pv.Level() < store.AccessAdmin {
		return nil, nil
	}
	hooks, err := c.app.ListWebhooks(ctxOf(ctx), c.request(ctx), pv.UUID)
	if err != nil {
		return nil, err
	}
	return &webhooksView{Hooks: hooks, Kinds: vocab.EventKinds}, nil
}

// addWebhook adds a webhook and answers with the settings page showing its secret this once (no
// redirect: the secret must not travel in a cookie or a URL).
func (c *Console) addWebhook(ctx echo.Context) error {
	form := map[string]string{"url": ctx.FormValue("url")}
	params, _ := ctx.FormParams()
	w, secret, err := c.app.AddWebhook(ctxOf(ctx), c.request(ctx), app.NewWebhook{ProjectUUID: ctx.Param("uuid"),
		URL: ctx.FormValue("url"), Kinds: params["kinds"]})
	if err != nil {
		return c.settingsDone(ctx, err, "", form, "url", "kinds")
	}
	if secret == "" { // a double submit: the first answer showed the secret
		return c.redirect(ctx, settingsPath(w.ProjectUUID), "This webhook was added by your first submit, whose answer showed "+
			"its secret; it is not shown again.")
	}
	p := page{Notice: "Webhook added. Copy its secret now: it is shown this once."}
	return c.showSettingsWith(ctx, http.StatusOK, p, map[string]string{}, nil, &webhooksView{Added: w, Secret: secret})
}

// removeWebhook removes a webhook and its deliveries.
func (c *Console) removeWebhook(ctx echo.Context) error {
	w, err := c.app.RemoveWebhook(ctxOf(ctx), c.request(ctx), ctx.Param("webhook"))
	notice := ""
	if err == nil {
		notice = "Webhook to " + w.URL + " removed, with its deliveries."
	}
	return c.settingsDone(ctx, err, notice, nil)
}

// webhookPath is a webhook's deliveries page.
func webhookPath(projectUUID, webhookUUID string) string {
	return settingsPath(projectUUID) + "/webhooks/" + webhookUUID
}

// webhookPage lists a webhook's deliveries, of one state with ?state=.
func (c *Console) webhookPage(ctx echo.Context) error {
	state := strings.TrimSpace(ctx.QueryParam("state"))
	r := c.request(ctx)
	pv, err := c.app.GetProject(ctxOf(ctx), r, ctx.Param("uuid"))
	if err != nil {
		return c.failure(ctx, err)
	}
	w, ds, err := c.app.ListDeliveries(ctxOf(ctx), r, ctx.Param("webhook"), state)
	if err != nil {
		return c.failure(ctx, err)
	}
	if w.ProjectUUID != pv.UUID {
		return c.failure(ctx, store.NotFound("Webhook"))
	}
	p := page{Title: "Webhook deliveries", Nav: "projects", Data: map[string]any{"Project": pv, "Webhook": w,
		"Deliveries": ds, "State": state, "States": store.DeliveryStates}}
	return c.render(ctx, http.StatusOK, "webhook", p)
}

// redeliver queues a dead or delivered delivery again.
func (c *Console) redeliver(ctx echo.Context) error {
	d, err := c.app.Redeliver(ctxOf(ctx), c.request(ctx), ctx.Param("delivery"))
	if err != nil {
		if p, ok := refused(err); ok {
			return c.redirect(ctx, webhookPath(ctx.Param("uuid"), ctx.Param("webhook")), p.Error)
		}
		return c.failure(ctx, err)
	}
	return c.redirect(ctx, webhookPath(ctx.Param("uuid"), d.WebhookUUID),
		"Delivery "+d.UUID+" is queued again; a worker sends it shortly, with the same Chorus-Webhook-Id.")
}
