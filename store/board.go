package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// The reads of the console's board (issue 22): a project's tasks in columns by status, each
// column one bounded page, each card with what the board shows beside the task row. Every read
// is bounded by the page it fills: the counts come from tasks_project_status_order_idx, a
// column's page from the same index, and the cards' extras from the page's uuids only.

// BoardBlockerRows is how many of a card's unresolved dependencies the board names; the rest
// are counted.
const BoardBlockerRows = 3

// BoardCard is a task as a board card shows it: the task row, its assignee's name, its
// unresolved dependencies (docs/rules.md §5.3: neither done nor closed) and its acceptance
// criteria counted by the admin's marks (docs/rules.md §1.11, §5.2).
type BoardCard struct {
	Task
	// AssigneeName is the assignee agent's (or person's) name; nil when unassigned.
	AssigneeName *string
	// Blockers names at most BoardBlockerRows unresolved dependencies, oldest first; BlockerCount
	// counts them all. Both are empty for a done or closed task.
	Blockers     []TaskLink
	BlockerCount int
	// CriteriaPassed of CriteriaTotal criteria carry the admin's "passed" mark; DevPassed carry
	// the developer's.
	CriteriaPassed, CriteriaTotal, DevPassed int
}

// TaskStatusCounts counts a project's tasks matching f by status (every status present, zero
// when none).
func (s *Store) TaskStatusCounts(ctx context.Context, projectUUID string, f TaskFilter) (map[vocab.TaskStatus]int, error) {
	var rows []struct {
		Status vocab.TaskStatus `bun:"status"`
		N      int              `bun:"n"`
	}
	f.Status = ""
	err := s.projectTasks(projectUUID, f).ColumnExpr("task.status AS status, count(*) AS n").
		Group("task.status").Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := make(map[vocab.TaskStatus]int, len(vocab.TaskStatuses))
	for _, st := range vocab.TaskStatuses {
		out[st] = 0
	}
	for _, r := range rows {
		out[r.Status] += r.N
	}
	return out, nil
}

// BoardColumns reads a board's columns: for each status of vocab.TaskStatuses, how many of a
// project's tasks matching f it holds and one page of them (limit rows after offsets[status]),
// in the order of every task list (priority, then newest first). Seven reads, each bounded by
// an index (tasks_project_status_order_idx, or tasks_project_proposal_status_idx with
// f.ProposalUUIDs); on PostgreSQL they run concurrently on pooled connections.
func (s *Store) BoardColumns(ctx context.Context, projectUUID string, f TaskFilter, limit int,
	offsets map[vocab.TaskStatus]int) (map[vocab.TaskStatus]int, map[vocab.TaskStatus][]Task, error) {
	var counts map[vocab.TaskStatus]int
	pages := make([][]Task, len(vocab.TaskStatuses))
	reads := []func() error{func() (err error) { counts, err = s.TaskStatusCounts(ctx, projectUUID, f); return err }}
	for i, st := range vocab.TaskStatuses {
		reads = append(reads, func() (err error) {
			g := f
			g.Status = string(st)
			pages[i], _, err = s.taskPage(ctx, s.projectTasks(projectUUID, g), limit, offsets[st], false)
			return err
		})
	}
	if err := s.together(reads...); err != nil {
		return nil, nil, err
	}
	out := make(map[vocab.TaskStatus][]Task, len(pages))
	for i, st := range vocab.TaskStatuses {
		out[st] = pages[i]
	}
	return counts, out, nil
}

