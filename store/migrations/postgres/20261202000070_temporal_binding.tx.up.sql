-- The Temporal cluster and namespace this database belongs to (docs/write-path.md, "Check and
-- repair"): recorded by the first chorus serve or chorus dev start, so chorus ops (and later
-- starts) refuse a Temporal of another deployment instead of comparing its workflows with these
-- rows. One row at most.
CREATE TABLE temporal_binding (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    cluster_id   TEXT NOT NULL,
    cluster_name TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    namespace_id TEXT NOT NULL,
    address      TEXT NOT NULL,
    bound_at     TIMESTAMPTZ NOT NULL
);
