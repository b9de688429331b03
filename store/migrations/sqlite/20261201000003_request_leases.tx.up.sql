-- The requestId ledger's lease (docs/write-path.md, "Exactly once"): the call running a
-- (agent, requestId) row holds it until running_until, renewing it while it runs; a twin call
-- with the same requestId waits for that call's outcome instead of running beside it, and runs
-- itself once the lease lapses (the holder crashed). running_by names the holding call.
ALTER TABLE tool_requests ADD COLUMN running_until TIMESTAMP;
--bun:split
ALTER TABLE tool_requests ADD COLUMN running_by TEXT;
