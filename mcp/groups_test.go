package mcp

import (
	"context"
	"encoding/json"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Project groups (docs/rules.md §4.11, §6.5).

// userAgent makes a user of the company and an agent it owns with the given presets, and
// returns the user's uuid and the agent's session.
func (e *env) userAgent(email string, presets ...string) (string, *mcpsdk.ClientSession) {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.st.EnsureUser(ctx, e.company, email, "")
	require.NoError(e.t, err)
	_, key, err := e.st.CreateAgent(ctx, store.NewAgent{CompanyUUID: e.company, Name: email, Roles: presets, OwnerUUID: &u.UUID})
	require.NoError(e.t, err)
	return u.UUID, e.client(key)
}

func TestProjectGroups(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		admin := e.client(e.adminKey)
		bob, bobS := e.userAgent("bob@example.com", perm.AdminAgent)

		var g GroupView
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Platform", "requestId": "g1"}, &g)
		require.Equal(t, "public", g.Visibility)
		require.Equal(t, "", g.Description)
		require.Zero(t, g.ProjectCount)
		var again GroupView
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Platform", "requestId": "g1"}, &again)
		require.Equal(t, g.UUID, again.UUID, "a retry makes no second group")
		var h GroupView
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Secret", "visibility": "private"}, &h)

		var p1, p2 CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "P1", "groupUuid": g.UUID}, &p1)
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "P2"}, &p2)
		var created CreatedTasks
		ok(t, admin, "chorus_create_tasks", map[string]any{"projectUuid": p1.UUID, "tasks": []map[string]any{
			{"title": "T1", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}},
			{"title": "T2", "acceptanceCriteriaItems": []map[string]any{{"description": "ok"}}}}}, &created)
		ok(t, admin, "chorus_admin_close_task", map[string]any{"taskUuid": created.Tasks[0].UUID}, nil)

		// Reads: lists, one group, the dashboard.
		var list GroupList
		ok(t, admin, "chorus_get_project_groups", map[string]any{}, &list)
		require.Equal(t, 2, list.Total)
		require.Equal(t, []string{g.UUID, h.UUID}, []string{list.Groups[0].UUID, list.Groups[1].UUID}, "oldest first")
		require.Equal(t, 1, list.Groups[0].ProjectCount)
		require.Equal(t, 1, list.UngroupedCount)
		ok(t, bobS, "chorus_get_project_groups", map[string]any{}, &list)
		require.Equal(t, 1, list.Total, "bob does not see the private group")
		require.Equal(t, "Project group not found", fails(t, bobS, "chorus_get_project_group", map[string]any{"groupUuid": h.UUID}))
		require.Equal(t, "Project group not found", fails(t, bobS, "chorus_get_group_dashboard", map[string]any{"groupUuid": h.UUID}))
		var det GroupDetail
		ok(t, bobS, "chorus_get_project_group", map[string]any{"groupUuid": g.UUID}, &det)
		require.Len(t, det.Projects, 1)
		require.Equal(t, p1.UUID, det.Projects[0].UUID)
		var dash DashboardOut
		ok(t, admin, "chorus_get_group_dashboard", map[string]any{"groupUuid": g.UUID}, &dash)
		require.Equal(t, DashboardStats{ProjectCount: 1, TotalTasks: 2, CompletedTasks: 1, CompletionRate: 50}, dash.Stats)
		require.Equal(t, []DashboardProject{{UUID: p1.UUID, Name: "P1", Visibility: "public", TaskCount: 2, CompletionRate: 50}}, dash.Projects)
		require.NotEmpty(t, dash.RecentActivity)
		require.Equal(t, "P1", dash.RecentActivity[0].ProjectName)

		// Renaming a public group needs editor only; a private group's members need admin.
		var upd UpdatedGroup
		ok(t, bobS, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "description": "shared"}, &upd)
		require.Equal(t, "shared", *upd.Description)
		require.Equal(t, "Project group not found",
			fails(t, bobS, "chorus_admin_update_project_group", map[string]any{"groupUuid": h.UUID, "name": "Mine"}))
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": h.UUID, "memberAction": "add",
			"userUuid": bob, "role": "viewer"}, nil)
		require.Equal(t, "Only group admins can manage this group",
			fails(t, bobS, "chorus_admin_update_project_group", map[string]any{"groupUuid": h.UUID, "name": "Mine"}))
		ok(t, bobS, "chorus_get_project_group", map[string]any{"groupUuid": h.UUID}, &det)

		// One kind of change per call, and no unknown keys: refused, nothing changed.
		msg := fails(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "name": "X",
			"memberAction": "remove", "userUuid": bob})
		require.Contains(t, msg, "Input validation error: memberAction cannot be combined")
		msg = fails(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "visiblity": "private"})
		require.Contains(t, msg, "Input validation error: visiblity is not an argument of this tool")
		require.Contains(t, fails(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID,
			"memberAction": "add", "userUuid": bob}), "role is required")
		require.Contains(t, fails(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID,
			"name": "Y", "preview": true}), "preview and confirmationToken go with a visibility change")
		ok(t, admin, "chorus_get_project_group", map[string]any{"groupUuid": g.UUID}, &det)
		require.Equal(t, "Platform", det.Name)

		// A visibility change: confirmation required, preview, a token that goes stale when access
		// changes, then applied with a fresh one.
		require.Contains(t, fails(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID,
			"visibility": "private"}), "Confirmation required")
		var prev UpdatedGroup
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "visibility": "private", "preview": true}, &prev)
		require.Equal(t, "closed", prev.CompanyAccess)
		require.Equal(t, "public", prev.FromVisibility)
		require.Equal(t, []ProjectImpact{{UUID: p1.UUID, Name: "P1", FromVisibility: "public", Visibility: "private"}}, prev.Projects)
		require.NotEmpty(t, prev.ConfirmationToken)
		var prev2 UpdatedGroup
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "visibility": "private", "preview": true}, &prev2)
		require.Equal(t, prev.ConfirmationToken, prev2.ConfirmationToken, "the token is derived from the state, not stored")
		ok(t, admin, "chorus_get_project_group", map[string]any{"groupUuid": g.UUID}, &det)
		require.Equal(t, "public", det.Visibility, "a preview changes nothing")
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "memberAction": "add",
			"userUuid": bob, "role": "editor"}, nil)
		require.Contains(t, fails(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID,
			"visibility": "private", "confirmationToken": prev.ConfirmationToken}), "Confirmation token is stale")
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "visibility": "private", "preview": true}, &prev)
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "visibility": "private",
			"confirmationToken": prev.ConfirmationToken}, &upd)
		require.Equal(t, "private", upd.Visibility)
		var pd ProjectDetail
		ok(t, bobS, "chorus_get_project", map[string]any{"projectUuid": p1.UUID}, &pd)
		require.Equal(t, "private", pd.Visibility)
		require.Equal(t, "editor", pd.AccessLevel, "bob keeps access through his group role")

		// Moving a project into a private group: preview, confirmation, private.
		require.Contains(t, fails(t, admin, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p2.UUID,
			"groupUuid": h.UUID}), "Confirmation required")
		var mv MovedProject
		ok(t, admin, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p2.UUID, "groupUuid": h.UUID, "preview": true}, &mv)
		require.True(t, *mv.RequiresConfirmation)
		require.Equal(t, "private", mv.Visibility)
		require.Equal(t, "closed", mv.CompanyAccess)
		require.Contains(t, mv.Changes, RoleChange{UserUUID: bob, UserName: "bob@example.com", BeforeRole: "editor", AfterRole: "viewer"})
		ok(t, admin, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p2.UUID, "groupUuid": h.UUID,
			"confirmationToken": mv.ConfirmationToken}, &mv)
		require.Equal(t, h.UUID, *mv.GroupUUID)
		ok(t, bobS, "chorus_get_project", map[string]any{"projectUuid": p2.UUID}, &pd)
		require.Equal(t, "viewer", pd.AccessLevel)
		require.Equal(t, "Only project admins can manage this project",
			fails(t, bobS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p2.UUID, "removeFromGroup": true}))
		require.Equal(t, "Project or project group not found",
			fails(t, bobS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": store.NewUUID(), "removeFromGroup": true}))

		// Deleting: bob is no admin of the private group; deleting projects that hold tasks is
		// refused; without deleteProjects the projects stay, ungrouped.
		require.Equal(t, "Only group admins can manage this group",
			fails(t, bobS, "chorus_admin_delete_project_group", map[string]any{"groupUuid": g.UUID}))
		require.Contains(t, fails(t, admin, "chorus_admin_delete_project_group", map[string]any{"groupUuid": g.UUID,
			"deleteProjects": true}), "still hold 0 idea(s), 0 proposal(s) and 2 task(s)")
		// Each deletion is previewed first and applied with the preview's token (the abuse suite,
		// TestAbuseGroupDeleteNeedsAnAdminAndAConfirmation, holds the token's rules).
		deleteGroup := func(args map[string]any) DeletedGroup {
			t.Helper()
			var prev DeletedGroup
			ok(t, admin, "chorus_admin_delete_project_group", merge(args, map[string]any{"preview": true}), &prev)
			require.False(t, prev.Deleted)
			var done DeletedGroup
			ok(t, admin, "chorus_admin_delete_project_group", merge(args, map[string]any{"confirmationToken": prev.ConfirmationToken}), &done)
			require.True(t, done.Deleted)
			return done
		}
		done := deleteGroup(map[string]any{"groupUuid": h.UUID, "deleteProjects": true})
		require.Equal(t, "Project group "+h.UUID+" deleted", done.Summary)
		require.Equal(t, []DeletionProject{{UUID: p2.UUID, Name: "P2", Visibility: "private", Action: "deleted"}}, done.Projects)
		require.Equal(t, "Project not found", fails(t, admin, "chorus_get_project", map[string]any{"projectUuid": p2.UUID}))
		deleteGroup(map[string]any{"groupUuid": g.UUID})
		ok(t, admin, "chorus_get_project", map[string]any{"projectUuid": p1.UUID}, &pd)
		require.Nil(t, pd.GroupUUID)
		require.Equal(t, "Project not found", fails(t, bobS, "chorus_get_project", map[string]any{"projectUuid": p1.UUID}),
			"bob's access came from the deleted group")
	})
}