// together runs independent reads: on PostgreSQL concurrently, on pooled connections, so a
// page waits for the slowest read instead of their sum; on SQLite, in process, one after
// another (as Relations does). It returns the first error in the order of reads.
func (s *Store) together(reads ...func() error) error {
	errs := make([]error, len(reads))
	if s.Dialect() != "pg" {
		for i, read := range reads {
			if errs[i] = read(); errs[i] != nil {
				return errs[i]
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Go(func() { errs[i] = read() })
	}
	wg.Wait()
	return cmp.Or(errs...)
}

// BoardCards adds to tasks of projectUUID (at most a few hundred: one board page) what their
// cards show, with three reads over the tasks' uuids: the assignees' names, the unresolved
// dependencies (of unfinished tasks only: nothing blocks a done or closed task any more) and
// the criteria counts. The cards keep the order of tasks.
func (s *Store) BoardCards(ctx context.Context, projectUUID string, tasks []Task) ([]BoardCard, error) {
	cards := make([]BoardCard, len(tasks))
	if len(tasks) == 0 {
		return cards, nil
	}
	ids := make([]string, len(tasks))
	var unfinished []string
	at := make(map[string]int, len(tasks))
	for i, t := range tasks {
		ids[i], at[t.UUID] = t.UUID, i
		cards[i].Task = t
		if !t.Status.Resolved() {
			unfinished = append(unfinished, t.UUID)
		}
	}
	var crit []struct {
		TaskUUID  string `bun:"task_uuid"`
		Total     int    `bun:"total"`
		Passed    int    `bun:"passed"`
		DevPassed int    `bun:"dev_passed"`
	}
	// The three reads fill different fields of the cards.
	err := s.together(
		func() error { return s.boardNames(ctx, cards) },
		func() error { return s.boardBlockers(ctx, projectUUID, unfinished, at, cards) },
		func() error {
			return s.DB.NewSelect().TableExpr("acceptance_criteria AS ac").
				ColumnExpr("ac.task_uuid, count(*) AS total").
				ColumnExpr("sum(CASE WHEN ac.status = 'passed' THEN 1 ELSE 0 END) AS passed").
				ColumnExpr("sum(CASE WHEN ac.dev_status = 'passed' THEN 1 ELSE 0 END) AS dev_passed").
				Where("ac.task_uuid IN (?)", bun.List(ids)).Group("ac.task_uuid").Scan(ctx, &crit)
		})
	if err != nil {
		return nil, err
	}
	for _, c := range crit {
		card := &cards[at[c.TaskUUID]]
		card.CriteriaTotal, card.CriteriaPassed, card.DevPassed = c.Total, c.Passed, c.DevPassed
	}
	return cards, nil
}

// boardNames fills the cards' assignee names: agents' names, and people's names (their email
// when they have no name).
func (s *Store) boardNames(ctx context.Context, cards []BoardCard) error {
	var agents, users []string
	for _, c := range cards {
		switch {
		case c.AssigneeUUID == nil:
		case c.AssigneeType != nil && *c.AssigneeType == "user":
			users = append(users, *c.AssigneeUUID)
		default:
			agents = append(agents, *c.AssigneeUUID)
		}
	}
	names := map[string]string{}
	var rows []struct {
		UUID  string  `bun:"uuid"`
		Name  *string `bun:"name"`
		Email *string `bun:"email"`
	}
	if len(agents) > 0 {
		if err := s.DB.NewSelect().Table("agents").Column("uuid", "name").
			Where("uuid IN (?)", bun.List(agents)).Scan(ctx, &rows); err != nil {
			return err
		}
	}
	if len(users) > 0 {
		var people []struct {
			UUID  string  `bun:"uuid"`
			Name  *string `bun:"name"`
			Email *string `bun:"email"`
		}
		if err := s.DB.NewSelect().Table("users").Column("uuid", "name", "email").
			Where("uuid IN (?)", bun.List(users)).Scan(ctx, &people); err != nil {
			return err
		}
		rows = append(rows, people...)
	}
	for _, r := range rows {
		switch {
		case r.Name != nil && *r.Name != "":
			names[r.UUID] = *r.Name
		case r.Email != nil:
			names[r.UUID] = *r.Email
		}
	}
	for i := range cards {
		if a := cards[i].AssigneeUUID; a != nil {
			if n, ok := names[*a]; ok {
				cards[i].AssigneeName = &n
			}
		}
	}
	return nil
}

// blockerRow is an unresolved dependency (uuid, title, status, project, created_at) of the task Self.
type blockerRow struct {
	Self      string    `bun:"self_uuid"`
	UUID      string    `bun:"uuid"`
	Title     string    `bun:"title"`
	Status    string    `bun:"status"`
	Project   string    `bun:"project_uuid"`
	CreatedAt time.Time `bun:"created_at"`
}

// boardBlockers fills the cards' unresolved dependencies (docs/rules.md §5.3), oldest first:
// the first BoardBlockerRows by title (a task of another project than project by
// ElsewhereTitle, as TaskLinks shows it), all counted. One read of the edges of the cards'
// tasks joined to the dependencies' rows by primary key; sorted here, not by the database.
func (s *Store) boardBlockers(ctx context.Context, project string, ids []string, at map[string]int, cards []BoardCard) error {
	if len(ids) == 0 {
		return nil
	}
	var rows []blockerRow
	err := s.DB.NewSelect().TableExpr("task_dependencies AS d").
		ColumnExpr("d.task_uuid AS self_uuid, t.uuid, t.title, t.status, t.project_uuid, t.created_at").
		Join("JOIN tasks AS t ON t.uuid = d.depends_on_uuid").
		Where("d.task_uuid IN (?)", bun.List(ids)).Where("t.status NOT IN "+resolvedSQL).Scan(ctx, &rows)
	if err != nil {
		return err
	}
	slices.SortFunc(rows, func(a, b blockerRow) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.UUID, b.UUID))
	})
	for _, r := range rows {
		card := &cards[at[r.Self]]
		card.BlockerCount++
		if len(card.Blockers) < BoardBlockerRows {
			l := TaskLink{UUID: r.UUID, Title: r.Title, Status: r.Status}
			if r.Project != project {
				l.Title, l.Elsewhere = ElsewhereTitle, true
			}
			card.Blockers = append(card.Blockers, l)
		}
	}
	return nil
}

