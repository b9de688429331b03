package app

import (
	"context"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The board (issue 22): a project's tasks in columns by status, in the lifecycle order of
// docs/rules.md §2.4, each column one bounded page; and the dependency graph of an idea's tasks
// (docs/rules.md §1.12, §5.3). Both are reads: viewer access on the project, a hidden project
// (or idea) is not found.

// BoardColumnSize is how many cards a board column shows per page when the query names none.
const BoardColumnSize = 50

// BoardIdeaOptions is how many of a project's ideas the board's idea filter lists (newest first).
const BoardIdeaOptions = 200

// maxBoardPage bounds a column's page number (a larger one shows the first page), so that its
// offset stays far from overflowing.
const maxBoardPage = 1_000_000

// BoardQuery is what a board shows.
type BoardQuery struct {
	// IdeaUUID keeps only the tasks of the idea-input proposals listing this idea; "" keeps all.
	IdeaUUID string
	// Status and Page page one column: Status's column shows page Page (1-based); the other
	// columns show their first page. An unknown Status pages none.
	Status vocab.TaskStatus
	Page   int
	// PerColumn is the page size of every column; 0 is BoardColumnSize.
	PerColumn int
}

// BoardColumn is one status's column: a page of its cards and how many tasks it holds.
type BoardColumn struct {
	Status    vocab.TaskStatus
	Total     int
	Cards     []store.BoardCard
	Page      int // 1-based
	PerColumn int
}

// More reports whether the column holds cards after this page.
func (c BoardColumn) More() bool { return c.Page*c.PerColumn < c.Total }

// Board is a project's board.
type Board struct {
	Project *store.ProjectView
	// Ideas are the idea filter's choices (at most BoardIdeaOptions, newest first); IdeaCount
	// counts the project's ideas.
	Ideas     []store.IdeaOption
	IdeaCount int
	// Idea is the idea filtered on, nil for all tasks.
	Idea *store.Idea
	// Columns has one column per task status, in lifecycle order (vocab.TaskStatuses).
	Columns []BoardColumn
	// Total counts the tasks on the board (all columns, after the filter).
	Total int
}

// Board reads a project's board: the project (viewer access, else "Project not found"), the
// idea filter's choices, the counts per status and one page of cards per column. The idea
// filtered on must be an idea of this project the caller can see, else "Idea not found". The
// reads are bounded by the page: counts from an index, at most PerColumn cards per column.
func (a *App) Board(ctx context.Context, r Request, projectUUID string, q BoardQuery) (*Board, error) {
	pv, err := a.Store.RequireProject(ctx, r.Who.Caller, projectUUID, store.AccessViewer)
	if err != nil {
		return nil, err
	}
	if q.PerColumn <= 0 {
		q.PerColumn = BoardColumnSize
	}
	b := &Board{Project: pv}
	if b.Ideas, b.IdeaCount, err = a.Store.IdeaOptions(ctx, pv.UUID, BoardIdeaOptions); err != nil {
		return nil, err
	}
	var f store.TaskFilter
	if q.IdeaUUID != "" {
		idea, _, err := a.Store.IdeaAccess(ctx, r.Who.Caller, q.IdeaUUID, store.AccessViewer)
		if err == nil && idea.ProjectUUID != pv.UUID {
			err = store.NotFound("Idea")
		}
		if err != nil {
			return nil, err
		}
		b.Idea = idea
		if f.ProposalUUIDs, err = a.Store.IdeaProposalUUIDs(ctx, pv.UUID, idea.UUID); err != nil {
			return nil, err
		}
	}
	offsets := map[vocab.TaskStatus]int{}
	if q.Page > 1 && q.Page <= maxBoardPage {
		offsets[q.Status] = (q.Page - 1) * q.PerColumn
	}
	counts, pages := map[vocab.TaskStatus]int{}, map[vocab.TaskStatus][]store.Task{}
	if b.Idea == nil || len(f.ProposalUUIDs) > 0 { // an idea in no proposal has no tasks
		if counts, pages, err = a.Store.BoardColumns(ctx, pv.UUID, f, q.PerColumn, offsets); err != nil {
			return nil, err
		}
	}
	var tasks []store.Task
	for _, st := range vocab.TaskStatuses {
		col := BoardColumn{Status: st, Total: counts[st], Page: 1 + offsets[st]/q.PerColumn, PerColumn: q.PerColumn,
			Cards: make([]store.BoardCard, len(pages[st]))}
		b.Total += col.Total
		tasks = append(tasks, pages[st]...)
		b.Columns = append(b.Columns, col)
	}
	cards, err := a.Store.BoardCards(ctx, pv.UUID, tasks)
	if err != nil {
		return nil, err
	}
	for i := range b.Columns {
		n := copy(b.Columns[i].Cards, cards)
		cards = cards[n:]
	}
	return b, nil
}

// GraphTaskLimit is how many of an idea's tasks its dependency graph draws; an idea with more
// draws the first GraphTaskLimit in the order of every task list (priority, then newest) and
// says how many it left out.
const GraphTaskLimit = 200

// IdeaGraph is the dependency graph of an idea's tasks.
type IdeaGraph struct {
	Idea    *store.Idea
	Project *store.ProjectView
	// Tasks are at most GraphTaskLimit of the idea's tasks; Total counts them all.
	Tasks []store.Task
	Total int
	// Edges are the dependencies of Tasks (docs/rules.md §1.12), whatever their other end: an
	// edge to a task outside Tasks is a dependency on a task the graph does not draw.
	Edges []store.DependencyEdge
}

// IdeaGraph reads the tasks of an idea (the tasks of the idea-input proposals listing it, any
// status) and their dependencies, for an idea the caller can see (viewer, else "Idea not found").
func (a *App) IdeaGraph(ctx context.Context, r Request, ideaUUID string) (*IdeaGraph, error) {
	idea, pv, err := a.Store.IdeaAccess(ctx, r.Who.Caller, ideaUUID, store.AccessViewer)
	if err != nil {
		return nil, err
	}
	g := &IdeaGraph{Idea: idea, Project: pv, Tasks: []store.Task{}, Edges: []store.DependencyEdge{}}
	props, err := a.Store.IdeaProposalUUIDs(ctx, pv.UUID, idea.UUID)
	if err != nil || len(props) == 0 {
		return g, err
	}
	g.Tasks, g.Total, err = a.Store.ListTasks(ctx, pv.UUID, store.TaskFilter{ProposalUUIDs: props}, GraphTaskLimit, 0)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(g.Tasks))
	for i, t := range g.Tasks {
		ids[i] = t.UUID
	}
	g.Edges, err = a.Store.DependencyEdges(ctx, ids)
	if err != nil {
		return nil, err
	}
	return g, nil
}
