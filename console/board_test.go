package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/mcpclient"
	"github.com/chorus-dev/chorus/store"
)

// boardWorld is a private project made by the admin agent: an idea with a proposal and three
// tasks of it (Build depends on Design, Ship on Build), a second idea with no proposal, and a
// chore of no idea.
type boardWorld struct {
	pm                         *mcpclient.Agent
	project, idea, otherIdea   string
	design, build, ship, chore string
}

func newBoardWorld(s *stack) *boardWorld {
	w := &boardWorld{pm: s.connect(s.adminKey)}
	w.project = s.call(w.pm, "chorus_admin_create_project", map[string]any{"name": "Checkout revamp",
		"visibility": "private"})["uuid"].(string)
	w.idea = s.call(w.pm, "chorus_pm_create_idea", map[string]any{"projectUuid": w.project, "title": "One-page checkout"})["uuid"].(string)
	w.otherIdea = s.call(w.pm, "chorus_pm_create_idea", map[string]any{"projectUuid": w.project, "title": "Gift cards"})["uuid"].(string)
	s.call(w.pm, "chorus_claim_idea", map[string]any{"ideaUuid": w.idea})
	s.call(w.pm, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": w.idea, "reason": "clear enough"})
	proposal := s.call(w.pm, "chorus_pm_create_proposal", map[string]any{"projectUuid": w.project, "title": "Checkout plan",
		"inputType": "idea", "inputUuids": []string{w.idea}})["uuid"].(string)
	crit := func(n int) []map[string]any {
		var out []map[string]any
		for i := range n {
			out = append(out, map[string]any{"description": "criterion " + string(rune('A'+i))})
		}
		return out
	}
	created := s.call(w.pm, "chorus_create_tasks", map[string]any{"projectUuid": w.project, "proposalUuid": proposal,
		"tasks": []map[string]any{
			{"title": "Design the API", "draftUuid": "d", "priority": "high", "acceptanceCriteriaItems": crit(3)},
			{"title": "Build the API", "draftUuid": "b", "priority": "medium", "acceptanceCriteriaItems": crit(1),
				"dependsOnDraftUuids": []string{"d"}},
			{"title": "Ship it", "draftUuid": "s", "priority": "low", "acceptanceCriteriaItems": crit(1),
				"dependsOnDraftUuids": []string{"b"}},
		}})
	ids := map[string]string{}
	for _, t := range created["tasks"].([]any) {
		m := t.(map[string]any)
		ids[m["title"].(string)] = m["uuid"].(string)
	}
	w.design, w.build, w.ship = ids["Design the API"], ids["Build the API"], ids["Ship it"]
	chore := s.call(w.pm, "chorus_create_tasks", map[string]any{"projectUuid": w.project, "tasks": []map[string]any{
		{"title": "Rotate the logs", "priority": "low", "acceptanceCriteriaItems": crit(1)}}})
	w.chore = chore["tasks"].([]any)[0].(map[string]any)["uuid"].(string)

	// The admin marks two of Design's three criteria passed.
	task := s.call(w.pm, "chorus_get_task", map[string]any{"taskUuid": w.design})
	var marks []map[string]any
	for _, c := range task["acceptanceCriteriaItems"].([]any)[:2] {
		marks = append(marks, map[string]any{"uuid": c.(map[string]any)["uuid"], "status": "passed"})
	}
	s.call(w.pm, "chorus_mark_acceptance_criteria", map[string]any{"taskUuid": w.design, "criteria": marks})
	return w
}

// boardColumns maps each card on the page (task uuid) to its column's status.
func boardColumns(b *browser) map[string]string {
	b.t.Helper()
	return eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll(".task-card")]`+
		`.map(c => [c.dataset.task, c.closest(".column").dataset.status]))`)
}

// boardCardText is the visible text of a task's card.
func boardCardText(b *browser, task string) string {
	b.t.Helper()
	return b.text(`.task-card[data-task="` + task + `"]`)
}

// A person opens the board an agent filled: the cards stand in their status's column with
// their priority, assignee, blockers and criteria progress; an agent claims a task and starts
// it, and the reloaded board shows it move; the idea filter keeps the idea's tasks and leads
// to its dependency graph.
func TestBoardFollowsTheAgents(t *testing.T) {
	s := newStack(t, "sqlite")
	w := newBoardWorld(s)

	b := s.newBrowser()
	b.signIn(s.link(s.admin))
	b.open("/console/projects/" + w.project)
	b.waitText("Checkout revamp")
	require.Equal(t, "private", b.text("#visibility"))
	require.Equal(t, "admin", b.text("#access"))
	require.Equal(t, "10", eval[string](b, `document.body.dataset.refresh`), "the board reloads itself")
	require.Equal(t, map[string]string{w.design: "open", w.build: "open", w.ship: "open", w.chore: "open"}, boardColumns(b))
	require.Equal(t, []string{"open", "assigned", "in_progress", "to_verify", "done", "closed"},
		eval[[]string](b, `[...document.querySelectorAll(".column")].map(c => c.dataset.status)`), "every status, in lifecycle order")

	design := boardCardText(b, w.design)
	require.Contains(t, design, "high")
	require.Contains(t, design, "unassigned")
	require.Contains(t, design, "2/3 passed")
	require.NotContains(t, design, "Blocked by")
	require.Equal(t, 2.0, eval[float64](b, `document.querySelector('.task-card[data-task="`+w.design+`"] progress').value`))
	require.Contains(t, boardCardText(b, w.build), "Blocked by Design the API")
	require.Contains(t, boardCardText(b, w.ship), "Blocked by Build the API")
	require.Contains(t, boardCardText(b, w.ship), "0/1 passed")

	// The board follows the project's event stream (and does not poll while it does). An agent
	// claims Design, then starts it: the open board moves the card by itself each time.
	b.waitFor(`document.body.dataset.live === "on"`)
	require.Equal(t, w.project, eval[string](b, `document.body.dataset.follow`))
	dev := s.agent("Dev Bot", s.admin, "developer_agent")
	s.call(dev, "chorus_claim_task", map[string]any{"taskUuid": w.design})
	b.waitFor(`document.querySelector('#col-assigned .task-card[data-task="` + w.design + `"]') !== null`)
	require.Equal(t, "assigned", boardColumns(b)[w.design])
	require.Contains(t, boardCardText(b, w.design), "Dev Bot")
	b.waitFor(`document.body.dataset.live === "on"`)
	s.call(dev, "chorus_update_task", map[string]any{"taskUuid": w.design, "status": "in_progress"})
	b.waitFor(`document.querySelector('#col-in_progress .task-card[data-task="` + w.design + `"]') !== null`)
	require.Equal(t, "in_progress", boardColumns(b)[w.design])
	require.Contains(t, boardCardText(b, w.design), "Dev Bot")

	// The idea filter: the idea's three tasks, not the chore; the other idea has none.
	b.fill("#idea", w.idea)
	b.click("#filter")
	require.Contains(t, b.location(), "idea="+w.idea)
	require.Equal(t, map[string]string{w.design: "in_progress", w.build: "open", w.ship: "open"}, boardColumns(b))
	b.click("#graph-link")
	b.waitText("Dependencies of “One-page checkout”")
	layers := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll("svg .g-node")].map(n => [n.dataset.task, n.dataset.layer]))`)
	require.Equal(t, map[string]string{w.design: "0", w.build: "1", w.ship: "2"}, layers, "layers by dependency depth")
	require.Equal(t, 2, eval[int](b, `document.querySelectorAll("svg .g-edge").length`), "one arrow per dependency")
	require.Equal(t, 2, eval[int](b, `document.querySelectorAll("svg .g-edge.g-blocking").length`), "both still block")
	require.Equal(t, 1, eval[int](b, `document.querySelectorAll("svg .g-in_progress").length`), "colored by status")

	// A card leads to its task's page.
	b.open("/console/projects/" + w.project)
	b.click(`.task-card[data-task="` + w.build + `"] .card-title`)
	require.Contains(t, b.location(), "/console/tasks/"+w.build)
	b.waitText("Build the API")

	b.open("/console/projects/" + w.project + "?idea=" + w.otherIdea)
	b.waitText("No task comes from this idea yet")
	require.Empty(t, boardColumns(b))
}

