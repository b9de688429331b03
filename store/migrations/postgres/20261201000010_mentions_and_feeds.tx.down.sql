CREATE INDEX activities_project_idx ON activities (project_uuid, created_at);
--bun:split
CREATE INDEX activities_target_idx ON activities (target_type, target_uuid);
--bun:split
DROP INDEX activities_target_time_idx;
--bun:split
DROP INDEX activities_project_seq_idx;
--bun:split
ALTER TABLE activities DROP COLUMN seq;
--bun:split
DROP TABLE mentions;
