package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// A project admin adds a webhook in the settings (its secret on the answer, once), sees it
// listed without the secret, has a private-range URL refused beside the url field, reads its
// deliveries and redelivers a dead one; a member who is not admin sees no webhooks and every
// post of theirs is refused (docs/rules.md §7.5).
func TestSettingsWebhooks(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	id := s.createProject("Apollo")
	ed := s.user("ed@example.com", store.RoleMember)

	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/projects/" + id + "/settings")
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `id="webhooks"`)
	csrf := formValue(body, "_csrf")
	post := func(path string, form url.Values) (int, string) {
		form.Set("_csrf", csrf)
		res, err := c.PostForm(s.url+"/console/projects/"+id+"/settings"+path, form)
		require.NoError(t, err)
		return res.StatusCode, readAll(t, res)
	}

	status, body := post("/webhooks", url.Values{"url": {"http://169.254.169.254/latest/meta-data/"}})
	assert.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Regexp(t, `id="url-error">url: the host &#34;169.254.169.254&#34; is a link-local address`, body)

	status, body = post("/webhooks", url.Values{"url": {"https://93.184.216.34/chorus"}, "kinds": {"task_assigned", "mentioned"}})
	require.Equal(t, http.StatusOK, status, body)
	m := regexp.MustCompile(`<code id="secret">(whsec_[A-Za-z0-9_-]+)</code>`).FindStringSubmatch(body)
	require.Len(t, m, 2, "the secret is shown on the answer")
	assert.Contains(t, body, "shown this once")
	hooks, err := s.st.ProjectWebhooks(ctx, s.company, id)
	require.NoError(t, err)
	require.Len(t, hooks, 1)
	w := hooks[0]
	assert.Equal(t, "task_assigned,mentioned", w.Kinds)

	res, err = c.Get(s.url + "/console/projects/" + id + "/settings")
	require.NoError(t, err)
	body = readAll(t, res)
	assert.Contains(t, body, "https://93.184.216.34/chorus")
	assert.NotContains(t, body, m[1], "the secret is never shown again")

	require.NoError(t, store.InsertNotifications(ctx, s.st.DB, s.company, store.NotifySpec{Seed: store.NewUUID(), ProjectUUID: id,
		Action: "task_assigned", EntityType: "task", EntityUUID: store.NewUUID(), ActorType: "user", ActorUUID: s.admin.UUID}))
	_, err = s.st.SequenceEvents(ctx)
	require.NoError(t, err)
	_, err = s.st.DispatchWebhookEvents(ctx, 10)
	require.NoError(t, err)
	ds, err := s.st.WebhookDeliveries(ctx, w.UUID, "", 10)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.NoError(t, s.st.MarkDeliveryDead(ctx, ds[0].UUID))

	res, err = c.Get(s.url + "/console/projects/" + id + "/settings/webhooks/" + w.UUID + "?state=dead")
	require.NoError(t, err)
	body = readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `data-delivery="`+ds[0].UUID+`"`)
	assert.Contains(t, body, "Redeliver")
	status, body = post("/webhooks/"+w.UUID+"/deliveries/"+ds[0].UUID+"/redeliver", url.Values{"requestId": {store.NewUUID()}})
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "is queued again")
	d, err := s.st.WebhookDeliveryByUUID(ctx, ds[0].UUID)
	require.NoError(t, err)
	assert.Equal(t, store.DeliveryPending, d.State)

	e, _ := s.httpSignIn(ed)
	res, err = e.Get(s.url + "/console/projects/" + id + "/settings")
	require.NoError(t, err)
	body = readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.NotContains(t, body, `id="webhooks"`, "only admins see the webhooks")
	assert.NotContains(t, body, "93.184.216.34")
	ecsrf := formValue(body, "_csrf")
	for path, form := range map[string]url.Values{
		"/webhooks":                       {"url": {"https://93.184.216.34/x"}},
		"/webhooks/" + w.UUID + "/remove": {},
	} {
		form.Set("_csrf", ecsrf)
		res, err := e.PostForm(s.url+"/console/projects/"+id+"/settings"+path, form)
		require.NoError(t, err)
		body := readAll(t, res)
		assert.Contains(t, body, "Only project admins can manage this project", path)
	}
	res, err = e.Get(s.url + "/console/projects/" + id + "/settings/webhooks/" + w.UUID)
	require.NoError(t, err)
	assert.Contains(t, readAll(t, res), "Only project admins can manage this project")

	status, body = post("/webhooks/"+w.UUID+"/remove", url.Values{})
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "removed, with its deliveries")
	hooks, err = s.st.ProjectWebhooks(ctx, s.company, id)
	require.NoError(t, err)
	assert.Empty(t, hooks)
}
