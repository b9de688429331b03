-- Agent sessions and their task check-ins (docs/rules.md §1.17, §2.5): plain records, no
-- workflow. A session belongs to one agent; "stale" is derived from last_active_at when read.
-- A check-in row is unique per (session, task); checking in again reopens the same row.
CREATE TABLE agent_sessions (
    uuid           TEXT PRIMARY KEY,
    company_uuid   TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    agent_uuid     TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    description    TEXT,
    status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed')),
    last_active_at TIMESTAMP NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX agent_sessions_agent_idx ON agent_sessions (agent_uuid, created_at);
--bun:split
CREATE TABLE session_task_checkins (
    session_uuid TEXT NOT NULL REFERENCES agent_sessions (uuid) ON DELETE CASCADE,
    task_uuid    TEXT NOT NULL REFERENCES tasks (uuid) ON DELETE CASCADE,
    checkin_at   TIMESTAMP NOT NULL,
    checkout_at  TIMESTAMP,
    PRIMARY KEY (session_uuid, task_uuid)
);
--bun:split
CREATE INDEX session_task_checkins_task_idx ON session_task_checkins (task_uuid);
