DROP INDEX IF EXISTS tasks_search_idx;
--bun:split
CREATE INDEX tasks_search_idx ON tasks USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(description, '')));
--bun:split
DROP INDEX IF EXISTS ideas_search_idx;
--bun:split
CREATE INDEX ideas_search_idx ON ideas USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(content, '')));
--bun:split
DROP INDEX IF EXISTS proposals_search_idx;
--bun:split
CREATE INDEX proposals_search_idx ON proposals USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(description, '')));
--bun:split
DROP INDEX IF EXISTS documents_search_idx;
--bun:split
CREATE INDEX documents_search_idx ON documents USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(content, '')));
--bun:split
DROP INDEX IF EXISTS projects_search_idx;
--bun:split
CREATE INDEX projects_search_idx ON projects USING gin (to_tsvector('simple'::regconfig, coalesce(name, '') || ' ' || coalesce(description, '')));
--bun:split
DROP INDEX IF EXISTS project_groups_search_idx;
--bun:split
CREATE INDEX project_groups_search_idx ON project_groups USING gin (to_tsvector('simple'::regconfig, coalesce(name, '') || ' ' || coalesce(description, '')));
