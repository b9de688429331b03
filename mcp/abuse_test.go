package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// The abuse suite (issue 18): two owners of one company, each with agents of the same presets,
// played the way an attacker plays them, through the real MCP endpoint. alice has a public
// backlog project and a private vault; bob sees the backlog (public: editor for everyone) and
// never the vault. Each test is one way in that was open before (docs/rules.md §6.3, "Across
// projects"; §6.5; §3.6) and must stay shut: whatever bob's agents do, nothing of the vault reaches
// them, no count tells it exists, and nothing of alice's that they cannot change changes.
//
// Its kin outside this file: the CLI's terminal escapes (cmd/chorus/abuse_test.go).

// abuseWorld is the company of the issue: alice's and bob's agents, alice's two projects.
type abuseWorld struct {
	e                   *env
	alice, bob          string // the owner users
	aAdmin, aPM, aDev   person
	bAdmin, bPM, bDev   person
	backlog, vault      string
	backlogN, vaultName string
}

func newAbuseWorld(t *testing.T, e *env) *abuseWorld {
	t.Helper()
	w := &abuseWorld{e: e, backlogN: "Backlog", vaultName: "Vault Zeta"}
	w.alice = e.otherUser("alice@example.com")
	w.bob = e.otherUser("bob@example.com")
	w.aAdmin = e.member("Alice Admin", w.alice, perm.AdminAgent)
	w.aPM = e.member("Alice PM", w.alice, perm.PMAgent)
	w.aDev = e.member("Alice Dev", w.alice, perm.DeveloperAgent)
	w.bAdmin = e.member("Bob Admin", w.bob, perm.AdminAgent)
	w.bPM = e.member("Bob PM", w.bob, perm.PMAgent)
	w.bDev = e.member("Bob Dev", w.bob, perm.DeveloperAgent)
	var p CreatedProject
	ok(t, w.aAdmin.s, "chorus_admin_create_project", map[string]any{"name": w.backlogN}, &p)
	w.backlog = p.UUID
	ok(t, w.aAdmin.s, "chorus_admin_create_project", map[string]any{"name": w.vaultName, "visibility": "private"}, &p)
	w.vault = p.UUID
	return w
}

// object calls a tool that must succeed and returns its structured result as a map.
func object(t testing.TB, s *mcpsdk.ClientSession, name string, args any) map[string]any {
	t.Helper()
	var out map[string]any
	ok(t, s, name, args, &out)
	return out
}

// backlogIdeaInVault is the setup of case 07: an idea of alice's public backlog (made by
// creator), claimed and elaborated by alice's PM, and a proposal of alice's vault built on it,
// approved, with a PRD and one task. It returns the idea, the proposal, its document and task.
func (w *abuseWorld) backlogIdeaInVault(t *testing.T, creator person, title string) (idea, proposal, doc, task string) {
	t.Helper()
	return w.planned(t, creator, title, w.vault)
}

