package store_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

// taskGraph is a project's tasks and dependency edges as inserted, for the reference model of
// the task lists (docs/rules.md §8.4 order, §5.3 unblocked rule) the store's queries must match.
type taskGraph struct {
	project string
	tasks   map[string]store.Task
	deps    map[string][]string // task -> the tasks it depends on
}

var taskRank = map[string]int{"high": 3, "medium": 2, "low": 1}

// ordered sorts tasks as every task list does: priority high > medium > low, newest first, uuid
// descending on ties.
func ordered(ts []store.Task) []string {
	slices.SortFunc(ts, func(a, b store.Task) int {
		return cmp.Or(cmp.Compare(taskRank[b.Priority], taskRank[a.Priority]), b.CreatedAt.Compare(a.CreatedAt),
			cmp.Compare(b.UUID, a.UUID))
	})
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UUID
	}
	return out
}

func (g taskGraph) want(keep func(store.Task) bool) []string {
	var ts []store.Task
	for _, t := range g.tasks {
		if t.ProjectUUID == g.project && keep(t) {
			ts = append(ts, t)
		}
	}
	return ordered(ts)
}

func (g taskGraph) unblocked(t store.Task) bool {
	if t.Status != "open" && t.Status != "assigned" {
		return false
	}
	for _, d := range g.deps[t.UUID] {
		if dt, ok := g.tasks[d]; ok && dt.Status != "done" && dt.Status != "closed" {
			return false
		}
	}
	return true
}

// seedTaskGraph makes a project whose tasks share priorities and creation times (so ties are
// broken by uuid), with edges to done, closed, to_verify and in-progress tasks, a dependency
// cycle, an edge to a task of another project, a dependency on a task that is then deleted,
// and a second project whose tasks must never show.
func seedTaskGraph(t *testing.T, st *store.Store) taskGraph {
	ctx := context.Background()
	b, err := st.EnsureBootstrap(ctx, boot)
	require.NoError(t, err)
	c := store.Caller{CompanyUUID: b.Company.UUID, AgentUUID: b.Agent.UUID, OwnerUUID: b.Owner.UUID}
	g := taskGraph{tasks: map[string]store.Task{}, deps: map[string][]string{}}
	var projects []string
	for _, name := range []string{"Main", "Other"} {
		p, err := st.CreateProject(ctx, c, store.NewProject{Name: name})
		require.NoError(t, err)
		projects = append(projects, p.UUID)
	}
	g.project = projects[0]
	statuses := []string{"open", "assigned", "in_progress", "to_verify", "done", "closed"}
	priorities := []string{"low", "medium", "high"}
	proposal := store.NewUUID()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var rows []store.Task
	for i := range 60 {
		project := projects[0]
		if i%5 == 4 {
			project = projects[1]
		}
		at := start.Add(time.Duration(i/4) * time.Minute) // four tasks share each creation time
		task := store.Task{UUID: store.NewUUID(), CompanyUUID: c.CompanyUUID, ProjectUUID: project,
			Title: fmt.Sprintf("task %d", i), Status: statuses[i%len(statuses)], Priority: priorities[(i+i/6)%len(priorities)],
			CreatedByType: "agent", CreatedByUUID: c.AgentUUID, Version: 1, CreatedAt: at, UpdatedAt: at}
		if i%4 < 2 {
			task.ProposalUUID = &proposal
		}
		rows = append(rows, task)
		g.tasks[task.UUID] = task
	}
	_, err = st.DB.NewInsert().Model(&rows).Exec(ctx)
	require.NoError(t, err)

	edge := func(from, to int) {
		g.deps[rows[from].UUID] = append(g.deps[rows[from].UUID], rows[to].UUID)
		_, err := st.DB.NewInsert().Model(&store.TaskDependency{TaskUUID: rows[from].UUID, DependsOnUUID: rows[to].UUID,
			CreatedAt: start}).Exec(ctx)
		require.NoError(t, err)
	}
	// Open (0, 6, 12, ...) and assigned (1, 7, 13, ...) tasks of the main project.
	edge(0, 10)  // on done: unblocked
	edge(6, 11)  // on closed: unblocked
	edge(12, 10) // on done and on closed: unblocked
	edge(12, 5)
	edge(1, 3)   // on to_verify: blocked
	edge(7, 2)   // on in_progress: blocked
	edge(13, 10) // on done and on open: blocked
	edge(13, 18)
	edge(18, 25) // a cycle of two open or assigned tasks (written past the checks): both blocked
	edge(25, 18)
	edge(30, 4)  // on a done task of the other project: unblocked
	edge(31, 9)  // on a to_verify task of the other project: blocked
	edge(36, 37) // on an assigned task that is then deleted: unblocked once it is gone
	_, err = st.DB.NewDelete().Model((*store.Task)(nil)).Where("uuid = ?", rows[37].UUID).Exec(ctx)
	require.NoError(t, err)
	delete(g.tasks, rows[37].UUID)

	// The reference model itself, on the edge cases above.
	for i, want := range map[int]bool{0: true, 6: true, 12: true, 1: false, 7: false, 13: false, 18: false, 25: false,
		30: true, 31: false, 36: true, 24: true} {
		require.Equal(t, want, g.unblocked(rows[i]), "task %d", i)
	}
	return g
}

