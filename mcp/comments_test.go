package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Comments, mentions, notifications and the activity stream (docs/rules.md §4.15-§4.17, §7),
// black box through the MCP endpoint, on SQLite and PostgreSQL.

// person is an agent made for a test: its uuid and a connected client.
type person struct {
	uuid string
	s    *mcpsdk.ClientSession
}

// member makes an agent with the given presets and owner ("" for none) and connects it.
func (e *env) member(name string, owner string, presets ...string) person {
	e.t.Helper()
	n := store.NewAgent{CompanyUUID: e.company, Name: name, Roles: presets}
	if owner != "" {
		n.OwnerUUID = &owner
	}
	a, key, err := e.st.CreateAgent(context.Background(), n)
	require.NoError(e.t, err)
	return person{uuid: a.UUID, s: e.client(key)}
}

// otherUser makes a second user of the company.
func (e *env) otherUser(email string) string {
	e.t.Helper()
	u, err := e.st.EnsureUser(context.Background(), e.company, email, strings.Split(email, "@")[0])
	require.NoError(e.t, err)
	return u.UUID
}

// grant gives a user a role on a project.
func (e *env) grant(project, user, role string) {
	e.t.Helper()
	now := store.Now()
	_, err := e.st.DB.NewInsert().Model(&store.ProjectMember{UUID: store.NewUUID(), CompanyUUID: e.company, ProjectUUID: project,
		UserUUID: user, Role: role, CreatedAt: now, UpdatedAt: now}).Exec(context.Background())
	require.NoError(e.t, err)
}

// notes returns the notifications addressed to a recipient, oldest first, read straight from
// the database (users cannot read theirs through MCP).
func notes(t testing.TB, e *env, recipientType, recipient string) []store.Notification {
	t.Helper()
	var rows []store.Notification
	require.NoError(t, e.st.DB.NewSelect().Model(&rows).Where("recipient_type = ?", recipientType).
		Where("recipient_uuid = ?", recipient).Order("created_at ASC", "uuid ASC").Scan(context.Background()))
	return rows
}

// actions lists the actions of notifications, in order.
func actions(ns []store.Notification) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Action
	}
	return out
}

func countRows(t testing.TB, e *env, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.st.DB.NewRaw("SELECT count(*) FROM "+q, args...).Scan(context.Background(), &n))
	return n
}

