package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// boardFixture is a project of 40 seeded tasks (store.SeedReadTasks: chains of dependencies,
// open, done and closed), an idea whose proposal holds the even ones, an idea in no proposal,
// and callers: the company's owner, a person of the company outside the (private) project, and
// an agent of another company.
type boardFixture struct {
	app                    *App
	st                     *store.Store
	owner, outsider, alien Request
	project, idea, lonely  string
	tasks                  []string
}

func newBoardFixture(t *testing.T) *boardFixture {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "chorus.db"))
	require.NoError(t, err)
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Ada",
		OwnerEmail: "ada@example.com", AgentName: "Admin Agent"})
	require.NoError(t, err)
	f := &boardFixture{app: &App{Store: st}, st: st, owner: Request{Who: UserPrincipal(&boot.Owner)}}
	bob, err := st.CreateUser(ctx, boot.Company.UUID, "bob@example.com", "", store.RoleMember)
	require.NoError(t, err)
	f.outsider = Request{Who: UserPrincipal(bob)}
	f.alien = Request{Who: Principal{Caller: store.Caller{CompanyUUID: store.NewUUID(), AgentUUID: store.NewUUID()}}}
	p, err := st.CreateProject(ctx, f.owner.Who.Caller, store.NewProject{Name: "Vault", Visibility: "private"})
	require.NoError(t, err)
	f.project = p.UUID
	f.tasks, err = st.SeedReadTasks(ctx, store.ReadSeed{CompanyUUID: boot.Company.UUID, ProjectUUID: p.UUID,
		CreatedByUUID: boot.Agent.UUID, Count: 40})
	require.NoError(t, err)
	now := store.Now()
	idea := func(title string) string {
		i := store.Idea{UUID: store.NewUUID(), CompanyUUID: boot.Company.UUID, ProjectUUID: p.UUID, Title: title,
			Status: vocab.IdeaElaborated, CreatedByType: "agent", CreatedByUUID: boot.Agent.UUID, Version: 1,
			ChangeID: "t", CreatedAt: now, UpdatedAt: now}
		_, err := st.DB.NewInsert().Model(&i).Exec(ctx)
		require.NoError(t, err)
		return i.UUID
	}
	f.idea, f.lonely = idea("Checkout"), idea("Gift cards")
	pr := store.Proposal{UUID: store.NewUUID(), CompanyUUID: boot.Company.UUID, ProjectUUID: p.UUID, Title: "Plan",
		InputType: "idea", InputUUIDs: []string{f.idea}, Status: vocab.ProposalApproved, CreatedByType: "agent",
		CreatedByUUID: boot.Agent.UUID, Version: 1, ChangeID: "t", CreatedAt: now, UpdatedAt: now}
	_, err = st.DB.NewInsert().Model(&pr).Exec(ctx)
	require.NoError(t, err)
	var even []string
	for i := 0; i < len(f.tasks); i += 2 {
		even = append(even, f.tasks[i])
	}
	_, err = st.DB.NewUpdate().Table("tasks").Set("proposal_uuid = ?", pr.UUID).Where("uuid IN (?)", bun.List(even)).Exec(ctx)
	require.NoError(t, err)
	return f
}

