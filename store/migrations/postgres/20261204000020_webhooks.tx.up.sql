-- Webhooks (docs/rules.md §7.5): a project's webhook sends each of the project's events, from
-- its creation on (seq > from_seq), to its URL, signed with its secret. The secret is stored as
-- is, since every delivery is signed with it: whoever can read this table can forge deliveries
-- (docs/security.md "Webhooks"). kinds is a comma list of event kinds ('' for all).
CREATE TABLE webhooks (
    uuid            TEXT PRIMARY KEY,
    company_uuid    TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid    TEXT NOT NULL REFERENCES projects (uuid) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    secret          TEXT NOT NULL,
    kinds           TEXT NOT NULL DEFAULT '',
    from_seq        BIGINT NOT NULL DEFAULT 0,
    created_by_type TEXT NOT NULL,
    created_by_uuid TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    disabled_at     TIMESTAMPTZ
);
CREATE INDEX webhooks_project_idx ON webhooks (project_uuid);

-- One delivery per event and webhook: uuid = uuid5(webhook uuid + event uuid), the idempotency
-- id a receiver sees on every attempt and redelivery. body is the payload as sent, so pruning
-- events never breaks a redelivery. A delivery is pending until the dispatcher started its
-- workflow (workflow_id), delivering while the workflow tries, then delivered or dead.
CREATE TABLE webhook_deliveries (
    uuid             TEXT PRIMARY KEY,
    webhook_uuid     TEXT NOT NULL REFERENCES webhooks (uuid) ON DELETE CASCADE,
    event_seq        BIGINT NOT NULL,
    event_uuid       TEXT NOT NULL,
    kind             TEXT NOT NULL,
    body             TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'delivering', 'delivered', 'dead')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    next_attempt_at  TIMESTAMPTZ,
    delivered_at     TIMESTAMPTZ,
    workflow_id      TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_uuid, event_seq);
CREATE INDEX webhook_deliveries_undispatched_idx ON webhook_deliveries (created_at) WHERE workflow_id = '';

-- The dispatcher's cursor: the last event seq it turned into deliveries. One row.
CREATE TABLE webhook_cursor (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT NOT NULL DEFAULT 0
);
INSERT INTO webhook_cursor (id, last_seq) VALUES (1, 0);
