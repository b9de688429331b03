-- chorus_claim_next_task under a requestId (docs/write-path.md, "Exactly once"): the call tries
-- candidate tasks one after another, and records here which task it is about to try before it
-- sends the claim. Only the last one tried can have been claimed; a retry of a call whose outcome
-- was lost asks that task's workflow first, so the request never claims two tasks.
CREATE TABLE claim_next_attempts (
    agent_uuid  TEXT NOT NULL REFERENCES agents (uuid) ON DELETE CASCADE,
    request_id  TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    task_uuid   TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent_uuid, request_id, generation)
);
