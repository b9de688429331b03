-- Mentions (docs/rules.md §7.3): one row per user or agent a text names with @[Name](type:uuid).
-- Ids derive from the text's change, so a retried write inserts nothing twice.
CREATE TABLE mentions (
    uuid           TEXT PRIMARY KEY,
    company_uuid   TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    source_type    TEXT NOT NULL CHECK (source_type IN ('comment', 'task', 'idea')),
    source_uuid    TEXT NOT NULL,
    mentioned_type TEXT NOT NULL CHECK (mentioned_type IN ('user', 'agent')),
    mentioned_uuid TEXT NOT NULL,
    actor_type     TEXT NOT NULL,
    actor_uuid     TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE INDEX mentions_source_idx ON mentions (source_type, source_uuid);
--bun:split
CREATE INDEX mentions_mentioned_idx ON mentions (mentioned_type, mentioned_uuid, created_at);
--bun:split
-- Rows of one change share a time; seq keeps their insertion order, so chorus_get_activity
-- lists them newest first in the order they were written (store/feeds.go).
ALTER TABLE activities ADD COLUMN seq BIGSERIAL;
--bun:split
-- chorus_get_activity per project and per entity, newest first (docs/rules.md §4.17).
CREATE INDEX activities_project_seq_idx ON activities (project_uuid, created_at, seq);
--bun:split
CREATE INDEX activities_target_time_idx ON activities (target_type, target_uuid, created_at, seq);
--bun:split
DROP INDEX activities_target_idx;
--bun:split
DROP INDEX activities_project_idx;
