-- Pruning (docs/write-path.md, "Bounded growth"): the requestId ledger, the change journal and
-- the claim attempts are deleted in small batches, oldest first, once past their windows.
CREATE INDEX tool_requests_created ON tool_requests (created_at);
--bun:split
CREATE INDEX change_journal_applied ON change_journal (applied_at);
--bun:split
CREATE INDEX claim_next_attempts_updated ON claim_next_attempts (updated_at);
--bun:split
CREATE INDEX claim_reservations_expires ON claim_reservations (expires_at);