// createDocument creates a PRD in project and returns its uuid.
func createDocument(t testing.TB, s *mcpsdk.ClientSession, project string) string {
	t.Helper()
	var d DocumentView
	ok(t, s, "chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "prd", "title": "PRD"}, &d)
	return d.UUID
}

// mention is the markup that mentions an agent or a user.
func mention(name, typ, uuid string) string { return fmt.Sprintf("@[%s](%s:%s)", name, typ, uuid) }

func TestCommentsOnEveryKindOfTarget(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		adminUUID := e.agentID("Admin Agent")
		pm := e.member("PM", e.owner, perm.PMAgent)
		dev := e.member("Dev", e.owner, perm.DeveloperAgent)
		project := createProject(t, admin, "Apollo")

		idea := createIdea(t, pm.s, project, "Dark mode", nil)
		var task CreatedTasks
		ok(t, pm.s, "chorus_create_tasks", map[string]any{"projectUuid": project, "tasks": []map[string]any{
			{"title": "Tokens", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &task)
		taskUUID := task.Tasks[0].UUID
		ok(t, dev.s, "chorus_claim_task", map[string]any{"taskUuid": taskUUID}, nil)
		var prop CreatedProposal
		ok(t, admin, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
		ok(t, admin, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Dark mode v1",
			"inputType": "idea", "inputUuids": []string{idea}}, &prop)
		var doc DocumentView
		ok(t, pm.s, "chorus_pm_create_document", map[string]any{"projectUuid": project, "type": "prd", "title": "PRD"}, &doc)

		// Every target type takes comments; the answer is the whole comment, authored by the caller.
		targets := map[string]string{"idea": idea, "proposal": prop.UUID, "task": taskUUID, "document": doc.UUID}
		for typ, id := range targets {
			var c CommentView
			ok(t, dev.s, "chorus_add_comment", map[string]any{"targetType": typ, "targetUuid": id, "content": "On the " + typ}, &c)
			require.Equal(t, typ, c.TargetType)
			require.Equal(t, id, c.TargetUUID)
			require.Equal(t, "On the "+typ, c.Content)
			require.Equal(t, store.ActorRef{Type: "agent", UUID: dev.uuid, Name: "Dev"}, c.Author)
			require.True(t, vocab.IsUUID(c.UUID))
			require.Equal(t, 1, activityCount(t, e.st, id, "comment_added"), "%s: one comment_added activity", typ)
		}

		// The people each target concerns are told, the author never (docs/rules.md §7.2):
		// task -> assignee (Dev, the author) and creator (PM); idea -> assignee (Admin) and
		// creator (PM); proposal -> creator (Admin); document -> creator (PM).
		commented := func(recipient string) []string {
			var got []string
			for _, n := range notes(t, e, "agent", recipient) {
				if n.Action == "comment_added" {
					got = append(got, n.EntityType)
					require.Equal(t, fmt.Sprintf("Dev commented on %q", n.EntityTitle), n.Message)
					require.Equal(t, "Apollo", n.ProjectName)
					require.Equal(t, "Dev", n.ActorName)
				}
			}
			return got
		}
		require.ElementsMatch(t, []string{"task", "idea", "document"}, commented(pm.uuid))
		require.ElementsMatch(t, []string{"idea", "proposal"}, commented(adminUUID))
		require.Empty(t, commented(dev.uuid), "the author is not notified of its own comment")

		// get_comments: newest first, paged, with the author's name.
		for i := 1; i <= 3; i++ {
			ok(t, pm.s, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": taskUUID,
				"content": fmt.Sprintf("note %d", i)}, nil)
		}
		var list CommentList
		ok(t, dev.s, "chorus_get_comments", map[string]any{"targetType": "task", "targetUuid": taskUUID}, &list)
		require.Equal(t, 4, list.Total)
		require.Equal(t, 20, list.PageSize)
		var contents []string
		for _, c := range list.Comments {
			contents = append(contents, c.Content)
		}
		require.Equal(t, []string{"note 3", "note 2", "note 1", "On the task"}, contents)
		require.Equal(t, "PM", list.Comments[0].Author.Name)
		ok(t, dev.s, "chorus_get_comments", map[string]any{"targetType": "task", "targetUuid": taskUUID, "page": 2, "pageSize": 3}, &list)
		require.Equal(t, 1, list.Returned)
		require.Equal(t, 4, list.Total)
		require.Equal(t, "On the task", list.Comments[0].Content)

		// A work report is a comment on its task too.
		ok(t, dev.s, "chorus_update_task", map[string]any{"taskUuid": taskUUID, "status": "in_progress"}, nil)
		call(t, dev.s, "chorus_report_work", map[string]any{"taskUuid": taskUUID, "report": "Halfway there"})
		ok(t, dev.s, "chorus_get_comments", map[string]any{"targetType": "task", "targetUuid": taskUUID, "pageSize": 1}, &list)
		require.Equal(t, "Halfway there", list.Comments[0].Content)
		require.Equal(t, 5, list.Total)

		// get_task counts them.
		var tv TaskView
		ok(t, dev.s, "chorus_get_task", map[string]any{"taskUuid": taskUUID}, &tv)
		require.Equal(t, 5, tv.CommentCount)

		// Bad input changes nothing and says what to fix.
		before := countRows(t, e, "comments")
		require.Contains(t, fails(t, dev.s, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": taskUUID, "content": "   "}),
			"content must not be blank")
		require.Contains(t, fails(t, dev.s, "chorus_add_comment", map[string]any{"targetType": "epic", "targetUuid": taskUUID, "content": "x"}),
			"targetType")
		require.Contains(t, fails(t, dev.s, "chorus_add_comment", map[string]any{"targetType": "task", "targetUuid": "nope", "content": "x"}),
			"targetUuid")
		// The type names which table the uuid is looked up in: a task uuid is no idea.
		require.Equal(t, "Idea not found", fails(t, dev.s, "chorus_add_comment", map[string]any{"targetType": "idea", "targetUuid": taskUUID, "content": "x"}))
		require.Equal(t, "Document not found", fails(t, dev.s, "chorus_get_comments", map[string]any{"targetType": "document", "targetUuid": store.NewUUID()}))
		require.Equal(t, before, countRows(t, e, "comments"))
	})
}

// A comment retried with its requestId is added once: after a lost answer (the ledger has the
// result), and after a crash between the commit and the ledger's record (the comment's id is
// derived from the requestId, so the retry finds it). A twin sent in parallel waits for the first.
func TestCommentRetriedWithRequestIDIsAddedOnce(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		project := createProject(t, admin, "Apollo")
		task := createDocument(t, admin, project)
		dev := e.member("Dev", e.owner, perm.DeveloperAgent)
		args := map[string]any{"targetType": "document", "targetUuid": task, "content": "Ping " + mention("Admin Agent", "agent", e.agentID("Admin Agent")),
			"requestId": "c-1"}
		var first, again CommentView
		ok(t, dev.s, "chorus_add_comment", args, &first)
		ok(t, dev.s, "chorus_add_comment", args, &again)
		require.Equal(t, first, again)

		// The ledger forgets the outcome, as when the process died right after the commit.
		_, err := e.st.DB.NewDelete().Table("tool_requests").Where("request_id = ?", "c-1").Exec(context.Background())
		require.NoError(t, err)
		ok(t, dev.s, "chorus_add_comment", args, &again)
		require.Equal(t, first.UUID, again.UUID)
		require.Equal(t, first.CreatedAt, again.CreatedAt)

		require.Equal(t, 1, countRows(t, e, "comments WHERE target_uuid = ?", task))
		require.Equal(t, 1, activityCount(t, e.st, task, "comment_added"))
		require.Equal(t, 1, activityCount(t, e.st, task, "mentioned"))
		require.Equal(t, 1, countRows(t, e, "mentions WHERE source_uuid = ?", first.UUID))
		// The admin created the document and is mentioned: the comment's comment_added and
		// mentioned notifications merge into one mention (docs/rules.md §7.2), never two.
		require.Equal(t, []string{"mentioned"}, sortedActions(notes(t, e, "agent", e.agentID("Admin Agent"))))

		// The same requestId with other arguments is refused and adds nothing.
		args["content"] = "Something else"
		require.Contains(t, fails(t, dev.s, "chorus_add_comment", args), "already used")
		require.Equal(t, 1, countRows(t, e, "comments WHERE target_uuid = ?", task))

		// Without a requestId every call is a new comment.
		delete(args, "requestId")
		ok(t, dev.s, "chorus_add_comment", args, nil)
		ok(t, dev.s, "chorus_add_comment", args, nil)
		require.Equal(t, 3, countRows(t, e, "comments WHERE target_uuid = ?", task))
	})
}