// planned is an idea of the backlog (made by creator), claimed and elaborated by alice's PM,
// and an approved proposal of project built on it, with a PRD and one task.
func (w *abuseWorld) planned(t *testing.T, creator person, title, project string) (idea, proposal, doc, task string) {
	t.Helper()
	idea = createIdea(t, creator.s, w.backlog, title, nil)
	ok(t, w.aPM.s, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
	ok(t, w.aPM.s, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": idea, "reason": "clear"}, nil)
	var p CreatedProposal
	ok(t, w.aPM.s, "chorus_pm_create_proposal", map[string]any{"projectUuid": project, "title": "Confidential plan",
		"description": "Only for the vault", "inputType": "idea", "inputUuids": []string{idea}}, &p)
	ok(t, w.aPM.s, "chorus_pm_add_document_draft", map[string]any{"proposalUuid": p.UUID, "type": "prd",
		"title": "Confidential PRD", "content": longText}, nil)
	ok(t, w.aPM.s, "chorus_pm_add_task_draft", map[string]any{"proposalUuid": p.UUID, "title": "Confidential task",
		"acceptanceCriteriaItems": []map[string]any{{"description": "works"}}}, nil)
	ok(t, w.aPM.s, "chorus_pm_submit_proposal", map[string]any{"proposalUuid": p.UUID}, nil)
	var pv ProposalView
	ok(t, w.aAdmin.s, "chorus_admin_approve_proposal", map[string]any{"proposalUuid": p.UUID}, &pv)
	require.Len(t, pv.MaterializedDocuments, 1)
	require.Len(t, pv.MaterializedTasks, 1)
	return idea, p.UUID, pv.MaterializedDocuments[0].DocumentUUID, pv.MaterializedTasks[0].TaskUUID
}

// requireHiddenFromBob checks that none of bob's agents reaches the vault's rows: each answers
// exactly like a uuid that does not exist.
func (w *abuseWorld) requireHiddenFromBob(t *testing.T, proposal, doc, task string) {
	t.Helper()
	for _, b := range []person{w.bAdmin, w.bPM, w.bDev} {
		require.Equal(t, "Proposal not found", fails(t, b.s, "chorus_get_proposal", map[string]any{"proposalUuid": proposal}))
		require.Equal(t, "Document not found", fails(t, b.s, "chorus_get_document", map[string]any{"documentUuid": doc}))
		require.Equal(t, "Task not found", fails(t, b.s, "chorus_get_task", map[string]any{"taskUuid": task}))
	}
	require.Equal(t, "Task not found", fails(t, w.bDev.s, "chorus_claim_task", map[string]any{"taskUuid": task}))
}

// Case 07: bob's PM moves alice's backlog idea into his own project. The move takes the idea
// alone: the vault's proposal, its document and its task stay in the vault, hidden from bob, and
// the answer counts nothing bob cannot see (docs/rules.md §5.9, §6.3).
func TestAbuseMoveTakesNoOtherProjectsProposals(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		ctx := context.Background()
		idea, proposal, doc, task := w.backlogIdeaInVault(t, w.aPM, "Backlog idea")
		sink := createProject(t, w.bAdmin.s, "Sink")
		w.requireHiddenFromBob(t, proposal, doc, task)
		about, err := e.st.DB.NewSelect().Table("activities").Where("project_uuid = ?", w.backlog).
			Where("target_uuid = ?", idea).Count(ctx)
		require.NoError(t, err)

		// The move's write commits and then reports a failure: its retry finds it applied and
		// answers the same counts.
		e.faults.FailAfterCommit("MoveIdeaCascade", 1)
		moved := object(t, w.bPM.s, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": sink})
		require.Equal(t, map[string]any{"ideas": 1.0, "proposals": 0.0, "documents": 0.0, "tasks": 0.0,
			"activities": float64(about)}, moved["moved"], "the move counts only the backlog's rows about the idea")
		require.Equal(t, 1, e.faults.Injected("MoveIdeaCascade"))

		// The vault keeps its proposal, document and task, and bob still finds none of them.
		w.requireHiddenFromBob(t, proposal, doc, task)
		for table, uuid := range map[string]string{"proposals": proposal, "documents": doc, "tasks": task} {
			var project string
			require.NoError(t, e.st.DB.NewSelect().Table(table).Column("project_uuid").Where("uuid = ?", uuid).Scan(ctx, &project))
			require.Equal(t, w.vault, project, "%s %s stays in the vault", table, uuid)
		}
		list := object(t, w.aPM.s, "chorus_get_proposals", map[string]any{"projectUuid": w.vault})
		require.EqualValues(t, 1, list["total"], "alice's vault still lists its proposal")
		got := object(t, w.aPM.s, "chorus_get_task", map[string]any{"taskUuid": task})
		require.Equal(t, w.vault, got["project"].(map[string]any)["uuid"])
		requireNoText(t, w.bPM.s, "chorus_get_activity", map[string]any{"projectUuid": sink}, "Confidential")

		// Alice moving her own idea follows the same rule: one project's move takes that project's rows.
		own := createIdea(t, w.aPM.s, w.backlog, "Alice's idea", nil)
		moved = object(t, w.aPM.s, "chorus_move_idea", map[string]any{"ideaUuid": own, "targetProjectUuid": w.vault})
		require.EqualValues(t, 1, moved["moved"].(map[string]any)["ideas"])
		e.requireAgreement()
	})
}

// A revoke closes and deletes its own project's rows only: a task of the vault that depends on a
// backlog task (an edge a move kept) keeps its edge when bob's admin revokes the backlog
// proposal, and the closed task resolves it (docs/rules.md §5.7, §6.3).
func TestAbuseRevokeChangesNothingElsewhere(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		_, pa, _, ta := w.planned(t, w.aPM, "Upstream", w.backlog)
		b, _, _, tb := w.planned(t, w.aPM, "Downstream", w.backlog)
		ok(t, w.aPM.s, "chorus_update_task", map[string]any{"taskUuid": tb, "addDependsOn": []string{ta}}, nil)
		ok(t, w.aPM.s, "chorus_move_idea", map[string]any{"ideaUuid": b, "targetProjectUuid": w.vault}, nil)
		edges := func() int {
			return countRows(t, e, "task_dependencies WHERE task_uuid = ? AND depends_on_uuid = ?", tb, ta)
		}
		require.Equal(t, 1, edges(), "the move kept the edge")

		e.faults.FailAfterCommit("RevokeCascade", 1) // committed, then reported failed: the retry finds it applied
		ok(t, w.bAdmin.s, "chorus_pm_revoke_proposal", map[string]any{"proposalUuid": pa, "reviewNote": "not now"}, nil)
		require.Equal(t, 1, e.faults.Injected("RevokeCascade"))
		require.Equal(t, 1, edges(), "the vault's task keeps its edge")
		got := object(t, w.aPM.s, "chorus_get_task", map[string]any{"taskUuid": tb})
		require.Equal(t, []any{map[string]any{"uuid": ta, "title": store.ElsewhereTitle, "status": "closed"}}, got["dependsOn"])
		e.requireAgreement()
	})
}