// A person outside a private project finds neither its board nor its ideas' graphs: 404 with
// the text the tool gives; a viewer reads the board.
func TestBoardAccess(t *testing.T) {
	s := newStack(t, "sqlite")
	w := newBoardWorld(s)
	ctx := context.Background()

	bob := s.user("bob@example.com", store.RoleMember)
	bobAgent := s.agent("Bob Bot", bob, "admin_agent")
	err := bobAgent.Call(ctx, "chorus_get_project", map[string]any{"projectUuid": w.project}, nil)
	require.ErrorContains(t, err, "Project not found", "the tool's text")
	c, _ := s.httpSignIn(bob)
	for path, text := range map[string]string{
		"/console/projects/" + w.project:                         "Project not found",
		"/console/projects/" + w.project + "?idea=" + w.idea:     "Project not found",
		"/console/ideas/" + w.idea + "/graph":                    "Idea not found",
		"/console/projects/" + store.NewUUID():                   "Project not found",
		"/console/projects/not-a-uuid":                           "Project not found",
		"/console/projects/" + w.project + "?status=open&page=2": "Project not found",
	} {
		res, err := c.Get(s.url + path)
		require.NoError(t, err)
		body := readAll(t, res)
		require.Equal(t, http.StatusNotFound, res.StatusCode, path)
		require.Contains(t, body, text, path)
		require.NotContains(t, body, "Design the API", path)
		require.NotContains(t, body, "Checkout revamp", path)
	}

	carol := s.user("carol@example.com", store.RoleMember)
	s.call(w.pm, "chorus_admin_add_project_member", map[string]any{"projectUuid": w.project, "userUuid": carol.UUID, "role": "viewer"})
	c, _ = s.httpSignIn(carol)
	res, err := c.Get(s.url + "/console/projects/" + w.project)
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, "Design the API")
	require.Contains(t, body, `<strong id="access">viewer</strong>`)
	res, err = c.Get(s.url + "/console/ideas/" + w.idea + "/graph")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, readAll(t, res), "Build the API")

	// An idea of another project is not this board's filter.
	other := s.call(w.pm, "chorus_admin_create_project", map[string]any{"name": "Elsewhere"})["uuid"].(string)
	res, err = c.Get(s.url + "/console/projects/" + other + "?idea=" + w.idea)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, readAll(t, res), "Idea not found")
}

