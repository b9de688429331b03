-- The change journal (docs/write-path.md, "One write protocol"): one row per lifecycle row a
-- change moved, written in the change's transaction. A retry of a change that committed is
-- recognised by it even after a later change (a revoke) moved the row on, and a requestId's
-- update is known to have been applied even after its workflow forgot it.
CREATE TABLE change_journal (
    change_id TEXT NOT NULL,
    entity_uuid TEXT NOT NULL,
    entity_table TEXT NOT NULL,
    version BIGINT NOT NULL,
    update_key TEXT NOT NULL DEFAULT '',
    applied_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (change_id, entity_uuid)
);
--bun:split
CREATE INDEX change_journal_update_key ON change_journal (update_key) WHERE update_key <> '';
