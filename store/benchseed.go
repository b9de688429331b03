package store

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
)

// ReadSeed describes a block of tasks that the benchmark (`chorus bench`, reads phase) writes
// straight into the tables so it can measure the read tools at 10,000 or 100,000 tasks without
// creating each one through a workflow.
//
// These rows have NO workflow behind them. That is acceptable only because the reads phase uses
// a project of its own that no command ever touches: every read tool answers from the database
// alone, so it cannot tell the difference, while a command on such a task would find no
// workflow, and `chorus ops check` reports the rows as having none. Never seed a project that
// agents work in. The opscheck phase seeds with Open and then starts each task's workflow from
// its rows (workflows.Client.StartFromState, the start `chorus ops repair` makes), after which
// the tasks are like any other.
type ReadSeed struct {
	CompanyUUID   string
	ProjectUUID   string
	CreatedByUUID string // an agent of the company
	Count         int
	// ChainLen: task i depends on task i-1 unless i starts a chain of this length, and also on
	// task i-ChainLen and i-7*ChainLen when those exist; only earlier tasks, so no cycle.
	ChainLen int
	// Open: every task open, with no dependency (ChainLen is ignored), so any of them can be
	// claimed.
	Open bool
}

// SeedStatus is the status the seeding gives task i: four in ten done, one in ten closed, the
// rest open, spread so that every chain mixes them.
func SeedStatus(i int) vocab.TaskStatus {
	switch i % 10 {
	case 0, 3, 6, 8:
		return vocab.TaskDone
	case 9:
		return vocab.TaskClosed
	}
	return vocab.TaskOpen
}

// SeedReadTasks inserts seed.Count tasks (one acceptance criterion each) and their dependency
// edges, with their counts of unresolved dependencies, in chunks of 500 rows per transaction,
// and returns the task uuids in creation order.
func (s *Store) SeedReadTasks(ctx context.Context, seed ReadSeed) ([]string, error) {
	if seed.ChainLen < 2 {
		seed.ChainLen = 10
	}
	const chunk = 500
	priorities := []string{"low", "medium", "high"}
	ids := make([]string, seed.Count)
	for i := range ids {
		ids[i] = NewUUID()
	}
	base := Now().Add(-time.Duration(seed.Count) * time.Millisecond)
	status := SeedStatus
	if seed.Open {
		status = func(int) vocab.TaskStatus { return vocab.TaskOpen }
	}
	for from := 0; from < seed.Count; from += chunk {
		to := min(from+chunk, seed.Count)
		tasks := make([]Task, 0, to-from)
		acs := make([]AcceptanceCriterion, 0, to-from)
		var deps []TaskDependency
		for i := from; i < to; i++ {
			at := base.Add(time.Duration(i) * time.Millisecond)
			tasks = append(tasks, Task{UUID: ids[i], CompanyUUID: seed.CompanyUUID, ProjectUUID: seed.ProjectUUID,
				Title: fmt.Sprintf("Seeded task %d", i), Status: status(i), Priority: priorities[i%3],
				CreatedByType: "agent", CreatedByUUID: seed.CreatedByUUID, Version: 1, ChangeID: "bench-seed",
				CreatedAt: at, UpdatedAt: at})
			acs = append(acs, AcceptanceCriterion{UUID: NewUUID(), TaskUUID: ids[i], Description: "seeded criterion",
				Required: true, DevStatus: vocab.CriterionPending, Status: vocab.CriterionPending, CreatedAt: at, UpdatedAt: at})
			if seed.Open {
				continue
			}
			if i%seed.ChainLen != 0 {
				deps = append(deps, TaskDependency{TaskUUID: ids[i], DependsOnUUID: ids[i-1], CreatedAt: at})
			}
			for _, back := range []int{seed.ChainLen, 7 * seed.ChainLen} {
				if i-back >= 0 {
					deps = append(deps, TaskDependency{TaskUUID: ids[i], DependsOnUUID: ids[i-back], CreatedAt: at})
				}
			}
		}
		err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.NewInsert().Model(&tasks).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewInsert().Model(&acs).Exec(ctx); err != nil {
				return err
			}
			if len(deps) > 0 {
				if _, err := tx.NewInsert().Model(&deps).Exec(ctx); err != nil {
					return err
				}
			}
			// Each edge points to an earlier task, already inserted: the chunk's counts of
			// unresolved dependencies are complete (store/unresolved.go).
			return recount(ctx, tx, ids[from:to])
		})
		if err != nil {
			return nil, fmt.Errorf("seed tasks %d-%d: %w", from, to-1, err)
		}
	}
	return ids, nil
}
