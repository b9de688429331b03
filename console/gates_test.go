package console_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// A gate: the project's settings page sets which commands wait for a person; an agent's approve
// of a proposal answers that it waits and changes nothing (asked again, the same gate); the
// person approves it on the Gates page; the proposal is approved in their name, its tasks exist,
// and the agent is told once. Refusing needs a note, shown beside the field, and changes nothing;
// a decided gate cannot be decided again.
func TestGateAgentApproveWaitsForAPerson(t *testing.T) {
	s := newStack(t, "sqlite")
	d := s.fillDemo()
	b := s.newBrowser()
	b.signIn(s.link(s.admin))

	// The demo's project already holds approving a proposal (and the admin agent's approve of
	// "Search v2" waits); the person adds verifying a task in the settings form.
	b.open("/console/projects/" + d.project + "/settings")
	require.True(t, eval[bool](b, `document.querySelector('#gates-form input[value="approve_proposal"]').checked`))
	b.do(chromedp.Click(`#gates-form input[value="verify_task"]`)) // a checkbox: no page follows
	b.click("#gates-form button[type=submit]")
	b.waitText("Human gates saved.")
	policy, err := s.app.GatePolicy(context.Background(), app.Request{Who: app.UserPrincipal(s.admin)}, d.project)
	require.NoError(t, err)
	require.Equal(t, []string{vocab.GateApproveProposal, vocab.GateVerifyTask}, policy.GatedCommands())

	// The agent calling approve again answers with the same gate: one request, still waiting.
	admin := s.connect(s.adminKey)
	held := s.call(admin, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": d.proposal})
	gate := str(held, "awaitingHuman.gateUuid")
	var gates int
	require.NoError(t, s.st.DB.NewSelect().Table("gate_requests").ColumnExpr("count(*)").Scan(context.Background(), &gates))
	require.Equal(t, 1, gates)
	require.Equal(t, "awaiting", str(held, "awaitingHuman.status"))
	require.Equal(t, "pending", str(s.call(admin, "chorus_get_proposal", map[string]any{"proposalUuid": d.proposal}), "status"),
		"an agent's approve waits: nothing changed")

	b.open("/console/gates")
	b.waitText("Search v2")
	b.click("#gate-" + gate + " form.refuse button") // no note
	b.waitFor(`document.querySelector("#gate-` + gate + ` .field-error") !== null`)
	require.Contains(t, b.text("#gate-"+gate+" .field-error"), "note", "the use case's refusal, beside the note field")
	require.Equal(t, "pending", str(s.call(admin, "chorus_get_proposal", map[string]any{"proposalUuid": d.proposal}), "status"))
	b.click("#gate-" + gate + " button.approve")
	b.waitText("is done in your name")

	got := s.call(admin, "chorus_get_proposal", map[string]any{"proposalUuid": d.proposal})
	require.Equal(t, "approved", str(got, "status"))
	require.Equal(t, "user", str(got, "review.reviewedBy.type"))
	require.Equal(t, s.admin.UUID, str(got, "review.reviewedBy.uuid"))
	tasks := s.call(admin, "chorus_list_tasks", map[string]any{"projectUuid": d.project})
	require.Contains(t, titles(tasks), "Index titles", "the approval made the proposal's task")
	var applied int
	require.NoError(t, s.st.DB.NewSelect().Table("notifications").ColumnExpr("count(*)").
		Where("action = ?", "gate_applied").Scan(context.Background(), &applied))
	require.Equal(t, 1, applied, "the requesting agent is told once")

	// A second decision of the same gate is refused and changes nothing.
	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/gates")
	require.NoError(t, err)
	csrf := formValue(readAll(t, res), "_csrf")
	res, err = c.PostForm(s.url+"/console/gates/"+gate+"/refuse", url.Values{"_csrf": {csrf},
		"requestId": {store.NewUUID()}, "note": {"too late"}})
	require.NoError(t, err)
	require.Contains(t, readAll(t, res), "already decided")
	require.Equal(t, "approved", str(s.call(admin, "chorus_get_proposal", map[string]any{"proposalUuid": d.proposal}), "status"))
}

// titles are the titles of a chorus_list_tasks result.
func titles(res map[string]any) []string {
	var out []string
	items, _ := res["tasks"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if t, ok := m["title"].(string); ok {
				out = append(out, t)
			}
		}
	}
	return out
}
