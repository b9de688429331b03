-- chorus_search on PostgreSQL finds words joined by punctuation (docs/rules.md §4.12): the default
-- parser keeps 'config.yaml', 'v1.2' or 'dark-mode' as single tokens, so a search for yaml or mode
-- missed them where SQLite's FTS5 found them. Each index now reads the text with its ASCII
-- punctuation turned into spaces, as store/search.go writes the query and its match expression.
DROP INDEX IF EXISTS tasks_search_idx;
--bun:split
CREATE INDEX tasks_search_idx ON tasks USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP INDEX IF EXISTS ideas_search_idx;
--bun:split
CREATE INDEX ideas_search_idx ON ideas USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(content, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP INDEX IF EXISTS proposals_search_idx;
--bun:split
CREATE INDEX proposals_search_idx ON proposals USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP INDEX IF EXISTS documents_search_idx;
--bun:split
CREATE INDEX documents_search_idx ON documents USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(content, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP INDEX IF EXISTS projects_search_idx;
--bun:split
CREATE INDEX projects_search_idx ON projects USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(name, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP INDEX IF EXISTS project_groups_search_idx;
--bun:split
CREATE INDEX project_groups_search_idx ON project_groups USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(name, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
