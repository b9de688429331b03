package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// TaskAccess is the project-access gate for a task (docs/rules.md §6.3); see IdeaAccess.
func (s *Store) TaskAccess(ctx context.Context, c Caller, taskUUID string, need Access) (*Task, *ProjectView, error) {
	if !vocab.IsUUID(taskUUID) {
		return nil, nil, NotFound("Task")
	}
	var t Task
	err := s.DB.NewSelect().Model(&t).Where("uuid = ?", taskUUID).Where("company_uuid = ?", c.CompanyUUID).Scan(ctx)
	if err != nil {
		return nil, nil, mapErr(err, "Task")
	}
	pv, err := s.projectGate(ctx, c, t.ProjectUUID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, NotFound("Task")
	}
	if err != nil {
		return nil, nil, err
	}
	if pv.Level() < need {
		return nil, nil, ErrForbidden
	}
	return &t, pv, nil
}

// priorityRank orders priorities high > medium > low (docs/rules.md §8.4). Migration
// 20261201000004 indexes this very expression (tasks_project_order_idx): change both together.
const priorityRank = "CASE task.priority WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END"

// taskOrder is the order of every task list: priority, then newest first, uuid breaking ties.
func taskOrder(q *bun.SelectQuery) *bun.SelectQuery {
	return q.OrderExpr(priorityRank + " DESC").OrderExpr("task.created_at DESC").OrderExpr("task.uuid DESC")
}

// TaskFilter narrows task lists.
type TaskFilter struct {
	Status        string
	Priority      string
	ProposalUUIDs []string
}

func (f TaskFilter) apply(q *bun.SelectQuery) *bun.SelectQuery {
	if f.Status != "" {
		q = q.Where("task.status = ?", f.Status)
	}
	if f.Priority != "" {
		q = q.Where("task.priority = ?", f.Priority)
	}
	if len(f.ProposalUUIDs) > 0 {
		q = q.Where("task.proposal_uuid IN (?)", bun.List(f.ProposalUUIDs))
	}
	return q
}

// projectTasks selects nothing yet from a project's tasks ("task" is the alias), narrowed by f.
func (s *Store) projectTasks(projectUUID string, f TaskFilter) *bun.SelectQuery {
	return f.apply(s.DB.NewSelect().TableExpr("tasks AS task").Where("task.project_uuid = ?", projectUUID))
}

// taskPage reads one page of the tasks that match, in taskOrder, and how many match in all.
// The page is found on uuids alone (a deferred join): with tasks_project_order_idx the skipped
// rows of a deep page are index entries, never task rows, and only the page's rows are read.
// The count, when asked for, is a second query over the same index; the two run concurrently on
// two connections, as bun's ScanAndCount did before.
func (s *Store) taskPage(ctx context.Context, match *bun.SelectQuery, limit, offset int, count bool) ([]Task, int, error) {
	ids := taskOrder(match.Clone().ColumnExpr("task.uuid")).Limit(int64(limit)).Offset(int64(offset))
	var (
		rows  []Task
		total int64
		wg    sync.WaitGroup
		cerr  error
	)
	if count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			total, cerr = match.Clone().Count(ctx)
		}()
	}
	err := taskOrder(s.DB.NewSelect().Model(&rows).Join("JOIN (?) AS page ON page.uuid = task.uuid", ids)).Scan(ctx)
	wg.Wait()
	return rows, int(total), cmp.Or(err, cerr)
}

// ListTasks returns a page of a project's tasks, high priority first, then newest first.
func (s *Store) ListTasks(ctx context.Context, projectUUID string, f TaskFilter, limit, offset int) ([]Task, int, error) {
	return s.taskPage(ctx, s.projectTasks(projectUUID, f), limit, offset, true)
}

// AvailableTasks returns up to 50 open tasks of a project (optionally of some proposals).
func (s *Store) AvailableTasks(ctx context.Context, projectUUID string, proposalUUIDs []string) ([]Task, error) {
	rows, _, err := s.taskPage(ctx, s.projectTasks(projectUUID, TaskFilter{Status: "open", ProposalUUIDs: proposalUUIDs}), 50, 0, false)
	return rows, err
}

// UnblockedTasks returns a page of open or assigned tasks whose every dependency is done or
// closed (docs/rules.md §5.3), read from the kept count of unresolved dependencies
// (store/unresolved.go). The two conditions are tasks_project_unblocked_idx's own WHERE, term
// for term (migration 20261201000005), so the page and the total are read from that index alone:
// change them together.
func (s *Store) UnblockedTasks(ctx context.Context, projectUUID string, proposalUUIDs []string, limit, offset int) ([]Task, int, error) {
	match := s.projectTasks(projectUUID, TaskFilter{ProposalUUIDs: proposalUUIDs}).
		Where("task.status IN ('open', 'assigned')").Where("task.unresolved_deps = 0")
	return s.taskPage(ctx, match, limit, offset, true)
}

