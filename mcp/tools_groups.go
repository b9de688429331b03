package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// Project groups (docs/rules.md §4.11, §6.5): plain records; visibility changes and moves that
// change anyone's access go through a preview and its confirmation token. The rules, previews
// and refusals are package app's (app/groups*.go); these tools map arguments and results.

// GroupView is a project group as chorus_admin_create_project_group, chorus_admin_update_project_group
// and chorus_get_project_groups show it.
type GroupView struct {
	UUID         string    `json:"uuid"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Visibility   string    `json:"visibility"`
	ProjectCount int       `json:"projectCount" jsonschema:"projects of the group you can see"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

func groupView(v store.GroupView) GroupView {
	return GroupView{UUID: v.UUID, Name: v.Name, Description: v.Description, Visibility: v.Visibility,
		ProjectCount: v.ProjectCount, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
}

// GroupIn names a group.
type GroupIn struct {
	GroupUUID UUID `json:"groupUuid"`
}

// ---- reads ----

// GroupList is chorus_get_project_groups' result.
type GroupList struct {
	Groups []GroupView `json:"groups"`
	Meta
	UngroupedCount int `json:"ungroupedCount" jsonschema:"projects you can see that are in no group"`
}

var getProjectGroups = tool[PageIn, GroupList]{
	Name: "chorus_get_project_groups", Title: "List project groups", Toolset: tsProjects, Perm: perm.Public, Effect: reads,
	Desc: "List the project groups you can see.",
	Run: func(ctx context.Context, d *Deps, call *Call, in PageIn) (GroupList, error) {
		page, size, offset := in.window(20)
		rows, total, ungrouped, err := d.app().ListGroups(ctx, call.Request, size, offset)
		if err != nil {
			return GroupList{}, err
		}
		out := make([]GroupView, len(rows))
		for i, r := range rows {
			out[i] = groupView(r)
			out[i].Name = clip(r.Name)
		}
		wrap := func(r []GroupView) any {
			return GroupList{Groups: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}, UngroupedCount: ungrouped}
		}
		out = fit(out, wrap)
		return wrap(out).(GroupList), nil
	},
}

// GroupProject is one project of chorus_get_project_group.
type GroupProject struct {
	UUID        string  `json:"uuid"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// GroupDetail is chorus_get_project_group's result.
type GroupDetail struct {
	GroupView
	Projects []GroupProject `json:"projects" jsonschema:"the group's projects you can see, most recently updated first"`
}

var getProjectGroup = tool[GroupIn, GroupDetail]{
	Name: "chorus_get_project_group", Title: "Get a project group", Toolset: tsProjects, Perm: perm.Public, Effect: reads,
	Desc: "Get a project group with the projects in it you can see.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GroupIn) (GroupDetail, error) {
		g, ps, err := d.app().GetGroup(ctx, call.Request, string(in.GroupUUID))
		if err != nil {
			return GroupDetail{}, err
		}
		out := GroupDetail{GroupView: groupView(*g), Projects: make([]GroupProject, len(ps))}
		for i, p := range ps {
			out.Projects[i] = GroupProject{UUID: p.UUID, Name: p.Name, Description: p.Description}
		}
		return out, nil
	},
}

// DashboardOut is chorus_get_group_dashboard's result.
type DashboardOut struct {
	Group          DashboardGroup      `json:"group"`
	Stats          DashboardStats      `json:"stats"`
	Projects       []DashboardProject  `json:"projects"`
	RecentActivity []DashboardActivity `json:"recentActivity" jsonschema:"the 20 newest activities of the group's projects you can see"`
}

// DashboardGroup names the group.
type DashboardGroup struct {
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// DashboardStats are the group's totals over the projects you can see.
type DashboardStats struct {
	ProjectCount    int `json:"projectCount"`
	TotalTasks      int `json:"totalTasks"`
	CompletedTasks  int `json:"completedTasks" jsonschema:"tasks done or closed"`
	CompletionRate  int `json:"completionRate" jsonschema:"percentage of tasks completed, rounded; 0 without tasks"`
	OpenIdeas       int `json:"openIdeas" jsonschema:"ideas open or elaborating"`
	ActiveProposals int `json:"activeProposals" jsonschema:"proposals in draft or pending"`
}

// DashboardProject is one project's line.
type DashboardProject struct {
	UUID           string `json:"uuid"`
	Name           string `json:"name"`
	Visibility     string `json:"visibility"`
	TaskCount      int    `json:"taskCount"`
	CompletionRate int    `json:"completionRate"`
}

// DashboardActivity is one recent activity.
type DashboardActivity struct {
	UUID        string     `json:"uuid"`
	ProjectUUID string     `json:"projectUuid"`
	ProjectName string     `json:"projectName"`
	TargetType  string     `json:"targetType"`
	TargetUUID  string     `json:"targetUuid"`
	Action      string     `json:"action"`
	Value       JSONObject `json:"value" jsonschema:"what the activity records (null when nothing)"`
	ActorType   string     `json:"actorType"`
	ActorUUID   string     `json:"actorUuid"`
	CreatedAt   time.Time  `json:"createdAt"`
}

var getGroupDashboard = tool[GroupIn, DashboardOut]{
	Name: "chorus_get_group_dashboard", Title: "Group dashboard", Toolset: tsProjects, Perm: perm.Public, Effect: reads,
	Desc: "A project group's progress: task totals, completion, open ideas, active proposals, recent activity.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GroupIn) (DashboardOut, error) {
		g, dash, err := d.app().GroupDashboard(ctx, call.Request, string(in.GroupUUID))
		if err != nil {
			return DashboardOut{}, err
		}
		out := DashboardOut{Group: DashboardGroup{UUID: g.UUID, Name: g.Name, Description: g.Description},
			Stats: DashboardStats{ProjectCount: len(dash.Projects), TotalTasks: dash.TotalTasks, CompletedTasks: dash.CompletedTasks,
				CompletionRate: store.CompletionRate(dash.CompletedTasks, dash.TotalTasks), OpenIdeas: dash.OpenIdeas,
				ActiveProposals: dash.ActiveProposals},
			Projects: make([]DashboardProject, len(dash.Projects)), RecentActivity: make([]DashboardActivity, len(dash.Recent))}
		for i, p := range dash.Projects {
			out.Projects[i] = DashboardProject{UUID: p.UUID, Name: p.Name, Visibility: p.Visibility, TaskCount: p.Tasks,
				CompletionRate: store.CompletionRate(p.Completed, p.Tasks)}
		}
		for i, a := range dash.Recent {
			out.RecentActivity[i] = DashboardActivity{UUID: a.UUID, ProjectUUID: a.ProjectUUID, ProjectName: a.ProjectName,
				TargetType: a.TargetType, TargetUUID: a.TargetUUID, Action: a.Action, Value: jsonValue(a.Value),
				ActorType: a.ActorType, ActorUUID: a.ActorUUID, CreatedAt: a.CreatedAt}
		}
		return out, nil
	},
}

// ---- writes ----

// CreateGroupIn is chorus_admin_create_project_group's input.
type CreateGroupIn struct {
	Name        string  `json:"name" chorus:"minLength=1;maxLength=200"`
	Description *string `json:"description,omitempty"`
	Visibility  string  `json:"visibility,omitempty" jsonschema:"default public: every company member sees it" chorus:"enum=public|private"`
}

var adminCreateProjectGroup = tool[CreateGroupIn, GroupView]{
	Name: "chorus_admin_create_project_group", Title: "Create a project group", Toolset: tsProjects, Perm: perm.ProjectWrite, Effect: writes,
	Desc: "Create a project group; your owner becomes its admin.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateGroupIn) (GroupView, error) {
		desc := ""
		if in.Description != nil {
			desc = *in.Description
		}
		g, err := d.app().CreateGroup(ctx, call.Request, app.NewGroup{Name: in.Name, Description: desc, Visibility: in.Visibility})
		if err != nil {
			return GroupView{}, err
		}
		return groupView(*g), nil
	},
}

// UpdateGroupIn is chorus_admin_update_project_group's input.
type UpdateGroupIn struct {
	GroupUUID         UUID    `json:"groupUuid"`
	Name              *string `json:"name,omitempty" chorus:"minLength=1;maxLength=200"`
	Description       *string `json:"description,omitempty"`
	Visibility        string  `json:"visibility,omitempty" chorus:"enum=public|private"`
	Preview           bool    `json:"preview,omitempty" jsonschema:"with visibility: show the change and its confirmationToken, changing nothing"`
	ConfirmationToken string  `json:"confirmationToken,omitempty" chorus:"maxLength=100"`
	MemberAction      string  `json:"memberAction,omitempty" jsonschema:"with userUuid (and role to add or update)" chorus:"enum=add|update|remove"`
	UserUUID          *UUID   `json:"userUuid,omitempty"`
	Role              string  `json:"role,omitempty" chorus:"enum=viewer|editor|admin"`
}

// UpdatedGroup is chorus_admin_update_project_group's result: the group after the change, or
// (preview) what a visibility change would do, with its confirmation token.
type UpdatedGroup struct {
	UUID              string          `json:"uuid,omitempty"`
	Name              string          `json:"name,omitempty"`
	Description       *string         `json:"description,omitempty"`
	Visibility        string          `json:"visibility" jsonschema:"the group's visibility (preview: the one asked)"`
	ProjectCount      *int            `json:"projectCount,omitempty"`
	CreatedAt         *time.Time      `json:"createdAt,omitempty"`
	UpdatedAt         *time.Time      `json:"updatedAt,omitempty"`
	GroupUUID         string          `json:"groupUuid,omitempty" jsonschema:"preview: the group"`
	FromVisibility    string          `json:"fromVisibility,omitempty" jsonschema:"preview: the visibility now"`
	CompanyAccess     string          `json:"companyAccess,omitempty" jsonschema:"preview: opened, closed or unchanged"`
	Projects          []ProjectImpact `json:"projects,omitempty" jsonschema:"preview: each project's visibility before and after"`
	Summary           string          `json:"summary,omitempty" jsonschema:"preview: what the change does, in a sentence"`
	ConfirmationToken string          `json:"confirmationToken,omitempty" jsonschema:"preview: pass it back to apply this very change"`
}

// ProjectImpact is one project's visibility before and after a change.
type ProjectImpact struct {
	UUID           string `json:"uuid"`
	Name           string `json:"name"`
	FromVisibility string `json:"fromVisibility"`
	Visibility     string `json:"visibility"`
}

var adminUpdateProjectGroup = tool[UpdateGroupIn, UpdatedGroup]{
	Name: "chorus_admin_update_project_group", Title: "Update a project group", Toolset: tsProjects, Perm: perm.ProjectWrite, Effect: writes,
	Strict: true,
	Desc: "Change a group's name and description, its visibility (preview, then confirmationToken) or one " +
		"member; one per call.",
	Run: func(ctx context.Context, d *Deps, call *Call, in UpdateGroupIn) (UpdatedGroup, error) {
		u := app.GroupUpdate{GroupUUID: string(in.GroupUUID), Name: in.Name, Description: in.Description,
			Preview: in.Preview, Token: in.ConfirmationToken}
		if in.Visibility != "" {
			u.Visibility = &in.Visibility
		}
		edits := in.Name != nil || in.Description != nil || in.Visibility != ""
		if in.MemberAction != "" {
			if edits {
				return UpdatedGroup{}, invalid("memberAction cannot be combined with name, description or visibility; " +
					"send them in separate calls (nothing was changed)")
			}
			if in.UserUUID == nil {
				return UpdatedGroup{}, invalid("userUuid is required with memberAction")
			}
			if in.Role == "" && in.MemberAction != "remove" {
				return UpdatedGroup{}, invalid("role is required to %s a member: viewer, editor or admin", in.MemberAction)
			}
			u.Member = &app.MemberAction{Action: in.MemberAction, UserUUID: string(*in.UserUUID), Role: in.Role}
		} else if !edits {
			return UpdatedGroup{}, invalid("provide name, description, visibility or memberAction")
		}
		if (in.Preview || in.ConfirmationToken != "") && in.Visibility == "" {
			return UpdatedGroup{}, invalid("preview and confirmationToken go with a visibility change; give visibility " +
				"(renames and member changes apply directly)")
		}
		g, p, err := d.app().UpdateGroup(ctx, call.Request, u)
		if err != nil {
			return UpdatedGroup{}, err
		}
		if p != nil {
			out := UpdatedGroup{GroupUUID: p.GroupUUID, FromVisibility: p.FromVisibility, Visibility: p.Visibility,
				CompanyAccess: p.CompanyAccess, Summary: p.Summary, ConfirmationToken: p.Token, Projects: []ProjectImpact{}}
			for _, pi := range p.Projects {
				out.Projects = append(out.Projects, ProjectImpact(pi))
			}
			return out, nil
		}
		return UpdatedGroup{UUID: g.UUID, Name: g.Name, Description: &g.Description, Visibility: g.Visibility,
			ProjectCount: &g.ProjectCount, CreatedAt: &g.CreatedAt, UpdatedAt: &g.UpdatedAt}, nil
	},
}

// DeleteGroupIn is chorus_admin_delete_project_group's input.
type DeleteGroupIn struct {
	GroupUUID         UUID   `json:"groupUuid"`
	DeleteProjects    bool   `json:"deleteProjects,omitempty" jsonschema:"also delete its projects (without ideas, proposals or tasks) and their documents"`
	Preview           bool   `json:"preview,omitempty" jsonschema:"show the deletion and its confirmationToken, deleting nothing"`
	ConfirmationToken string `json:"confirmationToken,omitempty" chorus:"maxLength=100"`
}

// DeletedGroup is chorus_admin_delete_project_group's result: what the deletion does (a
// preview, with its token) or did.
type DeletedGroup struct {
	GroupUUID         string            `json:"groupUuid"`
	Name              string            `json:"name"`
	DeleteProjects    bool              `json:"deleteProjects"`
	Projects          []DeletionProject `json:"projects" jsonschema:"each project and its action: deleted or ungrouped"`
	Members           int               `json:"members" jsonschema:"users losing their role on the group"`
	Summary           string            `json:"summary"`
	Deleted           bool              `json:"deleted" jsonschema:"false for a preview"`
	ConfirmationToken string            `json:"confirmationToken,omitempty" jsonschema:"preview: pass it back to apply this very deletion"`
}

// DeletionProject is one project of a group being deleted: "deleted" (with its documents, their
// comments and its activities) or "ungrouped".
type DeletionProject struct {
	UUID       string `json:"uuid"`
	Name       string `json:"name"`
	Visibility string `json:"visibility"`
	Action     string `json:"action"`
	Documents  int    `json:"documents"`
}

var adminDeleteProjectGroup = tool[DeleteGroupIn, DeletedGroup]{
	Name: "chorus_admin_delete_project_group", Title: "Delete a project group", Toolset: tsProjects, Perm: perm.ProjectAdmin,
	Effect: destroys, Strict: true,
	Desc: "Delete a project group (group admin): preview first, then confirmationToken. Its projects become " +
		"ungrouped, or deleted with deleteProjects if they hold no work.",
	Run: func(ctx context.Context, d *Deps, call *Call, in DeleteGroupIn) (DeletedGroup, error) {
		if in.Preview && in.ConfirmationToken != "" {
			return DeletedGroup{}, invalid("preview and confirmationToken do not go together: preview first, then " +
				"apply with the token it returned (nothing was changed)")
		}
		p, err := d.app().DeleteGroup(ctx, call.Request, app.GroupDeletion{GroupUUID: string(in.GroupUUID),
			DeleteProjects: in.DeleteProjects, Preview: in.Preview, Token: in.ConfirmationToken})
		if err != nil {
			return DeletedGroup{}, err
		}
		out := DeletedGroup{GroupUUID: p.GroupUUID, Name: p.Name, DeleteProjects: p.DeleteProjects,
			Projects: make([]DeletionProject, len(p.Projects)), Members: p.Members, Summary: p.Summary, Deleted: !in.Preview,
			ConfirmationToken: p.Token}
		for i, pd := range p.Projects {
			out.Projects[i] = DeletionProject(pd)
		}
		if !in.Preview {
			out.Summary = fmt.Sprintf("Project group %s deleted", p.GroupUUID)
		}
		return out, nil
	},
}

// MoveProjectIn is chorus_admin_move_project_to_group's input.
type MoveProjectIn struct {
	ProjectUUID       UUID   `json:"projectUuid"`
	GroupUUID         *UUID  `json:"groupUuid,omitempty"`
	RemoveFromGroup   bool   `json:"removeFromGroup,omitempty" jsonschema:"true: take the project out of its group"`
	Preview           bool   `json:"preview,omitempty" jsonschema:"show the move and its confirmationToken, changing nothing"`
	ConfirmationToken string `json:"confirmationToken,omitempty" chorus:"maxLength=100"`
}

// MovedProject is chorus_admin_move_project_to_group's result: the project after the move, or
// (preview) what the move would do to everyone's access, with its confirmation token.
type MovedProject struct {
	UUID                 string       `json:"uuid,omitempty"`
	ProjectUUID          string       `json:"projectUuid,omitempty" jsonschema:"preview: the project"`
	Name                 string       `json:"name"`
	SourceGroupUUID      *string      `json:"sourceGroupUuid" jsonschema:"its group before the move (null: none)"`
	GroupUUID            *string      `json:"groupUuid" jsonschema:"its group after the move (null: none)"`
	FromVisibility       string       `json:"fromVisibility,omitempty" jsonschema:"preview: its visibility now"`
	Visibility           string       `json:"visibility,omitempty" jsonschema:"preview: its visibility after the move"`
	CompanyAccess        string       `json:"companyAccess,omitempty" jsonschema:"preview: closed when the project becomes private, else unchanged"`
	Changes              []RoleChange `json:"changes" jsonschema:"every user whose level on the project changes, before and after"`
	Summary              string       `json:"summary,omitempty"`
	RequiresConfirmation *bool        `json:"requiresConfirmation,omitempty" jsonschema:"preview: whether applying needs the confirmationToken"`
	ConfirmationToken    string       `json:"confirmationToken,omitempty"`
}

// RoleChange is one user's level on the project before and after a move (none, viewer, editor, admin).
type RoleChange struct {
	UserUUID   string `json:"userUuid"`
	UserName   string `json:"userName"`
	BeforeRole string `json:"beforeRole"`
	AfterRole  string `json:"afterRole"`
}

var adminMoveProjectToGroup = tool[MoveProjectIn, MovedProject]{
	Name: "chorus_admin_move_project_to_group", Title: "Move a project to a group", Toolset: tsProjects, Perm: perm.ProjectWrite, Effect: writes,
	Desc: "Move a project into a group, or out (removeFromGroup). Preview first; a change of anyone's access " +
		"needs its confirmationToken.",
	Run: func(ctx context.Context, d *Deps, call *Call, in MoveProjectIn) (MovedProject, error) {
		if (in.GroupUUID != nil) == in.RemoveFromGroup {
			return MovedProject{}, invalid("give groupUuid (the target group) or removeFromGroup: true (no group), one of them")
		}
		p, prev, err := d.app().MoveProject(ctx, call.Request, app.ProjectMove{ProjectUUID: string(in.ProjectUUID),
			GroupUUID: (*string)(in.GroupUUID), Preview: in.Preview, Token: in.ConfirmationToken})
		if err != nil {
			return MovedProject{}, err
		}
		changes := []RoleChange{}
		for _, c := range prev.Changes {
			changes = append(changes, RoleChange{UserUUID: c.UserUUID, UserName: c.UserName, BeforeRole: c.Before.String(),
				AfterRole: c.After.String()})
		}
		if in.Preview {
			out := MovedProject{ProjectUUID: prev.ProjectUUID, Name: prev.Name, SourceGroupUUID: prev.SourceGroupUUID,
				GroupUUID: prev.GroupUUID, FromVisibility: prev.FromVisibility, Visibility: prev.Visibility,
				CompanyAccess: prev.CompanyAccess, Changes: changes, Summary: prev.Summary,
				RequiresConfirmation: &prev.RequiresConfirmation, ConfirmationToken: prev.Token}
			return out, nil
		}
		if deref(prev.SourceGroupUUID) == deref(p.GroupUUID) {
			changes = []RoleChange{} // it was there already: nothing changed
		}
		return MovedProject{UUID: p.UUID, Name: p.Name, SourceGroupUUID: prev.SourceGroupUUID, GroupUUID: p.GroupUUID,
			Changes: changes}, nil
	},
}

// jsonValue decodes an activity's stored JSON value for output (nil when absent or unreadable).
func jsonValue(raw []byte) JSONObject {
	if len(raw) == 0 {
		return nil
	}
	var v JSONObject
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}
