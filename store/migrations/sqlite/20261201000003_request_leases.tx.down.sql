ALTER TABLE tool_requests DROP COLUMN running_by;
--bun:split
ALTER TABLE tool_requests DROP COLUMN running_until;