// requireNoText fails when a successful call's answer (text and structured content) contains secret.
func requireNoText(t testing.TB, s *mcpsdk.ClientSession, name string, args any, secret string) {
	t.Helper()
	res := call(t, s, name, args)
	require.False(t, res.IsError, "%s: %s", name, text(res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NotContains(t, text(res), secret, "%s tells %q", name, secret)
	require.NotContains(t, string(b), secret, "%s tells %q", name, secret)
}

// A report on a private proposal is announced in the proposal's project only: the public idea's
// project, its activity stream and the idea's creator (bob) learn nothing of it (docs/rules.md
// §5.8, §6.3).
func TestAbuseReportStaysInItsProposalsProject(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		idea, proposal, _, _ := w.backlogIdeaInVault(t, w.bPM, "Bob's backlog idea")
		var r map[string]any
		ok(t, w.aPM.s, "chorus_create_report", map[string]any{"proposalUuid": proposal, "title": "Confidential findings",
			"content": "Numbers nobody outside the vault may read."}, &r)

		for _, b := range []person{w.bAdmin, w.bPM, w.bDev} {
			requireNoText(t, b.s, "chorus_get_activity", map[string]any{"projectUuid": w.backlog}, "Confidential")
			requireNoText(t, b.s, "chorus_get_activity", map[string]any{"projectUuid": w.backlog, "targetType": "idea",
				"targetUuid": idea}, "report")
			requireNoText(t, b.s, "chorus_get_idea", map[string]any{"ideaUuid": idea}, "Confidential")
			requireNoText(t, b.s, "chorus_get_notifications", map[string]any{"status": "all", "autoMarkRead": false}, "report")
		}
		n := object(t, w.bPM.s, "chorus_get_notifications", map[string]any{"status": "all", "autoMarkRead": false})
		for _, row := range n["notifications"].([]any) {
			require.NotEqual(t, "report_created", row.(map[string]any)["action"], "bob, the idea's creator, is told nothing of the vault's report")
		}
		require.Equal(t, 0, countRows(t, e, "notifications WHERE action = 'report_created' AND recipient_uuid IN (?, ?, ?, ?)",
			w.bob, w.bAdmin.uuid, w.bPM.uuid, w.bDev.uuid), "nor is it written for him")

		// Alice reads it where it was written.
		acts := object(t, w.aPM.s, "chorus_get_activity", map[string]any{"projectUuid": w.vault})
		b, _ := json.Marshal(acts)
		require.Contains(t, string(b), `"reportTitle":"Confidential findings"`)
	})
}

