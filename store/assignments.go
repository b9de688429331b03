package store

import (
	"context"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// AcceptanceSummary counts a task's criteria by their admin status (docs/rules.md §5.2).
type AcceptanceSummary struct {
	Total           int `json:"total"`
	Required        int `json:"required"`
	Passed          int `json:"passed"`
	Failed          int `json:"failed"`
	Pending         int `json:"pending"`
	RequiredPassed  int `json:"requiredPassed"`
	RequiredFailed  int `json:"requiredFailed"`
	RequiredPending int `json:"requiredPending"`
}

// Summarize computes the summary and acceptanceStatus of criteria (docs/rules.md §5.2).
func Summarize(cs []AcceptanceCriterion) (AcceptanceSummary, string) {
	var s AcceptanceSummary
	for _, c := range cs {
		s.Total++
		if c.Required {
			s.Required++
		}
		switch c.Status {
		case "passed":
			s.Passed++
			if c.Required {
				s.RequiredPassed++
			}
		case "failed":
			s.Failed++
			if c.Required {
				s.RequiredFailed++
			}
		default:
			s.Pending++
			if c.Required {
				s.RequiredPending++
			}
		}
	}
	switch {
	case s.Total == 0:
		return s, "not_started"
	case s.RequiredFailed > 0:
		return s, "failed"
	case s.Required > 0 && s.RequiredPassed == s.Required:
		return s, "passed"
	case s.Passed > 0 || s.Failed > 0:
		return s, "in_progress"
	}
	return s, "not_started"
}

// TrackedIdea is one idea of chorus_get_my_assignments' ideaTracker.
type TrackedIdea struct {
	UUID          string
	Title         string
	DerivedStatus string
	Proposals     int
	Tasks         int
	ParentUUID    *string
	ProjectUUID   string
	UpdatedAt     time.Time
}

// TrackedTask is one task of the taskTracker.
type TrackedTask struct {
	Task
	Passed int
	Total  int
}

// ProjectName pairs a project with its name, in tracker order.
type ProjectName struct {
	UUID string
	Name string
}

// Assignments is what chorus_get_my_assignments shows, grouped by project.
type Assignments struct {
	Projects []ProjectName
	Ideas    map[string][]TrackedIdea
	Tasks    map[string][]TrackedTask
}

// maxTracked bounds each tracker (docs/rules.md §4.8: at most 100 rows per tracker).
const maxTracked = 100

// MyAssignments collects the caller's active ideas and tasks in projects it can see (docs/rules.md §4.8):
// assigned to the caller agent or its owner user; ideas whose derived status is not done, tasks
// not done or closed. onlyProjects, when not nil, narrows the projects further.
func (s *Store) MyAssignments(ctx context.Context, c Caller, onlyProjects []string) (*Assignments, error) {
	out := &Assignments{Ideas: map[string][]TrackedIdea{}, Tasks: map[string][]TrackedTask{}}
	var projects []ProjectView
	if err := s.visibleProjects(c, false).Order("project.created_at ASC", "project.uuid ASC").Scan(ctx, &projects); err != nil {
		return nil, err
	}
	var ids []string
	names := map[string]string{}
	for _, p := range projects {
		if onlyProjects != nil && !slices.Contains(onlyProjects, p.UUID) {
			continue
		}
		ids = append(ids, p.UUID)
		names[p.UUID] = p.Name
	}
	if len(ids) == 0 {
		return out, nil
	}
	if err := s.trackIdeas(ctx, c, ids, out); err != nil {
		return nil, err
	}
	if err := s.trackTasks(ctx, c, ids, out); err != nil {
		return nil, err
	}
	out.keepTracked(ids, names)
	return out, nil
}

// assignedTo narrows q (rows under alias) to those assigned to the caller agent or its owner user.
func assignedTo(c Caller, q *bun.SelectQuery, alias string) *bun.SelectQuery {
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("("+alias+".assignee_type = 'agent' AND "+alias+".assignee_uuid = ?)", c.AgentUUID)
		if c.OwnerUUID != "" {
			q = q.WhereOr("("+alias+".assignee_type = 'user' AND "+alias+".assignee_uuid = ?)", c.OwnerUUID)
		}
		return q
	})
}

