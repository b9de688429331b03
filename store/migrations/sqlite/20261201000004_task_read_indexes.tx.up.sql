-- Task reads that stay flat as a project grows (docs/bench-results.md, "Reads").
--
-- tasks_project_order_idx is the order of chorus_list_tasks and chorus_get_unblocked_tasks
-- (docs/rules.md §8.4: high > medium > low, then newest first): store/tasks.go's priorityRank,
-- written here exactly as the query writes it, so the planner walks the index instead of sorting
-- the project. It holds status and priority too, so a page's uuids, a status filter and the
-- totals are read from the index alone and a deep page skips index entries, not rows.
CREATE INDEX tasks_project_order_idx ON tasks (project_uuid, (CASE priority WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END), created_at, uuid, status, priority);
--bun:split
-- The unblocked rule (docs/rules.md §5.3) looks up each dependency's status by uuid: this index
-- answers it without reading the task row.
CREATE INDEX tasks_uuid_status_idx ON tasks (uuid, status);
--bun:split
-- The same order within one status, for a status filter (a deep page of open tasks skips only
-- open tasks) and for the unblocked rule's candidates (open and assigned tasks, counted
-- without visiting the others).
CREATE INDEX tasks_project_status_order_idx ON tasks (project_uuid, status, (CASE priority WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END), created_at, uuid, priority);