// A move's activity names the project the idea came from only to readers who may see it.
func TestAbuseMovedActivityNamesNoHiddenProject(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		idea := createIdea(t, w.aPM.s, w.vault, "Leaves the vault", nil)
		ok(t, w.aPM.s, "chorus_move_idea", map[string]any{"ideaUuid": idea, "targetProjectUuid": w.backlog}, nil)
		requireNoText(t, w.bPM.s, "chorus_get_activity", map[string]any{"projectUuid": w.backlog}, w.vaultName)
		requireNoText(t, w.bPM.s, "chorus_get_activity", map[string]any{"projectUuid": w.backlog}, w.vault)
		var g GroupView
		ok(t, w.aAdmin.s, "chorus_admin_create_project_group", map[string]any{"name": "Public group"}, &g)
		prev := object(t, w.aAdmin.s, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": w.backlog,
			"groupUuid": g.UUID, "preview": true})
		ok(t, w.aAdmin.s, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": w.backlog,
			"groupUuid": g.UUID, "confirmationToken": prev["confirmationToken"]}, nil)
		requireNoText(t, w.bPM.s, "chorus_get_group_dashboard", map[string]any{"groupUuid": g.UUID}, w.vaultName)

		acts := object(t, w.aPM.s, "chorus_get_activity", map[string]any{"projectUuid": w.backlog})
		b, _ := json.Marshal(acts)
		require.Contains(t, string(b), `"fromProjectName":"`+w.vaultName+`"`, "alice sees where it came from")
	})
}

// Deleting a group (with or without its projects) needs project:admin, an explicit admin role on
// the group (and admin on every project it deletes) and a preview's confirmation token, which
// goes stale when anything it would delete changes and cannot be replayed (docs/rules.md §4.11, §6.5).
func TestAbuseGroupDeleteNeedsAnAdminAndAConfirmation(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		ctx := context.Background()
		var g GroupView
		ok(t, w.aAdmin.s, "chorus_admin_create_project_group", map[string]any{"name": "Platform"}, &g)
		var docs CreatedProject
		ok(t, w.aAdmin.s, "chorus_admin_create_project", map[string]any{"name": "Docs", "groupUuid": g.UUID}, &docs)
		createDocument(t, w.aPM.s, docs.UUID)
		del := map[string]any{"groupUuid": g.UUID, "deleteProjects": true}
		projects := func() int { return countRows(t, e, "projects WHERE uuid = ?", docs.UUID) }

		// Bob's PM, an editor of the public group and project, no longer finds the tool; bob's
		// admin has the bit but no admin role on the group; nor has alice's PM the bit.
		require.Equal(t, "Tool chorus_admin_delete_project_group not found", fails(t, w.bPM.s, "chorus_admin_delete_project_group", del))
		require.Equal(t, "Tool chorus_admin_delete_project_group not found", fails(t, w.aPM.s, "chorus_admin_delete_project_group", del))
		for _, args := range []map[string]any{del, {"groupUuid": g.UUID}, {"groupUuid": g.UUID, "deleteProjects": true, "preview": true}} {
			require.Equal(t, "Only group admins can manage this group", fails(t, w.bAdmin.s, "chorus_admin_delete_project_group", args))
		}
		require.Equal(t, 1, projects())

		// Alice's admin: a preview first, then the token.
		require.Contains(t, fails(t, w.aAdmin.s, "chorus_admin_delete_project_group", del), "Confirmation required")
		prev := object(t, w.aAdmin.s, "chorus_admin_delete_project_group", map[string]any{"groupUuid": g.UUID,
			"deleteProjects": true, "preview": true})
		require.Equal(t, g.UUID, prev["groupUuid"])
		require.Equal(t, []any{map[string]any{"uuid": docs.UUID, "name": "Docs", "visibility": "public", "action": "deleted",
			"documents": 1.0}}, prev["projects"])
		token := prev["confirmationToken"].(string)
		require.NotEmpty(t, token)
		require.Equal(t, 1, projects(), "a preview deletes nothing")
		forged := map[string]any{"groupUuid": g.UUID, "deleteProjects": true, "confirmationToken": "cft_" + strings.Repeat("0", 40)}
		require.Contains(t, fails(t, w.aAdmin.s, "chorus_admin_delete_project_group", forged), "Confirmation token is stale")
		other := map[string]any{"groupUuid": g.UUID, "confirmationToken": token} // previewed with deleteProjects
		require.Contains(t, fails(t, w.aAdmin.s, "chorus_admin_delete_project_group", other), "Confirmation token is stale")
		require.Contains(t, fails(t, w.bAdmin.s, "chorus_admin_delete_project_group",
			map[string]any{"groupUuid": g.UUID, "deleteProjects": true, "confirmationToken": token}), "Only group admins")

		// Something the preview did not show appears: the token no longer matches.
		createDocument(t, w.bPM.s, docs.UUID)
		confirm := map[string]any{"groupUuid": g.UUID, "deleteProjects": true, "confirmationToken": token}
		require.Contains(t, fails(t, w.aAdmin.s, "chorus_admin_delete_project_group", confirm), "Confirmation token is stale")
		prev = object(t, w.aAdmin.s, "chorus_admin_delete_project_group", map[string]any{"groupUuid": g.UUID,
			"deleteProjects": true, "preview": true})
		confirm["confirmationToken"] = prev["confirmationToken"]
		done := object(t, w.aAdmin.s, "chorus_admin_delete_project_group", confirm)
		require.Equal(t, true, done["deleted"])
		require.Equal(t, "Project group "+g.UUID+" deleted", done["summary"])
		require.Equal(t, 0, projects())
		require.Equal(t, 0, countRows(t, e, "documents WHERE project_uuid = ?", docs.UUID))
		require.Equal(t, "Project group not found", fails(t, w.aAdmin.s, "chorus_admin_delete_project_group", confirm),
			"a token cannot be replayed")

		// Without its projects: they stay, ungrouped, which changes who reaches them through the
		// group, so that needs the same preview and token.
		var h GroupView
		ok(t, w.aAdmin.s, "chorus_admin_create_project_group", map[string]any{"name": "Secret", "visibility": "private"}, &h)
		var kept CreatedProject
		ok(t, w.aAdmin.s, "chorus_admin_create_project", map[string]any{"name": "Kept", "groupUuid": h.UUID}, &kept)
		require.Equal(t, "Project group not found", fails(t, w.bAdmin.s, "chorus_admin_delete_project_group",
			map[string]any{"groupUuid": h.UUID, "preview": true}), "a private group stays hidden")
		prev = object(t, w.aAdmin.s, "chorus_admin_delete_project_group", map[string]any{"groupUuid": h.UUID, "preview": true})
		require.Equal(t, []any{map[string]any{"uuid": kept.UUID, "name": "Kept", "visibility": "private", "action": "ungrouped",
			"documents": 0.0}}, prev["projects"])
		require.Contains(t, fails(t, w.aAdmin.s, "chorus_admin_delete_project_group", map[string]any{"groupUuid": h.UUID}),
			"Confirmation required")
		ok(t, w.aAdmin.s, "chorus_admin_delete_project_group", map[string]any{"groupUuid": h.UUID,
			"confirmationToken": prev["confirmationToken"]}, nil)
		var group *string
		require.NoError(t, e.st.DB.NewSelect().Table("projects").Column("group_uuid").Where("uuid = ?", kept.UUID).Scan(ctx, &group))
		require.Nil(t, group)
	})
}