// trackIdeas adds to out the caller's ideas in the projects ids whose derived status is not done,
// newest first, each with its proposal count and the task count of its latest approved proposal.
func (s *Store) trackIdeas(ctx context.Context, c Caller, ids []string, out *Assignments) error {
	var ideas []Idea
	if err := assignedTo(c, s.DB.NewSelect().Model(&ideas).Where("idea.project_uuid IN (?)", bun.List(ids)), "idea").
		Order("idea.updated_at DESC", "idea.uuid DESC").Scan(ctx); err != nil {
		return err
	}
	if len(ideas) == 0 {
		return nil
	}
	derived, err := s.DeriveStatuses(ctx, ids)
	if err != nil {
		return err
	}
	var props []Proposal
	if err := s.DB.NewSelect().Model(&props).Column("uuid", "input_uuids", "status", "created_at").
		Where("project_uuid IN (?)", bun.List(ids)).Where("input_type = 'idea'").Where("status IN ('pending', 'approved')").
		Scan(ctx); err != nil {
		return err
	}
	taskCounts, err := s.approvedTaskCounts(ctx, props)
	if err != nil {
		return err
	}
	for _, i := range ideas {
		d := derived[i.UUID].Status
		if d == DerivedDone {
			continue
		}
		t := TrackedIdea{UUID: i.UUID, Title: i.Title, DerivedStatus: d, ParentUUID: i.ParentUUID,
			ProjectUUID: i.ProjectUUID, UpdatedAt: i.UpdatedAt}
		var latest *Proposal
		for k := range props {
			p := &props[k]
			if !slices.Contains(p.InputUUIDs, i.UUID) {
				continue
			}
			t.Proposals++
			if p.Status == "approved" && (latest == nil || p.CreatedAt.After(latest.CreatedAt)) {
				latest = p
			}
		}
		if latest != nil {
			t.Tasks = taskCounts[latest.UUID]
		}
		out.Ideas[i.ProjectUUID] = append(out.Ideas[i.ProjectUUID], t)
	}
	return nil
}

// approvedTaskCounts counts the tasks of each approved proposal among props, by proposal uuid.
func (s *Store) approvedTaskCounts(ctx context.Context, props []Proposal) (map[string]int, error) {
	taskCounts := map[string]int{}
	var approved []string
	for _, p := range props {
		if p.Status == "approved" {
			approved = append(approved, p.UUID)
		}
	}
	if len(approved) == 0 {
		return taskCounts, nil
	}
	var rows []struct {
		ProposalUUID string `bun:"proposal_uuid"`
		N            int    `bun:"n"`
	}
	if err := s.DB.NewSelect().Table("tasks").ColumnExpr("proposal_uuid, count(*) AS n").
		Where("proposal_uuid IN (?)", bun.List(approved)).Group("proposal_uuid").Scan(ctx, &rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		taskCounts[r.ProposalUUID] = r.N
	}
	return taskCounts, nil
}

// trackTasks adds to out the caller's tasks in the projects ids that are not done or closed,
// highest priority first, each with its acceptance criteria counts.
func (s *Store) trackTasks(ctx context.Context, c Caller, ids []string, out *Assignments) error {
	var tasks []Task
	if err := assignedTo(c, s.DB.NewSelect().Model(&tasks).Where("task.project_uuid IN (?)", bun.List(ids)), "task").
		Where("task.status NOT IN ('done', 'closed')").
		OrderExpr(priorityRank+" DESC").Order("task.assigned_at DESC", "task.uuid DESC").Scan(ctx); err != nil {
		return err
	}
	if len(tasks) == 0 {
		return nil
	}
	tids := make([]string, len(tasks))
	for i, t := range tasks {
		tids[i] = t.UUID
	}
	var counts []struct {
		TaskUUID string `bun:"task_uuid"`
		Total    int    `bun:"total"`
		Passed   int    `bun:"passed"`
	}
	if err := s.DB.NewSelect().Table("acceptance_criteria").
		ColumnExpr("task_uuid, count(*) AS total, sum(CASE WHEN status = 'passed' THEN 1 ELSE 0 END) AS passed").
		Where("task_uuid IN (?)", bun.List(tids)).Group("task_uuid").Scan(ctx, &counts); err != nil {
		return err
	}
	for _, t := range tasks {
		tt := TrackedTask{Task: t}
		for _, c := range counts {
			if c.TaskUUID == t.UUID {
				tt.Passed, tt.Total = c.Passed, c.Total
			}
		}
		out.Tasks[t.ProjectUUID] = append(out.Tasks[t.ProjectUUID], tt)
	}
	return nil
}

// keepTracked keeps at most maxTracked rows per tracker, taking the projects ids in order (oldest
// project first), and lists the projects that keep a row.
func (out *Assignments) keepTracked(ids []string, names map[string]string) {
	ideaLeft, taskLeft := maxTracked, maxTracked
	for _, id := range ids {
		if xs := out.Ideas[id]; len(xs) > 0 {
			out.Ideas[id] = xs[:min(len(xs), ideaLeft)]
			ideaLeft -= len(out.Ideas[id])
			if len(out.Ideas[id]) == 0 {
				delete(out.Ideas, id)
			}
		}
		if xs := out.Tasks[id]; len(xs) > 0 {
			out.Tasks[id] = xs[:min(len(xs), taskLeft)]
			taskLeft -= len(out.Tasks[id])
			if len(out.Tasks[id]) == 0 {
				delete(out.Tasks, id)
			}
		}
		if len(out.Ideas[id]) > 0 || len(out.Tasks[id]) > 0 {
			out.Projects = append(out.Projects, ProjectName{UUID: id, Name: names[id]})
		}
	}
}

// GroupProjectUUIDs lists the projects of a group of the company (none for an unknown group).
func (s *Store) GroupProjectUUIDs(ctx context.Context, companyUUID, groupUUID string) ([]string, error) {
	if !vocab.IsUUID(groupUUID) {
		return nil, nil
	}
	var ids []string
	err := s.DB.NewSelect().Table("projects").Column("uuid").Where("company_uuid = ?", companyUUID).
		Where("group_uuid = ?", groupUUID).Scan(ctx, &ids)
	return ids, err
}