// The columns are paged: a column shows at most 50 cards, says how many it holds and links to
// the next page; the page lists only what it shows.
func TestBoardPagesColumns(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	pm := s.connect(s.adminKey)
	project := s.call(pm, "chorus_admin_create_project", map[string]any{"name": "Big"})["uuid"].(string)
	agents, err := s.st.ListAgents(ctx, s.company)
	require.NoError(t, err)
	// A project no command touches, seeded straight into the tables (store.ReadSeed): 130 tasks,
	// 65 open, 52 done, 13 closed (store.SeedStatus).
	_, err = s.st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: s.company, ProjectUUID: project,
		CreatedByUUID: agents[0].UUID, Count: 130})
	require.NoError(t, err)

	c, _ := s.httpSignIn(s.admin)
	get := func(query string) string {
		res, err := c.Get(s.url + "/console/projects/" + project + query)
		require.NoError(t, err)
		body := readAll(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, query)
		return body
	}
	cards := func(body, status string) int {
		col := body[strings.Index(body, `data-status="`+status+`"`):]
		col = col[:strings.Index(col, "</section>")]
		return strings.Count(col, `class="card task-card"`)
	}
	body := get("")
	require.Equal(t, 50, cards(body, "open"))
	require.Equal(t, 50, cards(body, "done"))
	require.Equal(t, 13, cards(body, "closed"))
	require.Equal(t, 113, strings.Count(body, `class="card task-card"`), "never more than it shows")
	require.Contains(t, body, "/console/projects/"+project+"?page=2&amp;status=open")
	require.Contains(t, body, "More (65 in all)")

	body = get("?status=open&page=2")
	require.Equal(t, 15, cards(body, "open"))
	require.Contains(t, body, "51–65 of 65")
	require.Equal(t, 50, cards(body, "done"), "the other columns stay on their first page")
	require.Contains(t, body, "More (52 in all)")
	require.NotContains(t, body, "More (65 in all)")

	body = get("?status=open&page=9")
	require.Zero(t, cards(body, "open"), "past the end: an empty column with a way back")
	require.Contains(t, body, "Previous 50")
	require.Contains(t, body, "/console/projects/"+project+"?page=2&amp;status=open", "back to the last page with cards")
	body = get("?status=nonsense&page=2")
	require.Equal(t, 50, cards(body, "open"), "an unknown status pages nothing")
}

// An idea with more tasks than the graph draws: the graph draws app.GraphTaskLimit of them and
// says how many there are; the board filtered by the idea counts them all and pages them.
func TestBoardGraphLimit(t *testing.T) {
	s := newStack(t, "sqlite")
	ctx := context.Background()
	pm := s.connect(s.adminKey)
	project := s.call(pm, "chorus_admin_create_project", map[string]any{"name": "Big"})["uuid"].(string)
	agents, err := s.st.ListAgents(ctx, s.company)
	require.NoError(t, err)
	tasks, err := s.st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: s.company, ProjectUUID: project,
		CreatedByUUID: agents[0].UUID, Count: 260})
	require.NoError(t, err)
	idea, _ := seedIdeaTasks(t, s.st, s.company, project, agents[0].UUID, tasks[:250])

	c, _ := s.httpSignIn(s.admin)
	res, err := c.Get(s.url + "/console/ideas/" + idea + "/graph")
	require.NoError(t, err)
	body := readAll(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, app.GraphTaskLimit, strings.Count(body, `<g class="g-node`))
	require.Contains(t, body, "This idea has 250 tasks; the graph draws the first 200")

	res, err = c.Get(s.url + "/console/projects/" + project + "?idea=" + idea)
	require.NoError(t, err)
	body = readAll(t, res)
	require.Contains(t, body, "250 tasks of this idea")
	require.Contains(t, body, "/console/projects/"+project+"?idea="+idea+"&amp;page=2&amp;status=open")
}
