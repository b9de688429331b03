package store

import (
	"context"

	"github.com/uptrace/bun"
)

// GroupDashboard is chorus_get_group_dashboard over the group's visible projects.
type GroupDashboard struct {
	Projects        []DashboardProject
	TotalTasks      int
	CompletedTasks  int
	OpenIdeas       int
	ActiveProposals int
	Recent          []DashboardActivity
}

// DashboardProject is one project's line of the dashboard.
type DashboardProject struct {
	UUID, Name, Visibility string
	Tasks, Completed       int
}

// DashboardActivity is one recent activity of the group's projects.
type DashboardActivity struct {
	Activity    `bun:",extend"`
	ProjectName string `bun:"project_name"`
}

// Dashboard reads the dashboard of a group the caller can see (counting only its projects the
// caller can see).
func (s *Store) Dashboard(ctx context.Context, c Caller, groupUUID string) (*GroupView, *GroupDashboard, error) {
	g, err := s.GetGroup(ctx, c, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	projects, err := s.GroupProjects(ctx, c, groupUUID)
	if err != nil {
		return nil, nil, err
	}
	d := &GroupDashboard{Projects: []DashboardProject{}, Recent: []DashboardActivity{}}
	if len(projects) == 0 {
		return g, d, nil
	}
	ids := make([]string, len(projects))
	for i, p := range projects {
		ids[i] = p.UUID
	}
	var taskRows []struct {
		Project string `bun:"project_uuid"`
		Status  string `bun:"status"`
		N       int    `bun:"n"`
	}
	if err := s.DB.NewSelect().Table("tasks").Column("project_uuid", "status").ColumnExpr("count(*) AS n").
		Where("project_uuid IN (?)", bun.List(ids)).Group("project_uuid", "status").Scan(ctx, &taskRows); err != nil {
		return nil, nil, err
	}
	per := map[string]*DashboardProject{}
	for _, p := range projects {
		dp := DashboardProject{UUID: p.UUID, Name: p.Name, Visibility: p.Visibility}
		d.Projects = append(d.Projects, dp)
	}
	for i := range d.Projects {
		per[d.Projects[i].UUID] = &d.Projects[i]
	}
	for _, r := range taskRows {
		p := per[r.Project]
		p.Tasks += r.N
		d.TotalTasks += r.N
		if r.Status == "done" || r.Status == "closed" {
			p.Completed += r.N
			d.CompletedTasks += r.N
		}
	}
	n, err := s.DB.NewSelect().Table("ideas").Where("project_uuid IN (?)", bun.List(ids)).
		Where("status IN ('open', 'elaborating')").Count(ctx)
	if err != nil {
		return nil, nil, err
	}
	d.OpenIdeas = int(n)
	if n, err = s.DB.NewSelect().Table("proposals").Where("project_uuid IN (?)", bun.List(ids)).
		Where("status IN ('draft', 'pending')").Count(ctx); err != nil {
		return nil, nil, err
	}
	d.ActiveProposals = int(n)
	// The Activity columns by name: on PostgreSQL the table also has seq (migration 20261201000010).
	err = s.DB.NewSelect().TableExpr("activities AS a").
		ColumnExpr("a.uuid, a.company_uuid, a.project_uuid, a.target_type, a.target_uuid, a.actor_type, a.actor_uuid").
		ColumnExpr("a.action, a.value, a.session_uuid, a.session_name, a.created_at").ColumnExpr("p.name AS project_name").
		Join("JOIN projects AS p ON p.uuid = a.project_uuid").Where("a.project_uuid IN (?)", bun.List(ids)).
		Order("a.created_at DESC", "a.uuid DESC").Limit(20).Scan(ctx, &d.Recent)
	if err != nil {
		return nil, nil, err
	}
	acts := make([]Activity, len(d.Recent))
	for i := range d.Recent {
		acts[i] = d.Recent[i].Activity
	}
	if err := s.foreignNames(ctx, c, acts); err != nil {
		return nil, nil, err
	}
	for i := range d.Recent {
		d.Recent[i].Value = acts[i].Value
	}
	return g, d, nil
}

// CompletionRate is round(100*completed/total), 0 without tasks.
func CompletionRate(completed, total int) int {
	if total == 0 {
		return 0
	}
	return (200*completed + total) / (2 * total)
}
