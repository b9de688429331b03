package mcp

import (
	"context"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Played as an outsider after issue 21 moved group rights, confirmation tokens and their
// refusals from store into app (docs/rules.md §4.11, §6.5): a token binds its caller and its
// change, and a caller without an explicit group admin role changes no member, visibility or
// group, whatever the group's visibility. Each refusal changes nothing.

// TestOutsiderTokenBindsCallerAndChange: a confirmation token previewed by one caller, or for
// one change, applies to no other.
func TestOutsiderTokenBindsCallerAndChange(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		alice, aliceS := e.userAgent("alice@example.com", perm.AdminAgent)
		// alice's second agent: the same owner, so the same rights, yet another caller.
		_, key, err := e.st.CreateAgent(context.Background(), store.NewAgent{CompanyUUID: e.company, Name: "Alice's other",
			Roles: []string{perm.AdminAgent}, OwnerUUID: &alice})
		require.NoError(t, err)
		alice2S := e.client(key)
		_, carolS := e.userAgent("carol@example.com", perm.AdminAgent)
		bob, bobS := e.userAgent("bob@example.com", perm.AdminAgent)

		var g, other GroupView
		ok(t, aliceS, "chorus_admin_create_project_group", map[string]any{"name": "Team"}, &g)
		ok(t, aliceS, "chorus_admin_create_project_group", map[string]any{"name": "Other"}, &other)
		// bob becomes an explicit admin of both: he may change them, but only with his own previews.
		for _, id := range []string{g.UUID, other.UUID} {
			ok(t, aliceS, "chorus_admin_add_project_group_member", map[string]any{"groupUuid": id, "userUuid": bob, "role": "admin"}, nil)
		}

		var prev UpdatedGroup
		ok(t, aliceS, "chorus_admin_update_project_group", map[string]any{"groupUuid": g.UUID, "visibility": "private",
			"preview": true}, &prev)
		require.NotEmpty(t, prev.ConfirmationToken)
		stale := "Confirmation token is stale"
		apply := map[string]any{"groupUuid": g.UUID, "visibility": "private", "confirmationToken": prev.ConfirmationToken}
		require.Contains(t, fails(t, bobS, "chorus_admin_update_project_group", apply), stale, "another owner's admin")
		require.Contains(t, fails(t, alice2S, "chorus_admin_update_project_group", apply), stale, "the same owner's other agent")
		require.Equal(t, "Only group admins can manage this group", fails(t, carolS, "chorus_admin_update_project_group", apply),
			"no admin: the rights answer before the token")
		require.Contains(t, fails(t, aliceS, "chorus_admin_update_project_group", map[string]any{"groupUuid": other.UUID,
			"visibility": "private", "confirmationToken": prev.ConfirmationToken}), stale, "another group")

		// The same token as a move's or a deletion's: stale.
		var p CreatedProject
		ok(t, aliceS, "chorus_admin_create_project", map[string]any{"name": "P", "visibility": "private"}, &p)
		require.Contains(t, fails(t, aliceS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p.UUID,
			"groupUuid": g.UUID, "confirmationToken": prev.ConfirmationToken}), stale)
		require.Contains(t, fails(t, aliceS, "chorus_admin_delete_project_group", map[string]any{"groupUuid": g.UUID,
			"confirmationToken": prev.ConfirmationToken}), stale)

		// A deletion previewed as "keep the projects" does not delete them, and bob cannot apply
		// alice's deletion preview.
		var del DeletedGroup
		ok(t, aliceS, "chorus_admin_delete_project_group", map[string]any{"groupUuid": other.UUID, "preview": true}, &del)
		require.Contains(t, fails(t, aliceS, "chorus_admin_delete_project_group", map[string]any{"groupUuid": other.UUID,
			"deleteProjects": true, "confirmationToken": del.ConfirmationToken}), stale)
		require.Contains(t, fails(t, bobS, "chorus_admin_delete_project_group", map[string]any{"groupUuid": other.UUID,
			"confirmationToken": del.ConfirmationToken}), stale)

		// A move previewed for one project and group applies to no other project or group.
		var q CreatedProject
		ok(t, aliceS, "chorus_admin_create_project", map[string]any{"name": "Q", "visibility": "private"}, &q)
		var mv MovedProject
		ok(t, aliceS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p.UUID, "groupUuid": other.UUID,
			"preview": true}, &mv)
		require.True(t, mv.RequiresConfirmation != nil && *mv.RequiresConfirmation, "bob gains access through the group")
		require.Contains(t, fails(t, aliceS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": q.UUID,
			"groupUuid": other.UUID, "confirmationToken": mv.ConfirmationToken}), stale)
		require.Contains(t, fails(t, aliceS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p.UUID,
			"groupUuid": g.UUID, "confirmationToken": mv.ConfirmationToken}), stale)
		require.Contains(t, fails(t, bobS, "chorus_admin_move_project_to_group", map[string]any{"projectUuid": p.UUID,
			"groupUuid": other.UUID, "confirmationToken": mv.ConfirmationToken}), "Project or project group not found",
			"bob does not see the private project")

		// Nothing changed: both groups public, both projects ungrouped.
		var det GroupDetail
		for _, id := range []string{g.UUID, other.UUID} {
			ok(t, aliceS, "chorus_get_project_group", map[string]any{"groupUuid": id}, &det)
			require.Equal(t, "public", det.Visibility)
			require.Empty(t, det.Projects)
		}
	})
}

