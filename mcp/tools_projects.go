package mcp

import (
	"context"
	"time"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
)

// ---- chorus_checkin (docs/rules.md §4.1) ----

// NoInput is the input of tools that take no arguments.
type NoInput struct{}

// CheckinOut is chorus_checkin's result.
type CheckinOut struct {
	CheckinTime    time.Time                `json:"checkinTime"`
	Agent          CheckinAgent             `json:"agent"`
	ActiveProjects map[string]ActiveProject `json:"activeProjects" jsonschema:"projects with ideas assigned to you that are not done, keyed by project uuid; at most 10"`
	Notifications  NotificationSummary      `json:"notifications"`
	Sessions       []SessionView            `json:"sessions" jsonschema:"your active sessions, most recently active first; at most 20"`
	Toolsets       []ToolsetView            `json:"toolsets" jsonschema:"every toolset, and whether this connection selected it (docs/rules.md §3.3)"`
	ReadOnly       bool                     `json:"readOnly" jsonschema:"this connection lists and runs only tools that change nothing"`
}

// ToolsetView is one toolset in chorus_checkin.
type ToolsetView struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Enabled     bool   `json:"enabled"`
}

func toolsetViews(sel selection) []ToolsetView {
	out := make([]ToolsetView, len(toolsetTable))
	for i, t := range toolsetTable {
		out[i] = ToolsetView{Name: t.name, Description: t.about, Enabled: sel.has(t.id)}
	}
	return out
}

// CheckinAgent is the caller's identity in chorus_checkin.
type CheckinAgent struct {
	UUID         string              `json:"uuid"`
	Name         string              `json:"name"`
	Roles        []string            `json:"roles"`
	Permissions  map[string][]string `json:"permissions" jsonschema:"resource -> actions held (read, write, admin)"`
	Persona      *string             `json:"persona"`
	SystemPrompt *string             `json:"systemPrompt"`
	Owner        *PersonRef          `json:"owner"`
}

// PersonRef names a user.
type PersonRef struct {
	UUID  string  `json:"uuid"`
	Name  string  `json:"name"`
	Email *string `json:"email"`
}

// ActiveProject is one entry of activeProjects.
type ActiveProject struct {
	Name            string `json:"name"`
	ActiveIdeaCount int    `json:"activeIdeaCount"`
}

// NotificationSummary is the notification part of chorus_checkin.
type NotificationSummary struct {
	Unread int                  `json:"unread" jsonschema:"unread notifications left after this check-in"`
	Recent []RecentNotification `json:"recent" jsonschema:"up to 5 unread notifications, newest first; returning them marks them read"`
}

// RecentNotification is one notification in chorus_checkin.
type RecentNotification struct {
	UUID    string    `json:"uuid"`
	Action  string    `json:"action"`
	Entity  EntityRef `json:"entity"`
	Title   string    `json:"title"`
	Message string    `json:"message"`
	Actor   string    `json:"actor"`
	At      time.Time `json:"at"`
}

// EntityRef points at an entity by type and uuid.
type EntityRef struct {
	Type string `json:"type"`
	UUID string `json:"uuid"`
}

// maxCheckinSessions bounds the sessions chorus_checkin lists (docs/rules.md §4.1).
const maxCheckinSessions = 20

// maxPersonaRunes bounds persona and systemPrompt in chorus_checkin (docs/rules.md §4.1).
const maxPersonaRunes = 4096

func truncRunes(s *string, n int) *string {
	if s == nil {
		return nil
	}
	if r := []rune(*s); len(r) > n {
		t := string(r[:n])
		return &t
	}
	return s
}

