-- Full-text search for chorus_search (docs/rules.md §4.11) on PostgreSQL: a GIN index on the
-- tsvector of each searchable table's text, as an expression index, so every write keeps it
-- current in its own transaction and no column or trigger is added. The 'simple' configuration
-- lower-cases words and neither stems nor drops stop words, so any word of the text is found, in
-- any language. store/search.go writes each expression exactly as indexed here: change both together.
CREATE INDEX tasks_search_idx ON tasks USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(description, '')));
--bun:split
CREATE INDEX ideas_search_idx ON ideas USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(content, '')));
--bun:split
CREATE INDEX proposals_search_idx ON proposals USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(description, '')));
--bun:split
CREATE INDEX documents_search_idx ON documents USING gin (to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(content, '')));
--bun:split
CREATE INDEX projects_search_idx ON projects USING gin (to_tsvector('simple'::regconfig, coalesce(name, '') || ' ' || coalesce(description, '')));
--bun:split
CREATE INDEX project_groups_search_idx ON project_groups USING gin (to_tsvector('simple'::regconfig, coalesce(name, '') || ' ' || coalesce(description, '')));
