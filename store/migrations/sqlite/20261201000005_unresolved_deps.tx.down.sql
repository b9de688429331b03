DROP INDEX tasks_project_unblocked_idx;
--bun:split
ALTER TABLE tasks DROP COLUMN unresolved_deps;
