package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

// The unresolved-dependency count. tasks.unresolved_deps (migration 20261201000005) is how many
// of a task's dependencies are neither done nor closed (docs/rules.md §5.3), so "unblocked" is
// `status IN ('open', 'assigned') AND unresolved_deps = 0`: UnblockedTasks reads its page and
// its total from an index of exactly those tasks (tasks_project_unblocked_idx) instead of
// checking every candidate's dependencies.
//
// Every write that can change a count recounts the tasks it affects, in its own transaction
// (docs/write-path.md), from the edges and statuses that transaction sees:
//   - a task moving to done or closed recounts its dependents (ApplyTaskChange). No command moves
//     a task out of done or closed (docs/rules.md §2.4), so no other status change can change a
//     dependent's count;
//   - edges added or removed recount the task they start from (ApplyTaskChange, CreateTaskBatch,
//     ApplyApproval, SeedReadTasks);
//   - deleting a task: its edges cascade with its row, so the delete reads the task's dependents
//     first and recounts them after the row and its edges are gone. The deleted task's own
//     count goes with its row: the side that remains is the side that is recounted;
//   - a revoke recounts the dependents of the tasks it closes, inside and outside the proposal
//     (those outside lose their edges to them);
//   - chorus ops repair rewriting or re-inserting a task row recounts the row and its dependents
//     (RepairRow), whatever the status moved from; and it recounts a count that drifted
//     (RecountUnresolved), which chorus ops check reports (UnresolvedDrift).
//
// A recount sets the count to what the edges say, so it never accumulates: a change recognised
// as already applied writes nothing (recount included), and were a recount run twice it would
// change nothing the second time.
//
// Concurrency. SQLite runs one write transaction at a time. On PostgreSQL (read committed) a
// recount reads what was committed when its statement started, so two writes that could change
// the same count must not overlap: every write that recounts first takes its project's lock
// (lockProject, before any task row), and the writes that do not take it (a claim, a start, a
// submission) change no edge and no task's resolved-ness. A write that holds the project lock
// may wait for a dependent's row held by such a write; that write waits for nothing the first
// one holds (it takes no project lock and locks no other task), so the two cannot deadlock.

// unresolvedSQL counts the unresolved dependencies of the task row being updated or selected
// ("tasks", unaliased).
const unresolvedSQL = "(SELECT count(*) FROM task_dependencies AS d JOIN tasks AS dt ON dt.uuid = d.depends_on_uuid " +
	"WHERE d.task_uuid = tasks.uuid AND dt.status NOT IN ('done', 'closed'))"

// resolvedStatus reports whether a dependency on a task in this status is resolved (docs/rules.md §5.3).
func resolvedStatus(status string) bool { return status == "done" || status == "closed" }

// recount sets unresolved_deps of the given tasks to what their edges say, writing only the rows
// whose count changes.
func recount(ctx context.Context, db bun.IDB, uuids []string) error {
	if len(uuids) == 0 {
		return nil
	}
	_, err := db.NewUpdate().Table("tasks").Set("unresolved_deps = "+unresolvedSQL).
		Where("uuid IN (?)", bun.List(uuids)).Where("unresolved_deps <> " + unresolvedSQL).Exec(ctx)
	return err
}

// dependents lists the tasks that depend on any of uuids.
func dependents(ctx context.Context, db bun.IDB, uuids []string) ([]string, error) {
	var out []string
	if len(uuids) == 0 {
		return out, nil
	}
	err := db.NewSelect().Table("task_dependencies").Column("task_uuid").Distinct().
		Where("depends_on_uuid IN (?)", bun.List(uuids)).Scan(ctx, &out)
	return out, err
}

// recountDependents recounts the tasks that depend on uuid.
func recountDependents(ctx context.Context, db bun.IDB, uuid string) error {
	_, err := db.NewUpdate().Table("tasks").Set("unresolved_deps = "+unresolvedSQL).
		Where("uuid IN (SELECT task_uuid FROM task_dependencies WHERE depends_on_uuid = ?)", uuid).
		Where("unresolved_deps <> " + unresolvedSQL).Exec(ctx)
	return err
}

// UnresolvedDrift is a task whose kept count of unresolved dependencies differs from a recount.
type UnresolvedDrift struct {
	TaskUUID    string `bun:"uuid"`
	ProjectUUID string `bun:"project_uuid"`
	// Kept is the stored count; Counted is what the task's edges say.
	Kept    int `bun:"kept"`
	Counted int `bun:"counted"`
}

// UnresolvedDrifts lists the tasks whose kept count of unresolved dependencies differs from a
// recount (chorus ops check), oldest first; taskUUIDs, when given, limits it to those tasks. It
// is one statement, so it reads one consistent state of the database: since every write keeps
// the counts in its own transaction, a difference is never a write in flight.
func (s *Store) UnresolvedDrifts(ctx context.Context, taskUUIDs ...string) ([]UnresolvedDrift, error) {
	var out []UnresolvedDrift
	q := s.DB.NewSelect().Table("tasks").ColumnExpr("uuid, project_uuid, unresolved_deps AS kept, "+unresolvedSQL+" AS counted").
		Where("unresolved_deps <> "+unresolvedSQL).Order("created_at ASC", "uuid ASC")
	if len(taskUUIDs) > 0 {
		q = q.Where("uuid IN (?)", bun.List(taskUUIDs))
	}
	err := q.Scan(ctx, &out)
	return out, err
}

// RecountUnresolved recounts, in one transaction with the project locked, the unresolved
// dependencies of the given tasks of a project, or of every task of the project when none is
// given (chorus ops repair; and the benchmark, after seeding rows straight into the tables). It
// returns how many counts it changed.
func (s *Store) RecountUnresolved(ctx context.Context, projectUUID string, taskUUIDs ...string) (int, error) {
	var n int
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n = 0
		if err := lockProject(ctx, tx, projectUUID); err != nil {
			return err
		}
		q := tx.NewUpdate().Table("tasks").Set("unresolved_deps = "+unresolvedSQL).Where("project_uuid = ?", projectUUID).
			Where("unresolved_deps <> " + unresolvedSQL)
		if len(taskUUIDs) > 0 {
			q = q.Where("uuid IN (?)", bun.List(slices.Compact(slices.Sorted(slices.Values(taskUUIDs)))))
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return fmt.Errorf("recount unresolved dependencies: %w", err)
		}
		rows, err := res.RowsAffected()
		n = int(rows)
		return err
	})
	return n, err
}
