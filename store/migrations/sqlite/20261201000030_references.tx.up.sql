-- References (docs/rules.md §1.16): a link from an idea, proposal or task to a url. Plain
-- records, written by the reference tools and the creates' inline references; read back on the
-- target, oldest first.
CREATE TABLE reference_artifacts (
    uuid            TEXT PRIMARY KEY,
    company_uuid    TEXT NOT NULL REFERENCES companies (uuid) ON DELETE CASCADE,
    target_type     TEXT NOT NULL CHECK (target_type IN ('idea', 'proposal', 'task')),
    target_uuid     TEXT NOT NULL,
    type            TEXT NOT NULL CHECK (type IN ('docs', 'repo', 'issue_pr', 'paper_blog')),
    url             TEXT NOT NULL,
    title           TEXT NOT NULL,
    notes           TEXT,
    created_by_type TEXT NOT NULL,
    created_by_uuid TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX reference_artifacts_target_idx ON reference_artifacts (target_type, target_uuid, created_at);
