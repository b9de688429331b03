package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/chorus-dev/chorus/vocab"
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
//     (RecountUnresolved), which chorus ops check reports (UnresolvedDrifts).
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

// ResolvedStatus reports whether a dependency on a task in this status is resolved: the one
// statement of "resolved" is vocab.ResolvedTaskStatuses (docs/rules.md §5.3).
// It takes a vocab.TaskStatus or a plain string read from a row.
func ResolvedStatus[S ~string](status S) bool { return vocab.TaskStatus(status).Resolved() }

// resolvedSQL is vocab.ResolvedTaskStatuses as an SQL list of literals, "('done', 'closed')",
// for the conditions that find unresolved dependencies ("dt.status NOT IN "+resolvedSQL).
var resolvedSQL = func() string {
	quoted := make([]string, len(vocab.ResolvedTaskStatuses))
	for i, s := range vocab.ResolvedTaskStatuses {
		quoted[i] = "'" + string(s) + "'"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}()

// recountWhere sets unresolved_deps of the tasks `which` selects (a condition on "t") to what
// their edges say, writing only the rows whose count changes, and returns how many it changed.
func recountWhere(ctx context.Context, db bun.IDB, which string, args ...any) (int, error) {
	res, err := db.NewRaw("UPDATE tasks SET unresolved_deps = c.counted FROM ("+fmt.Sprintf(countedSQL, which)+") AS c "+
		"WHERE tasks.uuid = c.uuid AND tasks.unresolved_deps <> c.counted", args...).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("recount unresolved dependencies: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// recount recounts the given tasks.
func recount(ctx context.Context, db bun.IDB, uuids []string) error {
	if len(uuids) == 0 {
		return nil
	}
	_, err := recountWhere(ctx, db, "t.uuid IN (?)", bun.List(uuids))
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
	_, err := recountWhere(ctx, db, "t.uuid IN (SELECT task_uuid FROM task_dependencies WHERE depends_on_uuid = ?)", uuid)
	return err
}

// countedSQL is, for every task of the tasks `which` selects (a condition on "t", the task), its
// uuid, project, kept count and recounted count: a join and a GROUP BY, so on a whole project or
// database the planner hashes the edges once instead of counting them task by task (a correlated
// count per task over a freshly loaded table, planned on stale statistics, ran for minutes at
// 100,000 tasks on PostgreSQL).
var countedSQL = "SELECT t.uuid, t.project_uuid, t.unresolved_deps AS kept, count(dt.uuid) AS counted FROM tasks AS t " +
	"LEFT JOIN task_dependencies AS d ON d.task_uuid = t.uuid " +
	"LEFT JOIN tasks AS dt ON dt.uuid = d.depends_on_uuid AND dt.status NOT IN " + resolvedSQL + " " +
	"WHERE %s GROUP BY t.uuid, t.project_uuid, t.unresolved_deps, t.created_at"

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
	which, args := "TRUE", []any{}
	if len(taskUUIDs) > 0 {
		which, args = "t.uuid IN (?)", []any{bun.List(taskUUIDs)}
	}
	err := s.DB.NewRaw(fmt.Sprintf(countedSQL, which)+" HAVING count(dt.uuid) <> t.unresolved_deps ORDER BY t.created_at, t.uuid",
		args...).Scan(ctx, &out)
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
		which, args := "t.project_uuid = ?", []any{projectUUID}
		if len(taskUUIDs) > 0 {
			which += " AND t.uuid IN (?)"
			args = append(args, bun.List(slices.Compact(slices.Sorted(slices.Values(taskUUIDs)))))
		}
		var err error
		n, err = recountWhere(ctx, tx, which, args...)
		return err
	})
	return n, err
}
