ALTER TABLE tasks DROP COLUMN claim_expires_at;
--bun:split
ALTER TABLE tasks DROP COLUMN claim_ttl_seconds;
--bun:split
ALTER TABLE projects DROP COLUMN claim_ttl_seconds;