func sortedActions(ns []store.Notification) []string {
	a := actions(ns)
	slices.Sort(a)
	return a
}

// Project access applies to comments as to their targets (docs/rules.md §6.3): a hidden target
// is not found, a viewer may read comments but not write them.
func TestCommentsFollowProjectAccess(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		var p CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Secret", "visibility": "private"}, &p)
		task := createDocument(t, admin, p.UUID)
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": task, "content": "hidden words"}, nil)

		viewerUser := e.otherUser("viewer@example.com")
		viewer := e.member("Viewer", viewerUser, perm.DeveloperAgent)
		stranger := e.member("Stranger", "", perm.DeveloperAgent)

		// Hidden: the same answer as a task that does not exist, for reads and writes.
		for _, s := range []*mcpsdk.ClientSession{viewer.s, stranger.s} {
			require.Equal(t, "Document not found", fails(t, s, "chorus_get_comments", map[string]any{"targetType": "document", "targetUuid": task}))
			require.Equal(t, "Document not found", fails(t, s, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": task, "content": "hi"}))
			require.Equal(t, "Project not found", fails(t, s, "chorus_get_activity", map[string]any{"projectUuid": p.UUID}))
		}

		// A viewer reads, but may not write.
		e.grant(p.UUID, viewerUser, "viewer")
		var list CommentList
		ok(t, viewer.s, "chorus_get_comments", map[string]any{"targetType": "document", "targetUuid": task}, &list)
		require.Len(t, list.Comments, 1)
		require.Equal(t, "Insufficient project access",
			fails(t, viewer.s, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": task, "content": "hi"}))
		require.Equal(t, 1, countRows(t, e, "comments WHERE target_uuid = ?", task))
		var acts ActivityList
		ok(t, viewer.s, "chorus_get_activity", map[string]any{"projectUuid": p.UUID}, &acts)
		require.NotZero(t, acts.Total)
	})
}

// Mentions (docs/rules.md §7.3) in a comment: each person of the company named with valid
// markup gets a Mention row, a "mentioned" activity on the comment's target and, if they can
// see the project, a notification; the author, unknown uuids and malformed markup are skipped.
func TestMentionsInComments(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		adminUUID := e.agentID("Admin Agent")
		dev := e.member("Dev", e.owner, perm.DeveloperAgent)
		pm := e.member("PM", e.owner, perm.PMAgent)
		outsiderUser := e.otherUser("outsider@example.com")
		outsider := e.member("Outsider", outsiderUser, perm.DeveloperAgent)

		public := createProject(t, admin, "Open")
		task := createDocument(t, admin, public)
		content := strings.Join([]string{
			"Hi " + mention("Dev", "agent", dev.uuid),
			"and again " + mention("Dev again", "agent", strings.ToUpper(dev.uuid)), // the same person: once
			mention("Me", "agent", adminUUID),                                       // the author: skipped
			mention("Ghost", "agent", store.NewUUID()),                              // not in the company: skipped
			mention("Owner", "user", e.owner),                                       // a user
			mention("PM", "agent", pm.uuid) + "?cwd=/src&host=box",                  // not markup: the suffix is outside
			"@[PM](agent:" + pm.uuid + "?cwd=/src&host=box)",                        // a suffix inside is fine
			"@[Broken](agent:1234)", "@[Robot](robot:" + dev.uuid + ")", "@Dev(agent:" + dev.uuid + ")",
			mention("Outsider", "agent", outsider.uuid), // public project: everyone in the company sees it
		}, "\n")
		var c CommentView
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": task, "content": content}, &c)

		var mentioned []string
		require.NoError(t, e.st.DB.NewSelect().Table("mentions").Column("mentioned_uuid").Where("source_uuid = ?", c.UUID).
			Where("source_type = 'comment'").Scan(context.Background(), &mentioned))
		require.ElementsMatch(t, []string{dev.uuid, e.owner, pm.uuid, outsider.uuid}, mentioned)
		require.Equal(t, 4, activityCount(t, e.st, task, "mentioned"))

		for _, who := range []struct{ typ, uuid string }{{"agent", dev.uuid}, {"user", e.owner}, {"agent", pm.uuid}, {"agent", outsider.uuid}} {
			ns := notes(t, e, who.typ, who.uuid)
			var got []store.Notification
			for _, n := range ns {
				if n.Action == "mentioned" {
					got = append(got, n)
				}
			}
			require.Len(t, got, 1, "%s %s is told once", who.typ, who.uuid)
			require.Equal(t, "document", got[0].EntityType)
			require.Equal(t, task, got[0].EntityUUID)
			require.True(t, strings.HasPrefix(got[0].Message, `Admin Agent mentioned you: "Hi @Dev and again @Dev again`), got[0].Message)
			require.LessOrEqual(t, len([]rune(got[0].Message)), len(`Admin Agent mentioned you: ""`)+100)
		}
		require.Empty(t, notes(t, e, "agent", adminUUID), "no notification to oneself")

		// The activity says who was mentioned, by their real name, and where.
		var acts ActivityList
		ok(t, dev.s, "chorus_get_activity", map[string]any{"projectUuid": public, "targetType": "document", "targetUuid": task}, &acts)
		var names []string
		for _, a := range acts.Activities {
			if a.Action == "mentioned" {
				v := decodeValue(t, a.Value)
				require.Equal(t, "comment", v["sourceType"])
				require.Equal(t, c.UUID, v["sourceUuid"])
				names = append(names, v["mentionedName"].(string))
			}
		}
		require.ElementsMatch(t, []string{"Dev", "Owner", "PM", "Outsider"}, names)

		// In a private project the outsider (whose owner has no role there) and its owner are
		// mentioned, but not told: a notification must not reveal the project.
		var secret CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Secret", "visibility": "private"}, &secret)
		hidden := createDocument(t, admin, secret.UUID)
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": hidden,
			"content": mention("Outsider", "agent", outsider.uuid) + " " + mention("Them", "user", outsiderUser) + " " + mention("Dev", "agent", dev.uuid)}, nil)
		require.Equal(t, 3, activityCount(t, e.st, hidden, "mentioned"))
		for _, n := range append(notes(t, e, "agent", outsider.uuid), notes(t, e, "user", outsiderUser)...) {
			require.NotEqual(t, hidden, n.EntityUUID, "nothing about the private project reaches the outsider")
		}
		devMentions := 0
		for _, n := range notes(t, e, "agent", dev.uuid) {
			if n.EntityUUID == hidden && n.Action == "mentioned" {
				devMentions++
			}
		}
		require.Equal(t, 1, devMentions, "a member's agent is told")

		// More than ten distinct people: the first ten count.
		var many []string
		for i := 0; i < 12; i++ {
			many = append(many, mention(fmt.Sprint("A", i), "agent", e.member(fmt.Sprint("A", i), e.owner, perm.DeveloperAgent).uuid))
		}
		ok(t, admin, "chorus_add_comment", map[string]any{"targetType": "document", "targetUuid": task, "content": strings.Join(many, " ")}, &c)
		require.Equal(t, 10, countRows(t, e, "mentions WHERE source_uuid = ?", c.UUID))
	})
}