// pages reads every page of size rows through read and checks each page's total.
func pages(t *testing.T, size int, wantTotal int, read func(limit, offset int) ([]store.Task, int, error)) []string {
	t.Helper()
	var got []string
	for offset := 0; ; offset += size {
		rows, total, err := read(size, offset)
		require.NoError(t, err)
		require.Equal(t, wantTotal, total, "total at offset %d", offset)
		for _, r := range rows {
			got = append(got, r.UUID)
		}
		if len(rows) < size {
			require.Greater(t, offset+size, total, "a short page before the end (offset %d)", offset)
			return got
		}
	}
}

// TestTaskListsMatchTheRules pins chorus_list_tasks, chorus_get_unblocked_tasks and
// chorus_get_available_tasks' queries to a reference model on a graph with edge cases: every
// page at several sizes, every filter, totals, and tasks of another project never showing.
func TestTaskListsMatchTheRules(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		g := seedTaskGraph(t, st)
		var proposal string
		for _, task := range g.tasks {
			if task.ProposalUUID != nil {
				proposal = *task.ProposalUUID
			}
		}
		filters := []store.TaskFilter{{}, {Status: "open"}, {Status: "assigned"}, {Status: "done"}, {Status: "to_verify"},
			{Priority: "high"}, {Priority: "low"}, {ProposalUUIDs: []string{proposal}}, {Status: "open", Priority: "medium"},
			{Status: "closed", ProposalUUIDs: []string{proposal, store.NewUUID()}}}
		for _, f := range filters {
			want := g.want(func(task store.Task) bool {
				return (f.Status == "" || task.Status == f.Status) && (f.Priority == "" || task.Priority == f.Priority) &&
					(len(f.ProposalUUIDs) == 0 || task.ProposalUUID != nil && slices.Contains(f.ProposalUUIDs, *task.ProposalUUID))
			})
			require.NotEmpty(t, want, "filter %+v matches something", f)
			for _, size := range []int{1, 4, 7, 100} {
				got := pages(t, size, len(want), func(limit, offset int) ([]store.Task, int, error) {
					return st.ListTasks(ctx, g.project, f, limit, offset)
				})
				require.Equal(t, want, got, "list %+v by %d", f, size)
			}
		}
		for _, proposals := range [][]string{nil, {proposal}} {
			want := g.want(func(task store.Task) bool {
				return g.unblocked(task) && (proposals == nil || task.ProposalUUID != nil && *task.ProposalUUID == proposal)
			})
			require.NotEmpty(t, want)
			for _, size := range []int{1, 3, 100} {
				got := pages(t, size, len(want), func(limit, offset int) ([]store.Task, int, error) {
					return st.UnblockedTasks(ctx, g.project, proposals, limit, offset)
				})
				require.Equal(t, want, got, "unblocked %v by %d", proposals, size)
			}
			open := g.want(func(task store.Task) bool {
				return task.Status == "open" && (proposals == nil || task.ProposalUUID != nil && *task.ProposalUUID == proposal)
			})
			avail, err := st.AvailableTasks(ctx, g.project, proposals)
			require.NoError(t, err)
			require.Equal(t, open[:min(50, len(open))], ordered(avail), "available %v", proposals)
		}
		rows, total, err := st.ListTasks(ctx, store.NewUUID(), store.TaskFilter{}, 20, 0)
		require.NoError(t, err)
		require.Empty(t, rows)
		require.Zero(t, total)
	})
}
