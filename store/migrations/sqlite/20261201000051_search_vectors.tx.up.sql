-- Nothing to do on SQLite: search_fts (migration 20261201000031_search) already holds the indexed
-- text apart from the entity tables (the PostgreSQL migration of the same name does the same there).
SELECT 1;
