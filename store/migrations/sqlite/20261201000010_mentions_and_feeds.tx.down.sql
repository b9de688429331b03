CREATE INDEX activities_target_idx ON activities (target_type, target_uuid);
--bun:split
DROP INDEX activities_target_time_idx;
--bun:split
DROP TABLE mentions;
