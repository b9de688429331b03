-- Events (docs/rules.md §7.4): every notification spec written also writes one event, in the same
-- transaction, for GET /api/events and webhooks. id is insertion order only; seq is the public,
-- gapless position in commit order, given after commit by the sequencer (store.SequenceEvents), so a
-- reader that has seen seq N can never later find a smaller one appear.
CREATE TABLE events (
    id           BIGSERIAL PRIMARY KEY,
    seq          BIGINT,
    uuid         TEXT NOT NULL UNIQUE,
    company_uuid TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    project_uuid TEXT NOT NULL DEFAULT '',
    kind         TEXT NOT NULL,
    entity_type  TEXT NOT NULL DEFAULT '',
    entity_uuid  TEXT NOT NULL DEFAULT '',
    idea_uuid    TEXT NOT NULL DEFAULT '',
    actor_type   TEXT NOT NULL DEFAULT '',
    actor_uuid   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX events_seq_idx ON events (seq) WHERE seq IS NOT NULL;
CREATE INDEX events_unsequenced_idx ON events (id) WHERE seq IS NULL;
CREATE INDEX events_created_idx ON events (created_at);

CREATE TABLE event_recipients (
    recipient_type TEXT NOT NULL,
    recipient_uuid TEXT NOT NULL,
    event_id       BIGINT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    PRIMARY KEY (recipient_type, recipient_uuid, event_id)
);
CREATE INDEX event_recipients_event_idx ON event_recipients (event_id);
