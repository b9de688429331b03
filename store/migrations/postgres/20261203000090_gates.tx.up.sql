-- Human gates (docs/rules.md §6.6): a project's policy names the commands that wait for a person,
-- and each agent's call of such a command is a gate request until a person decides it or it
-- expires. The entity's workflow writes the request rows (docs/write-path.md, "Who writes what").
CREATE TABLE gate_policies (
    project_uuid         TEXT PRIMARY KEY REFERENCES projects (uuid) ON DELETE CASCADE,
    company_uuid         TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    commands             TEXT NOT NULL DEFAULT '',
    expire_after_seconds INTEGER NOT NULL DEFAULT 0 CHECK (expire_after_seconds >= 0),
    separate_duties      BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at           TIMESTAMPTZ NOT NULL
);

CREATE TABLE gate_requests (
    uuid              TEXT PRIMARY KEY,
    company_uuid      TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid      TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    entity_type       TEXT NOT NULL CHECK (entity_type IN ('idea', 'proposal', 'task')),
    entity_uuid       TEXT NOT NULL,
    entity_title      TEXT NOT NULL DEFAULT '',
    command           TEXT NOT NULL CHECK (command IN ('approve_proposal', 'verify_task', 'resolve_elaboration')),
    input             TEXT NOT NULL DEFAULT '',
    requested_by_type TEXT NOT NULL,
    requested_by_uuid TEXT NOT NULL,
    requested_by_name TEXT NOT NULL DEFAULT '',
    status            TEXT NOT NULL CHECK (status IN ('awaiting', 'applied', 'refused', 'expired')),
    decided_by_uuid   TEXT,
    decided_by_name   TEXT,
    note              TEXT,
    expires_at        TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL,
    decided_at        TIMESTAMPTZ,
    updated_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX gate_requests_project_idx ON gate_requests (project_uuid, status, created_at);
CREATE INDEX gate_requests_entity_idx ON gate_requests (entity_uuid);
