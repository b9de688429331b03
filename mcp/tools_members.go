package mcp

import (
	"context"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Members of projects and project groups (docs/rules.md §6.3, §4.11). The rules are package
// app's and the same for the operators' chorus project member commands: project members are
// managed by the project's admins (app.GrantProjectRole), group members by the group's admins
// (app.SetGroupMember, as chorus_admin_update_project_group does); neither may take the last
// admin role away.

// MemberView is one user's role on a project or group.
type MemberView struct {
	UserUUID string    `json:"userUuid"`
	Name     *string   `json:"name"`
	Email    *string   `json:"email"`
	Role     string    `json:"role" jsonschema:"viewer, editor or admin"`
	Since    time.Time `json:"since"`
}

func memberViews(ms []store.MemberListing) []MemberView {
	out := make([]MemberView, 0, len(ms))
	for _, m := range ms {
		out = append(out, MemberView{UserUUID: m.UserUUID, Name: m.UserName, Email: m.UserEmail, Role: m.Role, Since: m.CreatedAt})
	}
	return out
}

// ProjectMembersOut is the member list of a project.
type ProjectMembersOut struct {
	ProjectUUID string       `json:"projectUuid"`
	Members     []MemberView `json:"members"`
}

// GroupMembersOut is the member list of a project group.
type GroupMembersOut struct {
	GroupUUID string       `json:"groupUuid"`
	Members   []MemberView `json:"members"`
}

// ProjectMemberIn names a project member.
type ProjectMemberIn struct {
	ProjectUUID UUID `json:"projectUuid"`
	UserUUID    UUID `json:"userUuid"`
}

// AddProjectMemberIn is chorus_admin_add_project_member's input.
type AddProjectMemberIn struct {
	ProjectMemberIn
	Role string `json:"role" chorus:"enum=viewer|editor|admin"`
}

// GroupMemberIn names a project group member.
type GroupMemberIn struct {
	GroupUUID UUID `json:"groupUuid"`
	UserUUID  UUID `json:"userUuid"`
}

// AddGroupMemberIn is chorus_admin_add_project_group_member's input.
type AddGroupMemberIn struct {
	GroupMemberIn
	Role string `json:"role" chorus:"enum=viewer|editor|admin"`
}

var listProjectMembers = tool[ProjectIn, ProjectMembersOut]{
	Name: "chorus_list_project_members", Title: "List a project's members", Toolset: tsProjects, Perm: perm.Public, Effect: reads,
	Desc: "List a project's members and their roles.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ProjectIn) (ProjectMembersOut, error) {
		p, ms, err := d.app().ProjectMembers(ctx, call.Agent(), string(in.ProjectUUID))
		if err != nil {
			return ProjectMembersOut{}, err
		}
		return ProjectMembersOut{ProjectUUID: p.UUID, Members: memberViews(ms)}, nil
	},
}

var adminAddProjectMember = tool[AddProjectMemberIn, ProjectMembersOut]{
	Name: "chorus_admin_add_project_member", Title: "Give a user a role on a project", Toolset: tsProjects, Perm: perm.ProjectWrite, Effect: writes,
	Idempotent: true,
	Desc:       "Give a user of your company a role on a project, or change it. Needs admin on the project.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddProjectMemberIn) (ProjectMembersOut, error) {
		p, _, _, err := d.app().GrantProjectRole(ctx, call.Agent(), string(in.ProjectUUID), string(in.UserUUID), in.Role)
		if err != nil {
			return ProjectMembersOut{}, err
		}
		return projectMembersAfter(ctx, d, p.UUID)
	},
}

var adminRemoveProjectMember = tool[ProjectMemberIn, ProjectMembersOut]{
	Name: "chorus_admin_remove_project_member", Title: "Take a user's role on a project away", Toolset: tsProjects, Perm: perm.ProjectWrite,
	Effect: destroys, Idempotent: true,
	Desc: "Take a user's role on a project away. Needs admin on the project; the last admin stays.",
	Run: func(ctx context.Context, d *Deps, call *Call, in ProjectMemberIn) (ProjectMembersOut, error) {
		p, _, _, err := d.app().RevokeProjectRole(ctx, call.Agent(), string(in.ProjectUUID), string(in.UserUUID))
		if err != nil {
			return ProjectMembersOut{}, err
		}
		return projectMembersAfter(ctx, d, p.UUID)
	},
}

// projectMembersAfter lists a project's members after a change its manager made (who may no
// longer see a private project it left).
func projectMembersAfter(ctx context.Context, d *Deps, projectUUID string) (ProjectMembersOut, error) {
	ms, err := d.Store.ListProjectMembers(ctx, projectUUID)
	if err != nil {
		return ProjectMembersOut{}, err
	}
	return ProjectMembersOut{ProjectUUID: projectUUID, Members: memberViews(ms)}, nil
}

var listProjectGroupMembers = tool[GroupIn, GroupMembersOut]{
	Name: "chorus_list_project_group_members", Title: "List a project group's members", Toolset: tsProjects, Perm: perm.Public, Effect: reads,
	Desc: "List a project group's members and their roles.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GroupIn) (GroupMembersOut, error) {
		g, ms, err := d.app().GroupMembers(ctx, call.Request, string(in.GroupUUID))
		if err != nil {
			return GroupMembersOut{}, err
		}
		return GroupMembersOut{GroupUUID: g.UUID, Members: memberViews(ms)}, nil
	},
}

var adminAddProjectGroupMember = tool[AddGroupMemberIn, GroupMembersOut]{
	Name: "chorus_admin_add_project_group_member", Title: "Give a user a role on a project group", Toolset: tsProjects, Perm: perm.ProjectWrite,
	Effect: writes, Idempotent: true,
	Desc: "Give a user of your company a role on every project of a group, or change it. Needs admin on the group.",
	Run: func(ctx context.Context, d *Deps, call *Call, in AddGroupMemberIn) (GroupMembersOut, error) {
		return groupMemberAction(ctx, d, call, in.GroupMemberIn, app.MemberAction{Action: "add", UserUUID: string(in.UserUUID), Role: in.Role})
	},
}

var adminRemoveProjectGroupMember = tool[GroupMemberIn, GroupMembersOut]{
	Name: "chorus_admin_remove_project_group_member", Title: "Take a user's role on a project group away", Toolset: tsProjects,
	Perm: perm.ProjectWrite, Effect: destroys, Idempotent: true,
	Desc: "Take a user's role on a project group away. Needs admin on the group; the last admin stays.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GroupMemberIn) (GroupMembersOut, error) {
		return groupMemberAction(ctx, d, call, in, app.MemberAction{Action: "remove", UserUUID: string(in.UserUUID)})
	},
}

// groupMemberAction applies a member action the way chorus_admin_update_project_group does and
// lists the group's members after it.
func groupMemberAction(ctx context.Context, d *Deps, call *Call, in GroupMemberIn, a app.MemberAction) (GroupMembersOut, error) {
	if err := d.app().SetGroupMember(ctx, call.Request, string(in.GroupUUID), a); err != nil {
		return GroupMembersOut{}, err
	}
	ms, err := d.Store.ListGroupMembers(ctx, string(in.GroupUUID))
	if err != nil {
		return GroupMembersOut{}, err
	}
	return GroupMembersOut{GroupUUID: string(in.GroupUUID), Members: memberViews(ms)}, nil
}
