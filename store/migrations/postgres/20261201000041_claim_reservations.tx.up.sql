-- chorus_claim_next_task (docs/rules.md §4.14): before a call asks a candidate task's workflow for
-- the claim, it reserves the task here for a few seconds. Calls racing for the same candidates
-- then skip a task another call is asking for instead of sending a claim its workflow would
-- refuse, so each task sees about one claim attempt however many agents ask at once. A
-- reservation only saves work: the workflow still decides, and a lapsed one (its call died) is
-- taken over.
CREATE TABLE claim_reservations (
    task_uuid   TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
