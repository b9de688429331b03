package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// chorus_pm_assign_idea (issue 19, upstream parity): idea:admin; to an agent holding idea:write
// or a user of the company, who can edit the project; the assignee is notified; an idea
// workflow update with requestId exactly once, tried as an outsider would.
func TestAssignIdea(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startEnv(t, dialect, envOptions{flows: true})
			ctx := context.Background()
			admin := e.client(e.adminKey)
			pm := e.member("PM", e.owner, perm.PMAgent)
			dev := e.member("Dev", e.owner, perm.DeveloperAgent)
			project := createProject(t, admin, "Apollo")
			idea := createIdea(t, pm.s, project, "Single sign-on", nil)

			require.Equal(t, "Tool chorus_pm_assign_idea not found", fails(t, pm.s, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": idea, "assigneeType": "agent", "assigneeUuid": pm.uuid}), "idea:write is not enough")
			require.Equal(t, `Agent "Dev" does not have idea:write permission`, fails(t, admin, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": idea, "assigneeType": "agent", "assigneeUuid": dev.uuid}))
			require.Equal(t, "Target Agent not found", fails(t, admin, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": idea, "assigneeType": "agent", "assigneeUuid": store.NewUUID()}))
			require.Equal(t, "Target User not found", fails(t, admin, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": idea, "assigneeType": "user", "assigneeUuid": pm.uuid}), "an agent is not a user")
			require.Equal(t, "Idea not found", fails(t, admin, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": store.NewUUID(), "assigneeType": "agent", "assigneeUuid": pm.uuid}))

			// Assigned to the PM agent: the open idea moves to elaborating; a retry changes nothing.
			assign := map[string]any{"ideaUuid": idea, "assigneeType": "agent", "assigneeUuid": pm.uuid, "requestId": "a1"}
			e.faults.FailAfterCommit("ApplyIdeaChange", 1) // the assignment's write loses its acknowledgement
			var v IdeaView
			ok(t, admin, "chorus_pm_assign_idea", assign, &v)
			require.Equal(t, "elaborating", v.Status)
			require.Equal(t, "agent", v.Assignee.Type)
			require.Equal(t, pm.uuid, v.Assignee.UUID)
			require.Equal(t, "Admin Agent", v.Assignee.AssignedBy.Name)
			ok(t, admin, "chorus_pm_assign_idea", assign, &v)
			require.Equal(t, 1, activityCount(t, e.st, idea, "assigned"))
			require.Equal(t, 1, e.faults.Injected("ApplyIdeaChange"))
			requireEventually(t, func() bool { return len(notes(t, e, "agent", pm.uuid)) == 1 }, "the assignee is notified once")
			n := notes(t, e, "agent", pm.uuid)[0]
			require.Equal(t, "idea_claimed", n.Action)
			require.Equal(t, `Admin Agent assigned idea "Single sign-on" to PM`, n.Message)
			// The assignee works it: elaboration is the assignee's.
			ok(t, pm.s, "chorus_pm_start_elaboration", map[string]any{"ideaUuid": idea, "depth": "minimal", "questions": twoQuestions()[:1]}, nil)

			// Taken over by a user of the company, whatever its status.
			bob, err := e.st.EnsureUser(ctx, e.company, "bob@example.com", "Bob")
			require.NoError(t, err)
			ok(t, admin, "chorus_pm_assign_idea", map[string]any{"ideaUuid": idea, "assigneeType": "user", "assigneeUuid": bob.UUID}, &v)
			require.Equal(t, "elaborating", v.Status)
			require.Equal(t, store.ActorRef{Type: "user", UUID: bob.UUID, Name: "Bob"}, store.ActorRef{Type: v.Assignee.Type, UUID: v.Assignee.UUID, Name: v.Assignee.Name})
			require.Equal(t, 2, activityCount(t, e.st, idea, "assigned"))

			// A private project: its outsiders find nothing, its viewers may not assign, and nobody
			// who cannot edit it may be given its ideas.
			priv := createPrivateProject(t, admin, "Vault")
			hidden := createIdea(t, admin, priv, "Secret", nil)
			outsider := e.otherOwnersAgent("Outsider", perm.AdminAgent)
			for _, id := range []string{hidden, store.NewUUID()} {
				require.Equal(t, "Idea not found", fails(t, outsider, "chorus_pm_assign_idea",
					map[string]any{"ideaUuid": id, "assigneeType": "user", "assigneeUuid": e.owner}))
			}
			viewerUser, viewer := e.userAgent("viewer@example.com", perm.AdminAgent)
			_, err = e.st.SetProjectMember(ctx, e.company, priv, viewerUser, "viewer")
			require.NoError(t, err)
			require.Equal(t, "Insufficient project access", fails(t, viewer, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": hidden, "assigneeType": "user", "assigneeUuid": e.owner}))
			require.Contains(t, fails(t, admin, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": hidden, "assigneeType": "user", "assigneeUuid": viewerUser}),
				`User "viewer@example.com" cannot work in this idea's project`)
			require.Contains(t, fails(t, admin, "chorus_pm_assign_idea",
				map[string]any{"ideaUuid": hidden, "assigneeType": "agent", "assigneeUuid": agentUUID(t, e, "Outsider")}),
				`Agent "Outsider" cannot work in this idea's project`)
			var hv IdeaView
			ok(t, admin, "chorus_get_idea", map[string]any{"ideaUuid": hidden}, &hv)
			require.Nil(t, hv.Assignee, "every refusal changed nothing")
			require.Zero(t, activityCount(t, e.st, hidden, "assigned"))
			e.requireAgreement()
		})
	}
}

// The member tools (issue 19, upstream parity) manage roles with the rights of chorus project
// member: a project's admins manage its members, a group's admins its members; the last admin
// stays; outsiders find nothing.
func TestMemberTools(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		admin := e.client(e.adminKey)
		priv := createPrivateProject(t, admin, "Vault")
		bob, bobS := e.userAgent("bob@example.com", perm.AdminAgent)
		carol, err := e.st.EnsureUser(ctx, e.company, "carol@example.com", "")
		require.NoError(t, err)
		outsider := e.otherOwnersAgent("Outsider", perm.AdminAgent)
		dev := e.client(e.agent("Dev", perm.DeveloperAgent))

		var ms ProjectMembersOut
		ok(t, admin, "chorus_list_project_members", map[string]any{"projectUuid": priv}, &ms)
		require.Len(t, ms.Members, 1)
		require.Equal(t, MemberView{UserUUID: e.owner, Name: ms.Members[0].Name, Email: ms.Members[0].Email, Role: "admin",
			Since: ms.Members[0].Since}, ms.Members[0])

		add := map[string]any{"projectUuid": priv, "userUuid": bob, "role": "editor", "requestId": "add-bob"}
		ok(t, admin, "chorus_admin_add_project_member", add, &ms)
		ok(t, admin, "chorus_admin_add_project_member", add, &ms)
		require.Len(t, ms.Members, 2)
		require.Equal(t, "editor", ms.Members[1].Role)
		require.Equal(t, "bob@example.com", *ms.Members[1].Email)

		// An editor may read the members but not change them; outsiders find nothing, exactly
		// as for a project that does not exist; a developer key has no member tool to call.
		ok(t, bobS, "chorus_list_project_members", map[string]any{"projectUuid": priv}, &ms)
		require.Equal(t, "Only project admins can manage this project", fails(t, bobS, "chorus_admin_add_project_member",
			map[string]any{"projectUuid": priv, "userUuid": bob, "role": "admin"}), "an editor cannot make itself admin")
		for _, p := range []string{priv, store.NewUUID()} {
			require.Equal(t, "Project not found", fails(t, outsider, "chorus_list_project_members", map[string]any{"projectUuid": p}))
			require.Equal(t, "Project not found", fails(t, outsider, "chorus_admin_add_project_member",
				map[string]any{"projectUuid": p, "userUuid": carol.UUID, "role": "admin"}))
			require.Equal(t, "Project not found", fails(t, outsider, "chorus_admin_remove_project_member",
				map[string]any{"projectUuid": p, "userUuid": e.owner}))
		}
		require.Equal(t, "Tool chorus_admin_add_project_member not found", fails(t, dev, "chorus_admin_add_project_member",
			map[string]any{"projectUuid": priv, "userUuid": carol.UUID, "role": "admin"}))
		require.Equal(t, "User not found", fails(t, admin, "chorus_admin_add_project_member",
			map[string]any{"projectUuid": priv, "userUuid": store.NewUUID(), "role": "viewer"}))
		require.Contains(t, fails(t, admin, "chorus_admin_add_project_member",
			map[string]any{"projectUuid": priv, "userUuid": carol.UUID, "role": "owner"}), "Input validation error: role must be one of")

		// The last admin stays, removed or demoted; with a second admin it may go.
		lastAdmin := "Cannot take away the last admin role of this project: make another user admin first"
		require.Equal(t, lastAdmin, fails(t, admin, "chorus_admin_remove_project_member", map[string]any{"projectUuid": priv, "userUuid": e.owner}))
		require.Equal(t, lastAdmin, fails(t, admin, "chorus_admin_add_project_member",
			map[string]any{"projectUuid": priv, "userUuid": e.owner, "role": "editor"}))
		ok(t, admin, "chorus_admin_add_project_member", map[string]any{"projectUuid": priv, "userUuid": bob, "role": "admin"}, nil)
		ok(t, bobS, "chorus_admin_remove_project_member", map[string]any{"projectUuid": priv, "userUuid": e.owner}, &ms)
		require.Len(t, ms.Members, 1)
		require.Equal(t, "Project not found", fails(t, admin, "chorus_list_project_members", map[string]any{"projectUuid": priv}),
			"the owner's agents lost the private project with the role")
		ok(t, bobS, "chorus_admin_remove_project_member", map[string]any{"projectUuid": priv, "userUuid": carol.UUID}, &ms)
		require.Len(t, ms.Members, 1, "removing a role nobody holds changes nothing")

		// Project groups: the same rules, through the group's own management rule.
		var g GroupView
		ok(t, admin, "chorus_admin_create_project_group", map[string]any{"name": "Secret", "visibility": "private"}, &g)
		var gm GroupMembersOut
		ok(t, admin, "chorus_admin_add_project_group_member", map[string]any{"groupUuid": g.UUID, "userUuid": bob, "role": "viewer"}, &gm)
		require.Len(t, gm.Members, 2)
		ok(t, bobS, "chorus_list_project_group_members", map[string]any{"groupUuid": g.UUID}, &gm)
		require.Equal(t, "Only group admins can manage this group", fails(t, bobS, "chorus_admin_add_project_group_member",
			map[string]any{"groupUuid": g.UUID, "userUuid": bob, "role": "admin"}))
		for _, id := range []string{g.UUID, store.NewUUID()} {
			require.Equal(t, "Project group not found", fails(t, outsider, "chorus_list_project_group_members", map[string]any{"groupUuid": id}))
			require.Equal(t, "Project group not found", fails(t, outsider, "chorus_admin_remove_project_group_member",
				map[string]any{"groupUuid": id, "userUuid": e.owner}))
		}
		require.Equal(t, "Cannot take away the last admin role of this project group: make another user admin first",
			fails(t, admin, "chorus_admin_remove_project_group_member", map[string]any{"groupUuid": g.UUID, "userUuid": e.owner}))
		ok(t, admin, "chorus_admin_remove_project_group_member", map[string]any{"groupUuid": g.UUID, "userUuid": bob}, &gm)
		require.Len(t, gm.Members, 1)
		require.Equal(t, "Project group not found", fails(t, bobS, "chorus_list_project_group_members", map[string]any{"groupUuid": g.UUID}))
	})
}
