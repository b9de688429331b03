-- The write protocol (docs/write-path.md): every lifecycle row records the id of the last change
-- applied to it, so a retried change is recognised and any other change at the same version is
-- a conflict. Documents get one too, for chorus_pm_update_document's requestId.
ALTER TABLE ideas ADD COLUMN change_id TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE proposals ADD COLUMN change_id TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE tasks ADD COLUMN change_id TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE documents ADD COLUMN change_id TEXT NOT NULL DEFAULT '';
--bun:split
-- The requestId ledger moves a requestId to its next generation after a refusal, so a retry
-- after the state changed runs the command again (docs/write-path.md, "Exactly once").
ALTER TABLE tool_requests ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