// Notifications are shown only while their project is visible to the reader: after bob loses
// his role on the vault, the list, the count, the check-in and marking read behave as if the
// vault's notifications did not exist, and they come back with the role (docs/rules.md §4.16).
func TestAbuseNotificationsFollowAccess(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		ctx := context.Background()
		e.grant(w.vault, w.bob, "editor")
		idea := createIdea(t, w.aPM.s, w.vault, "Vault secret idea", nil)
		ok(t, w.aPM.s, "chorus_add_comment", map[string]any{"targetType": "idea", "targetUuid": idea,
			"content": "Secret plan, please review " + mention("Bob PM", "agent", w.bPM.uuid)}, nil)
		n := object(t, w.bPM.s, "chorus_get_notifications", map[string]any{"autoMarkRead": false})
		require.EqualValues(t, 1, n["total"])
		uuid := n["notifications"].([]any)[0].(map[string]any)["uuid"].(string)

		_, err := e.st.RemoveProjectMember(ctx, w.vault, w.bob)
		require.NoError(t, err)
		for _, status := range []string{"unread", "all", "read"} {
			n = object(t, w.bPM.s, "chorus_get_notifications", map[string]any{"status": status, "autoMarkRead": false})
			require.EqualValues(t, 0, n["total"], status)
			require.EqualValues(t, 0, n["unreadCount"], status)
			requireNoText(t, w.bPM.s, "chorus_get_notifications", map[string]any{"status": status, "autoMarkRead": false}, "Vault")
		}
		ci := object(t, w.bPM.s, "chorus_checkin", nil)
		require.Equal(t, map[string]any{"unread": 0.0, "recent": []any{}}, ci["notifications"])
		require.Equal(t, "Notification not found", fails(t, w.bPM.s, "chorus_mark_notification_read", map[string]any{"notificationUuid": uuid}))
		marked := object(t, w.bPM.s, "chorus_mark_notification_read", map[string]any{"all": true})
		require.EqualValues(t, 0, marked["marked"])

		// With the role back, it is there again, unread: hidden, not lost.
		e.grant(w.vault, w.bob, "viewer")
		n = object(t, w.bPM.s, "chorus_get_notifications", map[string]any{"autoMarkRead": false})
		require.EqualValues(t, 1, n["total"])
		require.EqualValues(t, 1, n["unreadCount"])
	})
}