var checkin = tool[NoInput, CheckinOut]{
	Name:    "chorus_checkin",
	Title:   "Check in",
	Toolset: tsCore,
	Perm:    perm.Public,
	Effect:  writes,
	Desc: "Start here: who you are, your permissions and toolsets, active projects, unread notifications " +
		"(returned ones are marked read), sessions.",
	ReadOnlyForm: true,
	Run: func(ctx context.Context, d *Deps, call *Call, _ NoInput) (CheckinOut, error) {
		res, err := d.app().CheckIn(ctx, call.Request, call.Conn.ReadOnly, maxCheckinSessions)
		if err != nil {
			return CheckinOut{}, err
		}
		out := CheckinOut{
			CheckinTime: res.At,
			Agent: CheckinAgent{UUID: res.Agent.UUID, Name: res.Agent.Name, Roles: res.Agent.Roles,
				Permissions:  perm.Effective(res.Agent.Roles, res.Agent.Permissions).ByResource(),
				Persona:      truncRunes(res.Agent.Persona, maxPersonaRunes),
				SystemPrompt: truncRunes(res.Agent.SystemPrompt, maxPersonaRunes)},
			ActiveProjects: map[string]ActiveProject{},
			Notifications:  NotificationSummary{Unread: res.Unread, Recent: []RecentNotification{}},
			Toolsets:       toolsetViews(call.Conn.Toolsets),
			ReadOnly:       call.Conn.ReadOnly,
		}
		if res.Owner != nil {
			out.Agent.Owner = &PersonRef{UUID: res.Owner.UUID, Name: res.Owner.DisplayName(), Email: res.Owner.Email}
		}
		out.Sessions = []SessionView{}
		for _, ss := range res.Sessions {
			out.Sessions = append(out.Sessions, sessionView(ss, res.Open[ss.UUID], res.At))
		}
		for _, ap := range res.Active {
			out.ActiveProjects[ap.UUID] = ActiveProject{Name: ap.Name, ActiveIdeaCount: ap.ActiveIdeaCount}
		}
		for _, n := range res.Recent {
			out.Notifications.Recent = append(out.Notifications.Recent, RecentNotification{
				UUID: n.UUID, Action: n.Action, Entity: EntityRef{Type: n.EntityType, UUID: n.EntityUUID},
				Title: n.EntityTitle, Message: n.Message, Actor: n.ActorName, At: n.CreatedAt})
		}
		return out, nil
	},
}

// ---- projects (docs/rules.md §4.2) ----

// ProjectCounts are the entity counts of a project.
type ProjectCounts struct {
	Ideas      int  `json:"ideas"`
	Documents  int  `json:"documents"`
	Tasks      int  `json:"tasks"`
	Proposals  int  `json:"proposals"`
	Activities *int `json:"activities,omitempty"`
}

// ProjectRow is one row of chorus_list_projects.
type ProjectRow struct {
	UUID        string        `json:"uuid"`
	Name        string        `json:"name"`
	Description *string       `json:"description"`
	GroupUUID   *string       `json:"groupUuid"`
	Visibility  string        `json:"visibility"`
	ClaimTTL    *int64        `json:"claimTtlSeconds" jsonschema:"task claims lapse after this many seconds without activity of their holder; null: they last until released"`
	Count       ProjectCounts `json:"_count"`
	CreatedAt   time.Time     `json:"createdAt"`
	UpdatedAt   time.Time     `json:"updatedAt"`
}

// ProjectList is chorus_list_projects' result.
type ProjectList struct {
	Projects []ProjectRow `json:"projects"`
	Meta
}

// ProjectDetail is chorus_get_project's result.
type ProjectDetail struct {
	ProjectRow
	AccessLevel string `json:"accessLevel" jsonschema:"your level on this project: viewer, editor or admin"`
}

func projectRow(v store.ProjectView, withActivities bool) ProjectRow {
	r := ProjectRow{UUID: v.UUID, Name: clip(v.Name), Description: v.Description, GroupUUID: v.GroupUUID,
		Visibility: v.Visibility, ClaimTTL: v.ClaimTTLSeconds, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		Count: ProjectCounts{Ideas: v.Ideas, Documents: v.Documents, Tasks: v.Tasks, Proposals: v.Proposals}}
	if withActivities {
		n := v.Activities
		r.Count.Activities = &n
	}
	return r
}