// The board: every status a column, in lifecycle order, counted in full and paged in the order
// of every task list; each card's blockers are the task's unresolved dependencies as
// store.Blockers lists them (docs/rules.md §5.3), none for a done or closed task; the idea
// filter keeps the idea's proposals' tasks; a hidden project is "Project not found".
func TestBoard(t *testing.T) {
	ctx := context.Background()
	f := newBoardFixture(t)
	b, err := f.app.Board(ctx, f.owner, f.project, BoardQuery{PerColumn: 4})
	require.NoError(t, err)
	require.Equal(t, 40, b.Total)
	var got []vocab.TaskStatus
	blocked := 0
	counts := map[vocab.TaskStatus]int{}
	for i := range 40 {
		counts[store.SeedStatus(i)]++
	}
	for _, c := range b.Columns {
		got = append(got, c.Status)
		require.Equal(t, counts[c.Status], c.Total, c.Status)
		want, _, err := f.st.ListTasks(ctx, f.project, store.TaskFilter{Status: string(c.Status)}, 4, 0)
		require.NoError(t, err)
		require.Len(t, c.Cards, len(want))
		for i, card := range c.Cards {
			require.Equal(t, want[i].UUID, card.UUID, "the order of every task list")
			require.Equal(t, 1, card.CriteriaTotal)
			blockers, err := f.st.Blockers(ctx, card.UUID)
			require.NoError(t, err)
			if card.Status.Resolved() {
				require.Zero(t, card.BlockerCount)
				continue
			}
			require.Equal(t, len(blockers), card.BlockerCount, card.Title)
			blocked += min(card.BlockerCount, 1)
			for j, bl := range card.Blockers {
				require.Equal(t, blockers[j].Title, bl.Title)
			}
		}
	}
	require.Equal(t, vocab.TaskStatuses, got)
	require.NotZero(t, blocked, "some cards are blocked")
	require.True(t, b.Columns[0].More())

	// Page 2 of the open column: the next four; the other columns stay on page 1.
	b2, err := f.app.Board(ctx, f.owner, f.project, BoardQuery{PerColumn: 4, Status: vocab.TaskOpen, Page: 2})
	require.NoError(t, err)
	want, _, err := f.st.ListTasks(ctx, f.project, store.TaskFilter{Status: "open"}, 4, 4)
	require.NoError(t, err)
	require.Equal(t, 2, b2.Columns[0].Page)
	require.Equal(t, want[0].UUID, b2.Columns[0].Cards[0].UUID)
	require.Equal(t, b.Columns[4].Cards[0].UUID, b2.Columns[4].Cards[0].UUID)

	byIdea, err := f.app.Board(ctx, f.owner, f.project, BoardQuery{IdeaUUID: f.idea})
	require.NoError(t, err)
	require.Equal(t, 20, byIdea.Total, "the even tasks are the idea's proposal's")
	for _, c := range byIdea.Columns {
		for _, card := range c.Cards {
			require.Equal(t, 0, indexOf(f.tasks, card.UUID)%2)
		}
	}
	lonely, err := f.app.Board(ctx, f.owner, f.project, BoardQuery{IdeaUUID: f.lonely})
	require.NoError(t, err)
	require.Zero(t, lonely.Total, "an idea in no proposal has no tasks")

	for _, r := range []Request{f.outsider, f.alien} {
		_, err = f.app.Board(ctx, r, f.project, BoardQuery{})
		require.EqualError(t, err, "Project not found")
		_, err = f.app.IdeaGraph(ctx, r, f.idea)
		require.EqualError(t, err, "Idea not found")
	}
	_, err = f.app.Board(ctx, f.owner, f.project, BoardQuery{IdeaUUID: store.NewUUID()})
	require.EqualError(t, err, "Idea not found")
}

// The graph of an idea: its proposals' tasks and the dependencies of these tasks.
func TestIdeaGraph(t *testing.T) {
	ctx := context.Background()
	f := newBoardFixture(t)
	g, err := f.app.IdeaGraph(ctx, f.owner, f.idea)
	require.NoError(t, err)
	require.Equal(t, 20, g.Total)
	require.Len(t, g.Tasks, 20)
	drawn := map[string]bool{}
	for _, task := range g.Tasks {
		drawn[task.UUID] = true
	}
	n := 0
	for _, task := range g.Tasks {
		deps, err := f.st.DependsOn(ctx, task.UUID)
		require.NoError(t, err)
		n += len(deps)
	}
	require.Len(t, g.Edges, n, "every dependency of a drawn task")
	for _, e := range g.Edges {
		require.True(t, drawn[e.Task])
	}
	empty, err := f.app.IdeaGraph(ctx, f.owner, f.lonely)
	require.NoError(t, err)
	require.Zero(t, empty.Total)
	require.Empty(t, empty.Tasks)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
