-- A repair that rolls a row back (docs/write-path.md, "Check and repair") marks the change
-- journal entries it undoes, and the requestId ledger rows of their updates, so a retry is told
-- instead of being answered "applied". update_id is the update that made the change ('' for a
-- change no update made), which names its ledger row.
ALTER TABLE change_journal ADD COLUMN update_id TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE change_journal ADD COLUMN rolled_back_at TIMESTAMP;
--bun:split
CREATE INDEX change_journal_entity ON change_journal (entity_uuid, version);