var listProjects = tool[PageIn, ProjectList]{
	Name:    "chorus_list_projects",
	Title:   "List projects",
	Toolset: tsCore,
	Perm:    perm.Public,
	Effect:  reads,
	Desc:    "List the projects you can see, most recently updated first.",
	Run: func(ctx context.Context, d *Deps, call *Call, in PageIn) (ProjectList, error) {
		page, size, offset := in.window(20)
		views, total, err := d.app().ListProjects(ctx, call.Request, size, offset)
		if err != nil {
			return ProjectList{}, err
		}
		rows := make([]ProjectRow, len(views))
		for i, v := range views {
			rows[i] = projectRow(v, false)
		}
		wrap := func(r []ProjectRow) any {
			return ProjectList{Projects: r, Meta: Meta{Returned: len(r), Page: page, PageSize: size, Total: total}}
		}
		rows = fit(rows, wrap)
		return wrap(rows).(ProjectList), nil
	},
}

// GetProjectIn is chorus_get_project's input.
type GetProjectIn struct {
	ProjectUUID UUID `json:"projectUuid"`
}

var getProject = tool[GetProjectIn, ProjectDetail]{
	Name:    "chorus_get_project",
	Title:   "Get a project",
	Toolset: tsCore,
	Perm:    perm.Public,
	Effect:  reads,
	Desc:    "Get a project with your access level on it and its counts.",
	Run: func(ctx context.Context, d *Deps, call *Call, in GetProjectIn) (ProjectDetail, error) {
		v, err := d.app().GetProject(ctx, call.Request, string(in.ProjectUUID))
		if err != nil {
			return ProjectDetail{}, err
		}
		r := projectRow(*v, true)
		r.Name = v.Name
		return ProjectDetail{ProjectRow: r, AccessLevel: v.Level().String()}, nil
	},
}

// CreateProjectIn is chorus_admin_create_project's input.
type CreateProjectIn struct {
	Name        string  `json:"name" chorus:"minLength=1;maxLength=200"`
	Description *string `json:"description,omitempty"`
	GroupUUID   *UUID   `json:"groupUuid,omitempty"`
	Visibility  string  `json:"visibility,omitempty" jsonschema:"default public: every company member may edit" chorus:"enum=public|private"`
	ClaimTTL    *int64  `json:"claimTtlSeconds,omitempty" jsonschema:"a claim lapses after this many seconds without a command of its holder or a heartbeat (default: never)" chorus:"min=1;max=2592000"`
}

// CreatedProject is chorus_admin_create_project's result.
type CreatedProject struct {
	UUID        string    `json:"uuid"`
	Name        string    `json:"name"`
	Description *string   `json:"description"`
	GroupUUID   *string   `json:"groupUuid"`
	Visibility  string    `json:"visibility"`
	ClaimTTL    *int64    `json:"claimTtlSeconds"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

var adminCreateProject = tool[CreateProjectIn, CreatedProject]{
	Name:    "chorus_admin_create_project",
	Title:   "Create a project",
	Toolset: tsProjects,
	Perm:    perm.ProjectWrite,
	Effect:  writes,
	Desc:    "Create a project; your owner becomes its admin. claimTtlSeconds makes silent claims lapse.",
	Run: func(ctx context.Context, d *Deps, call *Call, in CreateProjectIn) (CreatedProject, error) {
		p, err := d.app().CreateProject(ctx, call.Request, app.NewProject{Name: in.Name, Description: in.Description, GroupUUID: (*string)(in.GroupUUID), Visibility: in.Visibility,
			ClaimTTLSeconds: in.ClaimTTL})
		if err != nil {
			return CreatedProject{}, err
		}
		return CreatedProject{UUID: p.UUID, Name: p.Name, Description: p.Description, GroupUUID: p.GroupUUID,
			Visibility: p.Visibility, ClaimTTL: p.ClaimTTLSeconds, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, nil
	},
}
