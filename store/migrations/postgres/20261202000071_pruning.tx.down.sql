DROP INDEX claim_reservations_expires;
--bun:split
DROP INDEX claim_next_attempts_updated;
--bun:split
DROP INDEX change_journal_applied;
--bun:split
DROP INDEX tool_requests_created;