// entityReadBudget is the byte budget of an entity read (docs/rules.md §3.6).
const entityReadBudget = 65536

// requireWithinBudget calls a read and checks its answer, both as structured content and as
// text, fits the budget; it returns the structured content.
func requireWithinBudget(t testing.TB, s *mcpsdk.ClientSession, name string, args any) map[string]any {
	t.Helper()
	res := call(t, s, name, args)
	require.False(t, res.IsError, "%s: %s", name, text(res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), entityReadBudget, "%s answers %d bytes", name, len(b))
	require.LessOrEqual(t, len(text(res)), entityReadBudget, "%s's text is %d bytes", name, len(text(res)))
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// pageAll reads a collection page by page, five rows a page (which fit the budget whole), and
// returns the uuids of every row.
func pageAll(t testing.TB, s *mcpsdk.ClientSession, name, key string, args map[string]any) []string {
	t.Helper()
	var uuids []string
	for page := 1; page <= 200; page++ {
		a := map[string]any{"page": page, "pageSize": 5}
		for k, v := range args {
			a[k] = v
		}
		out := requireWithinBudget(t, s, name, a)
		rows := out[key].([]any)
		require.EqualValues(t, len(rows), out["returned"])
		for _, r := range rows {
			uuids = append(uuids, r.(map[string]any)["uuid"].(string))
		}
		if len(uuids) >= int(out["total"].(float64)) || len(rows) == 0 {
			break
		}
	}
	return uuids
}

// No read is larger than its budget, whatever was written: an entity's references and the tasks
// depending on it are cut to fit, counted, and paged elsewhere; an entity takes at most 100
// references (docs/rules.md §1.16, §3.6, §4.12).
func TestAbuseNoReadOverItsBudget(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		notes := strings.Repeat("n", 8<<10)
		ref := func(i int) map[string]any {
			return map[string]any{"type": "docs", "url": fmt.Sprintf("https://example.com/%d", i), "title": fmt.Sprintf("Ref %d", i), "notes": notes}
		}
		refs := func(n int) []map[string]any {
			out := make([]map[string]any, n)
			for i := range out {
				out[i] = ref(i)
			}
			return out
		}
		var created CreatedTasks
		ok(t, w.bDev.s, "chorus_create_tasks", map[string]any{"projectUuid": w.backlog, "tasks": []map[string]any{
			{"title": "Target", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}, "references": refs(50)}}}, &created)
		task := created.Tasks[0].UUID
		for i := 50; i < 100; i++ {
			ok(t, w.bPM.s, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": task, "type": "docs",
				"url": fmt.Sprintf("https://example.com/%d", i), "title": fmt.Sprintf("Ref %d", i), "notes": notes}, nil)
		}
		msg := fails(t, w.bPM.s, "chorus_add_reference", map[string]any{"targetType": "task", "targetUuid": task, "type": "docs",
			"url": "https://example.com/one-too-many", "title": "One too many"})
		require.Equal(t, "Failed to add reference: the task already has 100 references, the most one may have. Remove "+
			"one with chorus_remove_reference before adding another.", msg)

		// Tasks depending on it, with long titles: 300 of them.
		long := strings.Repeat("t", 480)
		for batch := 0; batch < 3; batch++ {
			var specs []map[string]any
			for i := 0; i < 100; i++ {
				specs = append(specs, map[string]any{"title": fmt.Sprintf("%s %d-%d", long, batch, i),
					"acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}, "dependsOnTaskUuids": []string{task}})
			}
			ok(t, w.bDev.s, "chorus_create_tasks", map[string]any{"projectUuid": w.backlog, "tasks": specs}, nil)
		}

		got := requireWithinBudget(t, w.bDev.s, "chorus_get_task", map[string]any{"taskUuid": task})
		require.EqualValues(t, 100, got["referenceCount"])
		require.EqualValues(t, 300, got["dependedByCount"])
		require.Less(t, len(got["references"].([]any)), 100)
		require.Less(t, len(got["dependedBy"].([]any)), 300)
		require.Len(t, pageAll(t, w.bDev.s, "chorus_get_references", "references", map[string]any{"targetType": "task", "targetUuid": task}), 100)
		require.Len(t, pageAll(t, w.bDev.s, "chorus_get_task_dependencies", "tasks",
			map[string]any{"taskUuid": task, "direction": "dependedBy"}), 300)
		// The tools that answer with the task keep the budget too.
		requireWithinBudget(t, w.bDev.s, "chorus_claim_task", map[string]any{"taskUuid": task})

		// The same on an idea and a proposal.
		idea := createIdea(t, w.bPM.s, w.backlog, "Idea", map[string]any{"references": refs(50)})
		got = requireWithinBudget(t, w.bDev.s, "chorus_get_idea", map[string]any{"ideaUuid": idea})
		require.EqualValues(t, 50, got["referenceCount"])
		require.Len(t, pageAll(t, w.bDev.s, "chorus_get_references", "references", map[string]any{"targetType": "idea", "targetUuid": idea}), 50)
		ok(t, w.bPM.s, "chorus_claim_idea", map[string]any{"ideaUuid": idea}, nil)
		ok(t, w.bPM.s, "chorus_pm_skip_elaboration", map[string]any{"ideaUuid": idea, "reason": "clear"}, nil)
		var p CreatedProposal
		ok(t, w.bPM.s, "chorus_pm_create_proposal", map[string]any{"projectUuid": w.backlog, "title": "P", "inputType": "idea",
			"inputUuids": []string{idea}, "references": refs(50)}, &p)
		got = requireWithinBudget(t, w.bDev.s, "chorus_get_proposal", map[string]any{"proposalUuid": p.UUID})
		require.EqualValues(t, 50, got["referenceCount"])
	})
}

