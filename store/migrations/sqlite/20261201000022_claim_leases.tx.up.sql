-- Claim leases (docs/rules.md §5.10): a project may give task claims a time to live, in seconds
-- (null: claims last until released). A task row shows its current claim's lease as its
-- workflow holds it: the time to live it was claimed with and when it lapses.
ALTER TABLE projects ADD COLUMN claim_ttl_seconds BIGINT;
--bun:split
ALTER TABLE tasks ADD COLUMN claim_ttl_seconds BIGINT;
--bun:split
ALTER TABLE tasks ADD COLUMN claim_expires_at TIMESTAMP;