func decodeValue(t testing.TB, v JSONObject) map[string]any {
	t.Helper()
	require.NotNil(t, v)
	return v
}

// Mentions outside comments (docs/rules.md §7.3): a work report's, and the new ones of a task
// description or an idea's content edit (mentions the old text had are not new). Every write
// loses its acknowledgement the first times, so each is run again: a retry records nothing twice
// (it must not read the text it already wrote as the "old" one either).
func TestMentionsInReportsAndEdits(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		lose := func(kind string) { e.faults.FailAfterCommit(kind, 1) } // the next such write loses its acknowledgement
		admin := e.client(e.adminKey)
		adminUUID := e.agentID("Admin Agent")
		pm := e.member("PM", e.owner, perm.PMAgent)
		dev := e.member("Dev", e.owner, perm.DeveloperAgent)
		project := createProject(t, admin, "Apollo")
		task := createTask(t, admin, project)
		mentionedOn := func(recipient, entity string) int {
			n := 0
			for _, x := range notes(t, e, "agent", recipient) {
				if x.Action == "mentioned" && x.EntityUUID == entity {
					n++
				}
			}
			return n
		}

		// Task description: the first edit mentions PM; the second keeps PM and adds Dev.
		lose("ApplyTaskChange")
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "description": "Ask " + mention("PM", "agent", pm.uuid)}, nil)
		require.Equal(t, 1, mentionedOn(pm.uuid, task))
		lose("ApplyTaskChange")
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task,
			"description": "Ask " + mention("PM", "agent", pm.uuid) + " and " + mention("Dev", "agent", dev.uuid)}, nil)
		require.Equal(t, 1, mentionedOn(pm.uuid, task), "PM was in the old description: not new")
		require.Equal(t, 1, mentionedOn(dev.uuid, task))
		require.Equal(t, 2, countRows(t, e, "mentions WHERE source_type = 'task' AND source_uuid = ?", task))
		// Other fields do not re-read the description.
		ok(t, admin, "chorus_update_task", map[string]any{"taskUuid": task, "priority": "high"}, nil)
		require.Equal(t, 2, activityCount(t, e.st, task, "mentioned"))

		// A work report mentions like a comment, with the session-less attribution of the report.
		ok(t, dev.s, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		lose("ApplyTaskChange")
		call(t, dev.s, "chorus_report_work", map[string]any{"taskUuid": task, "report": "Done? " + mention("Admin", "agent", adminUUID), "requestId": "r1"})
		call(t, dev.s, "chorus_report_work", map[string]any{"taskUuid": task, "report": "Done? " + mention("Admin", "agent", adminUUID), "requestId": "r1"})
		require.Equal(t, 1, mentionedOn(adminUUID, task))
		var reportComment string
		require.NoError(t, e.st.DB.NewSelect().Table("comments").Column("uuid").Where("target_uuid = ?", task).Scan(context.Background(), &reportComment))
		require.Equal(t, 1, countRows(t, e, "mentions WHERE source_type = 'comment' AND source_uuid = ?", reportComment))

		// Idea content: only new mentions.
		idea := createIdea(t, pm.s, project, "Idea", map[string]any{"content": "cc " + mention("Dev", "agent", dev.uuid)})
		require.Equal(t, 0, mentionedOn(dev.uuid, idea), "creating an idea does not notify its mentions")
		lose("ApplyIdeaChange")
		ok(t, pm.s, "chorus_edit_idea", map[string]any{"ideaUuid": idea, "content": "cc " + mention("Dev", "agent", dev.uuid) + " " + mention("Admin", "agent", adminUUID)}, nil)
		require.Equal(t, 0, mentionedOn(dev.uuid, idea))
		require.Equal(t, 1, mentionedOn(adminUUID, idea))
		ok(t, pm.s, "chorus_edit_idea", map[string]any{"ideaUuid": idea, "title": "Renamed"}, nil)
		require.Equal(t, 1, mentionedOn(adminUUID, idea))
		require.Equal(t, 1, countRows(t, e, "mentions WHERE source_type = 'idea' AND source_uuid = ?", idea))
		require.Equal(t, 3, e.faults.Injected("ApplyTaskChange"))
		require.Equal(t, 1, e.faults.Injected("ApplyIdeaChange"))
		e.requireAgreement()
	})
}

// agentID returns the uuid of the env's agent named name.
func (e *env) agentID(name string) string {
	e.t.Helper()
	var uuid string
	require.NoError(e.t, e.st.DB.NewSelect().Table("agents").Column("uuid").Where("name = ?", name).Where("company_uuid = ?", e.company).
		Scan(context.Background(), &uuid))
	return uuid
}