// TestOutsiderGroupNeedsAnExplicitAdmin: on a public group everyone is at least editor, yet no
// member, visibility or deletion change passes without an explicit admin role; on a private group
// an outsider finds nothing, and a viewer member is refused. Nothing changes.
func TestOutsiderGroupNeedsAnExplicitAdmin(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		_, aliceS := e.userAgent("alice@example.com", perm.AdminAgent)
		bob, bobS := e.userAgent("bob@example.com", perm.AdminAgent)
		carol, carolS := e.userAgent("carol@example.com", perm.AdminAgent)

		var pub, priv GroupView
		ok(t, aliceS, "chorus_admin_create_project_group", map[string]any{"name": "Open"}, &pub)
		ok(t, aliceS, "chorus_admin_create_project_group", map[string]any{"name": "Closed", "visibility": "private"}, &priv)
		ok(t, aliceS, "chorus_admin_add_project_group_member", map[string]any{"groupUuid": priv.UUID, "userUuid": carol,
			"role": "viewer"}, nil)
		var pp CreatedProject
		ok(t, aliceS, "chorus_admin_create_project", map[string]any{"name": "Inside", "groupUuid": priv.UUID}, &pp)

		attempts := func(group string) []struct {
			tool string
			args map[string]any
		} {
			return []struct {
				tool string
				args map[string]any
			}{
				{"chorus_admin_add_project_group_member", map[string]any{"groupUuid": group, "userUuid": bob, "role": "admin"}},
				{"chorus_admin_add_project_group_member", map[string]any{"groupUuid": group, "userUuid": carol, "role": "admin"}},
				{"chorus_admin_remove_project_group_member", map[string]any{"groupUuid": group, "userUuid": carol}},
				{"chorus_admin_update_project_group", map[string]any{"groupUuid": group, "memberAction": "add", "userUuid": bob,
					"role": "admin"}},
				{"chorus_admin_update_project_group", map[string]any{"groupUuid": group, "visibility": "private", "preview": true}},
				{"chorus_admin_update_project_group", map[string]any{"groupUuid": group, "visibility": "public", "preview": true}},
				{"chorus_admin_delete_project_group", map[string]any{"groupUuid": group, "preview": true}},
			}
		}
		// bob on the public group: editor floor, no admin.
		for _, a := range attempts(pub.UUID) {
			if a.args["visibility"] == "public" {
				continue // no change of visibility: not a management action
			}
			require.Equal(t, "Only group admins can manage this group", fails(t, bobS, a.tool, a.args), "%s %v", a.tool, a.args)
		}
		// bob on the private group: it does not exist for him.
		for _, a := range attempts(priv.UUID) {
			require.Equal(t, "Project group not found", fails(t, bobS, a.tool, a.args), "%s %v", a.tool, a.args)
		}
		require.Equal(t, "Project group not found", fails(t, bobS, "chorus_list_project_group_members",
			map[string]any{"groupUuid": priv.UUID}))
		require.Equal(t, "Project or project group not found", fails(t, bobS, "chorus_admin_move_project_to_group",
			map[string]any{"projectUuid": pp.UUID, "removeFromGroup": true, "preview": true}))
		// carol, a viewer of the private group: she sees it and its project, and changes nothing.
		for _, a := range attempts(priv.UUID) {
			if a.args["visibility"] == "private" {
				continue // no change of visibility
			}
			require.Equal(t, "Only group admins can manage this group", fails(t, carolS, a.tool, a.args), "%s %v", a.tool, a.args)
		}
		require.Equal(t, "Only project admins can manage this project", fails(t, carolS, "chorus_admin_move_project_to_group",
			map[string]any{"projectUuid": pp.UUID, "removeFromGroup": true, "preview": true}))
		require.Equal(t, "Only project admins can manage this project", fails(t, carolS, "chorus_admin_add_project_member",
			map[string]any{"projectUuid": pp.UUID, "userUuid": carol, "role": "admin"}))

		// Nothing changed.
		var ms GroupMembersOut
		ok(t, aliceS, "chorus_list_project_group_members", map[string]any{"groupUuid": priv.UUID}, &ms)
		roles := map[string]string{}
		for _, m := range ms.Members {
			roles[m.UserUUID] = m.Role
		}
		require.Equal(t, "viewer", roles[carol])
		require.NotContains(t, roles, bob)
		ok(t, aliceS, "chorus_list_project_group_members", map[string]any{"groupUuid": pub.UUID}, &ms)
		require.Len(t, ms.Members, 1, "alice alone")
		var det GroupDetail
		ok(t, aliceS, "chorus_get_project_group", map[string]any{"groupUuid": priv.UUID}, &det)
		require.Equal(t, "private", det.Visibility)
		require.Len(t, det.Projects, 1)
	})
}