// IdeaOption is an idea as a filter lists it.
type IdeaOption struct {
	UUID  string `bun:"uuid"`
	Title string `bun:"title"`
}

// IdeaOptions lists up to limit of a project's ideas, newest first, by uuid and title, and
// how many the project has.
func (s *Store) IdeaOptions(ctx context.Context, projectUUID string, limit int) ([]IdeaOption, int, error) {
	rows := []IdeaOption{}
	q := s.DB.NewSelect().Table("ideas").Column("uuid", "title").Where("project_uuid = ?", projectUUID).
		Order("created_at DESC", "uuid DESC")
	if err := q.Limit(int64(limit)).Scan(ctx, &rows); err != nil {
		return nil, 0, err
	}
	n, err := s.DB.NewSelect().Table("ideas").Where("project_uuid = ?", projectUUID).Count(ctx)
	return rows, int(n), err
}

// IdeaProposalUUIDs lists the idea-input proposals of a project (any status) that list
// ideaUUID as an input (docs/rules.md §1.8: an idea and a proposal are linked only by the idea's
// uuid in inputUuids): the tasks of an idea are these proposals' tasks.
func (s *Store) IdeaProposalUUIDs(ctx context.Context, projectUUID, ideaUUID string) ([]string, error) {
	var props []Proposal
	err := s.DB.NewSelect().Model(&props).Column("uuid", "input_uuids").Where("project_uuid = ?", projectUUID).
		Where("input_type = 'idea'").Order("created_at ASC", "uuid ASC").Scan(ctx)
	if err != nil {
		return nil, err
	}
	ids := []string{}
	for _, p := range props {
		if slices.Contains(p.InputUUIDs, ideaUUID) {
			ids = append(ids, p.UUID)
		}
	}
	return ids, nil
}

// DependencyEdge says Task depends on DependsOn.
type DependencyEdge struct {
	Task      string `bun:"task_uuid"`
	DependsOn string `bun:"depends_on_uuid"`
}

// DependencyEdges lists the dependency edges whose dependent task is one of taskUUIDs (at most
// a few hundred: one graph), in both cases whatever the other end.
func (s *Store) DependencyEdges(ctx context.Context, taskUUIDs []string) ([]DependencyEdge, error) {
	rows := []DependencyEdge{}
	if len(taskUUIDs) == 0 {
		return rows, nil
	}
	err := s.DB.NewSelect().Table("task_dependencies").Column("task_uuid", "depends_on_uuid").
		Where("task_uuid IN (?)", bun.List(taskUUIDs)).Order("created_at ASC", "task_uuid ASC", "depends_on_uuid ASC").
		Scan(ctx, &rows)
	return rows, err
}
