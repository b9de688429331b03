ALTER TABLE tool_requests DROP COLUMN generation;
--bun:split
ALTER TABLE documents DROP COLUMN change_id;
--bun:split
ALTER TABLE tasks DROP COLUMN change_id;
--bun:split
ALTER TABLE proposals DROP COLUMN change_id;
--bun:split
ALTER TABLE ideas DROP COLUMN change_id;