// Issue 19: a move's preview names its source group and lists every user whose level on the
// project changes, with the level before and after: users who reach a public project only
// through the company lose it when the move makes the project private, and are listed too. The
// keys are there when they are empty (null, []).
func TestMovePreviewListsEveryAccessChange(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		alice, err := e.st.EnsureUser(ctx, e.company, "alice@example.com", "")
		require.NoError(t, err)
		bob, err := e.st.EnsureUser(ctx, e.company, "bob@example.com", "")
		require.NoError(t, err)
		carol, err := e.st.EnsureUser(ctx, e.company, "carol@example.com", "")
		require.NoError(t, err)
		var pub, priv GroupView
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Open"}, &pub)
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Secret", "visibility": "private"}, &priv)
		ok(t, admin, "chorus_admin_update_project_group", map[string]any{"groupUuid": priv.UUID, "memberAction": "add",
			"userUuid": carol.UUID, "role": "editor"}, nil)
		var p CreatedProject
		ok(t, admin, "chorus_admin_create_project", map[string]any{"name": "Apollo"}, &p)
		_, err = e.st.SetProjectMember(ctx, e.company, p.UUID, bob.UUID, "viewer")
		require.NoError(t, err)

		raw := func(args map[string]any) map[string]json.RawMessage {
			res := call(t, admin, "chorus_admin_move_project_to_group", args)
			require.False(t, res.IsError, text(res))
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(text(res)), &m))
			return m
		}
		// Into a public group: nobody's level changes, and the preview says so in full.
		m := raw(map[string]any{"projectUuid": p.UUID, "groupUuid": pub.UUID, "preview": true})
		require.JSONEq(t, `null`, string(m["sourceGroupUuid"]), "the preview names the source group, null for none")
		require.JSONEq(t, `[]`, string(m["changes"]), "no change is an empty list")

		// Into a private group: the project becomes private.
		var mv MovedProject
		ok(t, admin, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p.UUID, "groupUuid": priv.UUID, "preview": true}, &mv)
		require.Nil(t, mv.SourceGroupUUID)
		require.ElementsMatch(t, []RoleChange{
			{UserUUID: alice.UUID, UserName: "alice@example.com", BeforeRole: "editor", AfterRole: "none"},
			{UserUUID: bob.UUID, UserName: "bob@example.com", BeforeRole: "editor", AfterRole: "viewer"},
		}, mv.Changes, "everyone who loses the company's access is listed; carol keeps editor through the group")
		require.True(t, *mv.RequiresConfirmation)

		// Applied, the answer says what changed, from where.
		ok(t, admin, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p.UUID, "groupUuid": priv.UUID,
			"confirmationToken": mv.ConfirmationToken}, &mv)
		require.Equal(t, priv.UUID, *mv.GroupUUID)
		require.Nil(t, mv.SourceGroupUUID)
		require.Len(t, mv.Changes, 2)
		var pd ProjectDetail
		ok(t, admin, "chorus_get_project", map[string]any{"projectUuid": p.UUID}, &pd)
		require.Equal(t, "private", pd.Visibility)

		// Out again: the source group is named; the project stays private, so nobody's level changes.
		m = raw(map[string]any{"projectUuid": p.UUID, "removeFromGroup": true, "preview": true})
		require.JSONEq(t, `"`+priv.UUID+`"`, string(m["sourceGroupUuid"]))
		require.JSONEq(t, `[{"userUuid":"`+carol.UUID+`","userName":"carol@example.com","beforeRole":"editor","afterRole":"none"}]`,
			string(m["changes"]), "carol's access came through the group")
	})
}

// merge returns a copy of a with b's keys added.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
