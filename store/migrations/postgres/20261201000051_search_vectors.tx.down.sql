DROP TRIGGER IF EXISTS tasks_search_insert ON tasks;
--bun:split
DROP TRIGGER IF EXISTS tasks_search_update ON tasks;
--bun:split
DROP TRIGGER IF EXISTS tasks_search_delete ON tasks;
--bun:split
DROP FUNCTION IF EXISTS tasks_search_sync();
--bun:split
CREATE INDEX tasks_search_idx ON tasks USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP TRIGGER IF EXISTS ideas_search_insert ON ideas;
--bun:split
DROP TRIGGER IF EXISTS ideas_search_update ON ideas;
--bun:split
DROP TRIGGER IF EXISTS ideas_search_delete ON ideas;
--bun:split
DROP FUNCTION IF EXISTS ideas_search_sync();
--bun:split
CREATE INDEX ideas_search_idx ON ideas USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(content, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP TRIGGER IF EXISTS proposals_search_insert ON proposals;
--bun:split
DROP TRIGGER IF EXISTS proposals_search_update ON proposals;
--bun:split
DROP TRIGGER IF EXISTS proposals_search_delete ON proposals;
--bun:split
DROP FUNCTION IF EXISTS proposals_search_sync();
--bun:split
CREATE INDEX proposals_search_idx ON proposals USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP TRIGGER IF EXISTS documents_search_insert ON documents;
--bun:split
DROP TRIGGER IF EXISTS documents_search_update ON documents;
--bun:split
DROP TRIGGER IF EXISTS documents_search_delete ON documents;
--bun:split
DROP FUNCTION IF EXISTS documents_search_sync();
--bun:split
CREATE INDEX documents_search_idx ON documents USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(title, '') || ' ' || coalesce(content, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP TRIGGER IF EXISTS projects_search_insert ON projects;
--bun:split
DROP TRIGGER IF EXISTS projects_search_update ON projects;
--bun:split
DROP TRIGGER IF EXISTS projects_search_delete ON projects;
--bun:split
DROP FUNCTION IF EXISTS projects_search_sync();
--bun:split
CREATE INDEX projects_search_idx ON projects USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(name, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP TRIGGER IF EXISTS project_groups_search_insert ON project_groups;
--bun:split
DROP TRIGGER IF EXISTS project_groups_search_update ON project_groups;
--bun:split
DROP TRIGGER IF EXISTS project_groups_search_delete ON project_groups;
--bun:split
DROP FUNCTION IF EXISTS project_groups_search_sync();
--bun:split
CREATE INDEX project_groups_search_idx ON project_groups USING gin (to_tsvector('simple'::regconfig, regexp_replace(coalesce(name, '') || ' ' || coalesce(description, ''), '[[:punct:]]+', ' ', 'g')));
--bun:split
DROP FUNCTION IF EXISTS chorus_search_vector(TEXT, TEXT);
--bun:split
DROP TABLE IF EXISTS search_vectors;