// Criteria returns a task's acceptance criteria in order.
func (s *Store) Criteria(ctx context.Context, taskUUID string) ([]AcceptanceCriterion, error) {
	var rows []AcceptanceCriterion
	err := s.DB.NewSelect().Model(&rows).Where("task_uuid = ?", taskUUID).Order("sort_order ASC", "uuid ASC").Scan(ctx)
	return rows, err
}

// TaskLink is a task on the other end of a dependency.
type TaskLink struct {
	UUID         string  `bun:"uuid"`
	Title        string  `bun:"title"`
	Status       string  `bun:"status"`
	AssigneeType *string `bun:"assignee_type"`
	AssigneeUUID *string `bun:"assignee_uuid"`
	AssigneeName *string `bun:"assignee_name"`
	// SessionUUID and SessionName name the active session with an open check-in on the task, when
	// one has (filled by Blockers only).
	SessionUUID *string `bun:"-"`
	SessionName *string `bun:"-"`
	// Elsewhere: the linked task is in another project than the task read (an edge kept by a move,
	// docs/rules.md §5.9); its title and assignee are withheld, since the reader may not see that
	// project.
	Elsewhere bool `bun:"elsewhere"`
}

// ElsewhereTitle stands for the title of a linked task in another project.
const ElsewhereTitle = "(a task in another project)"

// linkColumns are a TaskLink's columns of the linked task t, as seen from the task self: a task
// of another project shows neither its title nor its assignee.
var linkColumns = "t.uuid, t.status, " +
	"CASE WHEN t.project_uuid = self.project_uuid THEN t.title ELSE '" + ElsewhereTitle + "' END AS title, " +
	"CASE WHEN t.project_uuid = self.project_uuid THEN t.assignee_type END AS assignee_type, " +
	"CASE WHEN t.project_uuid = self.project_uuid THEN t.assignee_uuid END AS assignee_uuid, " +
	"CASE WHEN t.project_uuid = self.project_uuid THEN a.name END AS assignee_name, " +
	"CASE WHEN t.project_uuid = self.project_uuid THEN 0 ELSE 1 END AS elsewhere"

// EntityListRows is how many rows of one list an entity read loads (chorus_get_task's
// dependencies and references, an idea's references): the answer shows as many of them as fit
// its byte budget and counts them all (docs/rules.md §3.6); the rest are paged by their own tools.
const EntityListRows = 200

// DependsOn lists the tasks taskUUID depends on; DependedBy the tasks that depend on it.
func (s *Store) DependsOn(ctx context.Context, taskUUID string) ([]TaskLink, error) {
	rows, _, err := s.TaskLinks(ctx, taskUUID, "dependsOn", 0, 0)
	return rows, err
}

// DependedBy lists the tasks that depend on taskUUID.
func (s *Store) DependedBy(ctx context.Context, taskUUID string) ([]TaskLink, error) {
	rows, _, err := s.TaskLinks(ctx, taskUUID, "dependedBy", 0, 0)
	return rows, err
}

// TaskLinks returns a page of the tasks taskUUID depends on (direction "dependsOn") or that
// depend on it ("dependedBy"), oldest first, and how many there are; limit 0 reads them all.
func (s *Store) TaskLinks(ctx context.Context, taskUUID, direction string, limit, offset int) ([]TaskLink, int, error) {
	other, self := "d.depends_on_uuid", "d.task_uuid"
	if direction == "dependedBy" {
		other, self = self, other
	}
	rows := []TaskLink{}
	q := s.DB.NewSelect().TableExpr("task_dependencies AS d").
		ColumnExpr(linkColumns).
		Join("JOIN tasks AS t ON t.uuid = "+other).
		Join("JOIN tasks AS self ON self.uuid = "+self).
		Join("LEFT JOIN agents AS a ON a.uuid = t.assignee_uuid").Where(self+" = ?", taskUUID).
		Order("t.created_at ASC", "t.uuid ASC")
	if limit == 0 {
		err := q.Scan(ctx, &rows)
		return rows, len(rows), err
	}
	if err := q.Limit(int64(limit)).Offset(int64(offset)).Scan(ctx, &rows); err != nil {
		return nil, 0, err
	}
	n, err := s.DB.NewSelect().TableExpr("task_dependencies AS d").Where(self+" = ?", taskUUID).Count(ctx)
	return rows, int(n), err
}

// TaskRelations is what chorus_get_task shows beside the task row: its lists, each at most
// EntityListRows long, with their full counts.
type TaskRelations struct {
	Criteria        []AcceptanceCriterion
	DependsOn       []TaskLink
	DependsOnCount  int
	DependedBy      []TaskLink
	DependedByCount int
	CommentCount    int
	References      []Reference
	ReferenceCount  int
}

