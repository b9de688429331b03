-- What chorus ops check last found in agreement (docs/write-path.md, "Check and repair"): per
-- entity, the workflow run and the row version and change id it compared. An incremental pass
-- compares again only the entities whose row or run moved since, and those it did not find in
-- agreement.
CREATE TABLE ops_check_marks (
    workflow_id   TEXT PRIMARY KEY,
    run_id        TEXT NOT NULL,
    row_version   BIGINT NOT NULL,
    row_change_id TEXT NOT NULL,
    checked_at    TIMESTAMPTZ NOT NULL
);
