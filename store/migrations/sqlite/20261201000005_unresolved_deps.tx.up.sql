-- The unblocked rule (docs/rules.md §5.3) as an indexed read (docs/bench-results.md, "Reads").
--
-- unresolved_deps is the number of the task's dependencies whose task is neither done nor
-- closed. The store keeps it in the transaction of every write that can change it (store/
-- unresolved.go): a dependency's status change, an edge inserted or deleted, a task deleted, a
-- revoke, a repair. chorus ops check reports a count that differs from a recount, and chorus ops
-- repair recounts it.
ALTER TABLE tasks ADD COLUMN unresolved_deps INTEGER NOT NULL DEFAULT 0 CHECK (unresolved_deps >= 0);
--bun:split
UPDATE tasks SET unresolved_deps = c.n
FROM (SELECT d.task_uuid, count(*) AS n FROM task_dependencies AS d JOIN tasks AS dt ON dt.uuid = d.depends_on_uuid
      WHERE dt.status NOT IN ('done', 'closed') GROUP BY d.task_uuid) AS c
WHERE tasks.uuid = c.task_uuid;
--bun:split
-- The unblocked tasks of a project in list order (store/tasks.go's priorityRank, written exactly
-- as the query writes it): chorus_get_unblocked_tasks reads its page and its total from this
-- index alone (a covering index), and the index holds only unblocked tasks. The WHERE is the
-- query's own, term for term, so the planner can use it. The trailing columns make it covering:
-- priority for the order expression, status and unresolved_deps for the WHERE terms the planner
-- still checks, proposal_uuid for the proposal filter.
CREATE INDEX tasks_project_unblocked_idx ON tasks (project_uuid, (CASE priority WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END), created_at, uuid, priority, status, unresolved_deps, proposal_uuid)
WHERE status IN ('open', 'assigned') AND unresolved_deps = 0;
