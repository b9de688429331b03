DROP INDEX tasks_project_status_order_idx;
--bun:split
DROP INDEX tasks_uuid_status_idx;
--bun:split
DROP INDEX tasks_project_order_idx;