// Another agent's session answers exactly like a session that does not exist, on every tool
// that names one (docs/rules.md §2.5).
func TestAbuseSessionsAnswerNotFound(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		var s SessionView
		ok(t, w.bDev.s, "chorus_create_session", map[string]any{"name": "bob's worktree"}, &s)
		task := createTask(t, w.aDev.s, w.backlog)
		unknown := store.NewUUID()
		for _, tool := range []string{"chorus_get_session", "chorus_close_session", "chorus_reopen_session", "chorus_session_heartbeat"} {
			require.Equal(t, fails(t, w.aDev.s, tool, map[string]any{"sessionUuid": unknown}),
				fails(t, w.aDev.s, tool, map[string]any{"sessionUuid": s.UUID}), tool)
		}
		for _, tool := range []string{"chorus_session_checkin_task", "chorus_session_checkout_task"} {
			require.Equal(t, fails(t, w.aDev.s, tool, map[string]any{"sessionUuid": unknown, "taskUuid": task}),
				fails(t, w.aDev.s, tool, map[string]any{"sessionUuid": s.UUID, "taskUuid": task}), tool)
		}
		ok(t, w.aDev.s, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		require.Equal(t, fails(t, w.aDev.s, "chorus_update_task", map[string]any{"taskUuid": task, "title": "x", "sessionUuid": unknown}),
			fails(t, w.aDev.s, "chorus_update_task", map[string]any{"taskUuid": task, "title": "x", "sessionUuid": s.UUID}))
		require.Equal(t, "Session not found", fails(t, w.aDev.s, "chorus_get_session", map[string]any{"sessionUuid": s.UUID}))
	})
}

// A request nested a thousand levels deep is refused at the edge with a JSON-RPC error in plain
// words, before the SDK reads it (docs/rules.md §3.1).
func TestAbuseDeepNestingIsRefusedPlainly(t *testing.T) {
	e := newEnv(t, "sqlite")
	deep := strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chorus_checkin","arguments":` + deep + `}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`,
	} {
		resp, got := e.rawPost("Bearer "+e.adminKey, body)
		var rpc struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(got), &rpc), got)
		require.Equal(t, 400, resp.StatusCode, got)
		require.Equal(t, codeInvalidRequest, rpc.Error.Code, got)
		require.Equal(t, "Invalid Request: the message nests objects and arrays more than 64 levels deep; send a flatter one",
			rpc.Error.Message)
	}
}
