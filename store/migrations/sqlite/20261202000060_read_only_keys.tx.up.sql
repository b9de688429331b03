-- A read-only key (docs/rules.md §3.3, chorus key create --read-only) may list and call only
-- the tools that change nothing, whatever its agent's permissions and whatever the connection
-- selects.
ALTER TABLE api_keys ADD COLUMN read_only BOOLEAN NOT NULL DEFAULT FALSE;
