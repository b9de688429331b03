DROP INDEX change_journal_entity;
--bun:split
ALTER TABLE change_journal DROP COLUMN rolled_back_at;
--bun:split
ALTER TABLE change_journal DROP COLUMN update_id;
