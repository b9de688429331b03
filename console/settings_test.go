package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// createProject makes a public project with the admin agent and returns its uuid.
func (s *stack) createProject(name string) string {
	s.t.Helper()
	out := s.call(s.connect(s.adminKey), "chorus_admin_create_project", map[string]any{"name": name})
	id, _ := out["uuid"].(string)
	require.NotEmpty(s.t, id, "project uuid in %v", out)
	return id
}

// projectAs is the project as the admin sees it.
func (s *stack) projectAs(u *store.User, id string) *store.ProjectView {
	s.t.Helper()
	pv, err := s.st.GetProject(context.Background(), store.Caller{CompanyUUID: s.company, AgentUUID: u.UUID, OwnerUUID: u.UUID,
		ActorType: "user"}, id)
	require.NoError(s.t, err)
	return pv
}

// The admin makes a project private and adds a viewer; a negative claim TTL is refused beside its
// field; the viewer sees the project and its settings but every change is refused; a person
// outside the private project gets "Project not found".
func TestSettingsVisibilityMembersAndClaimTTL(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	id := s.createProject("Apollo")
	vic := s.user("vic@example.com", store.RoleMember)
	otto := s.user("otto@example.com", store.RoleMember)

	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/projects/" + id + "/settings")
	require.Contains(t, b.page(), "Settings of Apollo")
	b.fill("#visibility", "private")
	b.click("#save-visibility")
	b.waitText("Confirm to apply it")
	confirm := b.text("#confirm-visibility")
	assert.Contains(t, confirm, "0 person(s) gain access, 2 lose some", "vic and otto would lose access")
	assert.Contains(t, confirm, "vic@example.com")
	assert.Equal(t, "public", s.projectAs(s.admin, id).Visibility, "the preview changed nothing")
	b.click("#confirm")
	b.waitText("The project is now private.")
	assert.Equal(t, "private", s.projectAs(s.admin, id).Visibility)

	b.fill("#email", "VIC@example.com")
	b.fill("#role", "viewer")
	b.click("#add")
	b.waitText("is now viewer of the project")
	members, err := s.st.ListProjectMembers(ctx, id)
	require.NoError(t, err)
	roles := map[string]string{}
	for _, m := range members {
		roles[m.UserUUID] = m.Role
	}
	assert.Equal(t, "viewer", roles[vic.UUID])

	b.fill("#email", "nobody@example.com")
	b.click("#add")
	b.waitText("no person of this company has the e-mail")
	assert.Contains(t, b.text("#email-error"), "email: no person of this company")

	b.fill("#claimTtlSeconds", "-5")
	b.click("#save-ttl")
	b.waitText("claimTtlSeconds: must be between 0")
	assert.Contains(t, b.text("#claimTtlSeconds-error"), "claimTtlSeconds: must be between 0")
	assert.Nil(t, s.projectAs(s.admin, id).ClaimTTLSeconds, "a refused TTL changed nothing")
	b.fill("#claimTtlSeconds", "1800")
	b.click("#save-ttl")
	b.waitText("lapse after 1800 s")
	require.NotNil(t, s.projectAs(s.admin, id).ClaimTTLSeconds)
	assert.EqualValues(t, 1800, *s.projectAs(s.admin, id).ClaimTTLSeconds)

	v := s.newBrowser()
	v.signIn(s.link(vic))
	v.waitText("Apollo")
	v.open("/console/projects/" + id + "/settings")
	assert.Contains(t, v.text("#access"), "viewer")
	v.fill("#claimTtlSeconds", "60")
	v.click("#save-ttl")
	v.waitText("Only project admins can manage this project")
	assert.EqualValues(t, 1800, *s.projectAs(s.admin, id).ClaimTTLSeconds, "the viewer's post changed nothing")
	v.fill("#visibility", "public")
	v.click("#save-visibility")
	v.waitText("Only project admins can manage this project")
	assert.Equal(t, "private", s.projectAs(s.admin, id).Visibility)
	v.click("#members tr[data-user='" + vic.UUID + "'] button.remove-member")
	v.waitText("Only project admins can manage this project")
	members, err = s.st.ListProjectMembers(ctx, id)
	require.NoError(t, err)
	assert.Len(t, members, len(roles), "the viewer removed nobody")

	c, _ := s.httpSignIn(otto)
	res, err := c.Get(s.url + "/console/projects/" + id + "/settings")
	require.NoError(t, err)
	body := readAll(t, res)
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Contains(t, body, "Project not found")
	assert.NotContains(t, body, "Apollo")
	csrf := formValue(body, "_csrf")
	for path, form := range map[string]url.Values{
		"/visibility": {"visibility": {"public"}, "token": {"cft_0000"}},
		"/claim-ttl":  {"claimTtlSeconds": {"5"}},
		"/members":    {"email": {"otto@example.com"}, "role": {"admin"}},
	} {
		form.Set("_csrf", csrf)
		res, err := c.PostForm(s.url+"/console/projects/"+id+"/settings"+path, form)
		require.NoError(t, err)
		body := readAll(t, res)
		assert.Equal(t, http.StatusNotFound, res.StatusCode, path)
		assert.Contains(t, body, "Project not found", path)
	}
	pv := s.projectAs(s.admin, id)
	assert.Equal(t, "private", pv.Visibility)
	assert.EqualValues(t, 1800, *pv.ClaimTTLSeconds)
	members, err = s.st.ListProjectMembers(ctx, id)
	require.NoError(t, err)
	for _, m := range members {
		assert.NotEqual(t, otto.UUID, m.UserUUID, "the outsider added nobody")
	}
}

// A member's role changes and the member is removed; the last admin cannot be removed, with
// the use case's text.
func TestSettingsChangeAndRemoveMember(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	id := s.createProject("Gemini")
	vic := s.user("vic@example.com", store.RoleMember)
	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/projects/" + id + "/settings")
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	csrf := formValue(body, "_csrf")
	post := func(path string, form url.Values) (int, string) {
		form.Set("_csrf", csrf)
		res, err := c.PostForm(s.url+"/console/projects/"+id+"/settings"+path, form)
		require.NoError(t, err)
		return res.StatusCode, readAll(t, res)
	}
	status, body := post("/visibility", url.Values{"visibility": {"private"}})
	require.Equal(t, http.StatusOK, status)
	token := formValue(body, "token")
	require.NotEmpty(t, token, "the preview asks for confirmation")
	status, _ = post("/members", url.Values{"email": {*vic.Email}, "role": {"editor"}})
	require.Equal(t, http.StatusOK, status)
	status, body = post("/visibility", url.Values{"visibility": {"private"}, "token": {token}})
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body, "Confirmation token is stale", "access changed since the preview")
	assert.Equal(t, "public", s.projectAs(s.admin, id).Visibility, "a stale confirmation changed nothing")

	status, body = post("/members/"+vic.UUID, url.Values{"role": {"owner"}})
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body, "role must be viewer, editor or admin")
	status, _ = post("/members/"+vic.UUID, url.Values{"role": {"admin"}})
	require.Equal(t, http.StatusOK, status)
	f, err := s.st.ListProjectMembers(ctx, id)
	require.NoError(t, err)
	found := false
	for _, m := range f {
		found = found || (m.UserUUID == vic.UUID && m.Role == "admin")
	}
	assert.True(t, found, "vic is admin now")

	status, body = post("/members/"+vic.UUID+"/remove", url.Values{})
	require.Equal(t, http.StatusOK, status, body)
	status, body = post("/members/"+s.admin.UUID+"/remove", url.Values{})
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body, "Cannot take away the last admin role of this project")
}