// Relations reads a task's criteria, both directions of its dependencies, its comment count and
// its references. On PostgreSQL, where each read is a round trip to the server, the independent reads run
// concurrently on pooled connections, so a call waits for the slowest instead of their sum; on
// SQLite, in process, they run one after another, which measured faster (docs/bench-results.md,
// "Reads").
func (s *Store) Relations(ctx context.Context, taskUUID string) (*TaskRelations, error) {
	var (
		r    TaskRelations
		errs [5]error
	)
	reads := []func(){
		func() { r.Criteria, errs[0] = s.Criteria(ctx, taskUUID) },
		func() {
			r.DependsOn, r.DependsOnCount, errs[1] = s.TaskLinks(ctx, taskUUID, "dependsOn", EntityListRows, 0)
		},
		func() {
			r.DependedBy, r.DependedByCount, errs[2] = s.TaskLinks(ctx, taskUUID, "dependedBy", EntityListRows, 0)
		},
		func() { r.CommentCount, errs[3] = s.CommentCount(ctx, "task", taskUUID) },
		func() {
			r.References, r.ReferenceCount, errs[4] = s.References(ctx, "task", taskUUID, EntityListRows, 0)
		},
	}
	if s.Dialect() == "pg" {
		var wg sync.WaitGroup
		for _, read := range reads {
			wg.Go(read)
		}
		wg.Wait()
	} else {
		for _, read := range reads {
			read()
		}
	}
	if err := cmp.Or(errs[:]...); err != nil { // the first failure, as sequential reads gave
		return nil, err
	}
	return &r, nil
}

// CommentCount counts the comments on a target.
func (s *Store) CommentCount(ctx context.Context, targetType, targetUUID string) (int, error) {
	n, err := s.DB.NewSelect().Model((*Comment)(nil)).Where("target_type = ?", targetType).Where("target_uuid = ?", targetUUID).Count(ctx)
	return int(n), err
}

// Dependency errors (docs/rules.md §5.3), in the words agents see.
var (
	ErrDepSelf        = errors.New("A task cannot depend on itself")
	ErrDepNotFound    = errors.New("Dependency task not found")
	ErrDepProject     = errors.New("Tasks must belong to the same project")
	ErrDepCycle       = errors.New("Adding this dependency would create a cycle")
	ErrDepExists      = errors.New("Dependency already exists")
	ErrTaskNotFound   = errors.New("Task not found")
	errDepWalkTooDeep = errors.New("dependency graph too deep to check")
)

// AddDependency adds the edge "taskUUID depends on dependsOnUUID" in db after the checks of
// docs/rules.md §5.3 in order: not itself, both exist in the company, same project, no cycle, not a
// duplicate.
func AddDependency(ctx context.Context, db bun.IDB, companyUUID, taskUUID, dependsOnUUID string, at time.Time) error {
	if taskUUID == dependsOnUUID {
		return ErrDepSelf
	}
	var pair []Task
	err := db.NewSelect().Model(&pair).Column("uuid", "project_uuid").Where("company_uuid = ?", companyUUID).
		Where("uuid IN (?)", bun.List([]string{taskUUID, dependsOnUUID})).Scan(ctx)
	if err != nil {
		return err
	}
	ti := slices.IndexFunc(pair, func(t Task) bool { return t.UUID == taskUUID })
	di := slices.IndexFunc(pair, func(t Task) bool { return t.UUID == dependsOnUUID })
	switch {
	case ti < 0:
		return ErrTaskNotFound
	case di < 0:
		return ErrDepNotFound
	case pair[ti].ProjectUUID != pair[di].ProjectUUID:
		return ErrDepProject
	}
	// A cycle: taskUUID is reachable from dependsOnUUID by following depends-on edges.
	seen := map[string]bool{dependsOnUUID: true}
	frontier := []string{dependsOnUUID}
	for hops := 0; len(frontier) > 0; hops++ {
		if hops > 10000 {
			return errDepWalkTooDeep
		}
		var next []string
		err := db.NewSelect().Table("task_dependencies").Column("depends_on_uuid").
			Where("task_uuid IN (?)", bun.List(frontier)).Scan(ctx, &next)
		if err != nil {
			return err
		}
		frontier = frontier[:0]
		for _, n := range next {
			if n == taskUUID {
				return ErrDepCycle
			}
			if !seen[n] {
				seen[n] = true
				frontier = append(frontier, n)
			}
		}
	}
	res, err := db.NewInsert().Model(&TaskDependency{TaskUUID: taskUUID, DependsOnUUID: dependsOnUUID, CreatedAt: at}).
		On("CONFLICT (task_uuid, depends_on_uuid) DO NOTHING").Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrDepExists
	}
	return nil
}

// Blockers lists taskUUID's dependencies that are neither done nor closed, each with the session
// working on it, if any (docs/rules.md §5.3).
func (s *Store) Blockers(ctx context.Context, taskUUID string) ([]TaskLink, error) {
	deps, err := s.DependsOn(ctx, taskUUID)
	if err != nil {
		return nil, err
	}
	deps = slices.DeleteFunc(deps, func(l TaskLink) bool { return ResolvedStatus(l.Status) })
	ids := make([]string, len(deps))
	for i, d := range deps {
		ids[i] = d.UUID
	}
	working, err := WorkingSessions(ctx, s.DB, ids)
	if err != nil {
		return nil, err
	}
	for i := range deps {
		if w, ok := working[deps[i].UUID]; ok && !deps[i].Elsewhere {
			deps[i].SessionUUID, deps[i].SessionName = &w.SessionUUID, &w.SessionName
		}
	}
	return deps, nil
}