// TestOutsiderVaultAnswersLikeNothing: bob's agents name alice's private vault's proposal, task
// and document through the use cases issue 21 moved into app (claim-next's scope, references,
// comments, a task change in someone else's session, an assignment). Each answer is the one a
// uuid that does not exist gets, and nothing of the vault changes.
func TestOutsiderVaultAnswersLikeNothing(t *testing.T) {
	forEachDialectWithFlows(t, func(t *testing.T, e *env) {
		w := newAbuseWorld(t, e)
		_, proposal, doc, task := w.backlogIdeaInVault(t, w.aPM, "Vault idea")
		unknown := store.NewUUID()
		same := func(s *mcpsdk.ClientSession, tool string, args func(id string) map[string]any, real string) {
			t.Helper()
			// A refusal may quote the uuid it was given; the rest must not differ.
			require.Equal(t, strings.ReplaceAll(fails(t, s, tool, args(unknown)), unknown, "<uuid>"),
				strings.ReplaceAll(fails(t, s, tool, args(real)), real, "<uuid>"), tool)
		}

		// Claim-next scoped to the vault's proposal, alone or with bob's own project.
		same(w.bDev.s, "chorus_claim_next_task", func(id string) map[string]any {
			return map[string]any{"proposalUuids": []string{id}}
		}, proposal)
		same(w.bDev.s, "chorus_claim_next_task", func(id string) map[string]any {
			return map[string]any{"projectUuid": w.backlog, "proposalUuids": []string{id}}
		}, proposal)
		// Alice's own developer: the vault's proposal does not lie in the backlog.
		require.Equal(t, "Proposal not found", fails(t, w.aDev.s, "chorus_claim_next_task",
			map[string]any{"projectUuid": w.backlog, "proposalUuids": []string{proposal}}))

		// References and comments on the vault's entities.
		for _, target := range []struct{ typ, id string }{{"task", task}, {"proposal", proposal}} {
			same(w.bPM.s, "chorus_add_reference", func(id string) map[string]any {
				return map[string]any{"targetType": target.typ, "targetUuid": id, "type": "docs", "url": "https://example.com/x",
					"title": "X"}
			}, target.id)
			same(w.bPM.s, "chorus_get_references", func(id string) map[string]any {
				return map[string]any{"targetType": target.typ, "targetUuid": id}
			}, target.id)
			same(w.bPM.s, "chorus_add_comment", func(id string) map[string]any {
				return map[string]any{"targetType": target.typ, "targetUuid": id, "content": "hi"}
			}, target.id)
			same(w.bPM.s, "chorus_get_comments", func(id string) map[string]any {
				return map[string]any{"targetType": target.typ, "targetUuid": id}
			}, target.id)
		}
		same(w.bPM.s, "chorus_add_comment", func(id string) map[string]any {
			return map[string]any{"targetType": "document", "targetUuid": id, "content": "hi"}
		}, doc)

		// A vault task reported on, assigned or checked in to by bob's agents.
		same(w.bDev.s, "chorus_report_work", func(id string) map[string]any {
			return map[string]any{"taskUuid": id, "report": "done"}
		}, task)
		same(w.bPM.s, "chorus_pm_assign_task", func(id string) map[string]any {
			return map[string]any{"taskUuid": id, "agentUuid": w.bDev.uuid}
		}, task)
		var s SessionView
		ok(t, w.bDev.s, "chorus_create_session", map[string]any{"name": "bob's"}, &s)
		same(w.bDev.s, "chorus_session_checkin_task", func(id string) map[string]any {
			return map[string]any{"sessionUuid": s.UUID, "taskUuid": id}
		}, task)

		// Alice's developer cannot work in bob's session: it answers like no session.
		ok(t, w.aDev.s, "chorus_claim_task", map[string]any{"taskUuid": task}, nil)
		same(w.aDev.s, "chorus_report_work", func(id string) map[string]any {
			return map[string]any{"taskUuid": task, "report": "done", "sessionUuid": id}
		}, s.UUID)
		// An assignment to an agent whose owner cannot edit the vault is refused.
		require.Contains(t, fails(t, w.aAdmin.s, "chorus_pm_assign_task", map[string]any{"taskUuid": task,
			"agentUuid": w.bDev.uuid}), "cannot work in this task's project")

		// Nothing of the vault changed: its task has no reference, no comment, alice's dev holds it.
		var tv TaskView
		ok(t, w.aAdmin.s, "chorus_get_task", map[string]any{"taskUuid": task}, &tv)
		require.Zero(t, tv.ReferenceCount)
		require.Zero(t, tv.CommentCount)
		require.NotNil(t, tv.Assignee)
		w.requireHiddenFromBob(t, proposal, doc, task)
	})
}
