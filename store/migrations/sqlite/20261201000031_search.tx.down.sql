DROP TRIGGER tasks_search_insert;
--bun:split
DROP TRIGGER tasks_search_update;
--bun:split
DROP TRIGGER tasks_search_delete;
--bun:split
DROP TRIGGER ideas_search_insert;
--bun:split
DROP TRIGGER ideas_search_update;
--bun:split
DROP TRIGGER ideas_search_delete;
--bun:split
DROP TRIGGER proposals_search_insert;
--bun:split
DROP TRIGGER proposals_search_update;
--bun:split
DROP TRIGGER proposals_search_delete;
--bun:split
DROP TRIGGER documents_search_insert;
--bun:split
DROP TRIGGER documents_search_update;
--bun:split
DROP TRIGGER documents_search_delete;
--bun:split
DROP TRIGGER projects_search_insert;
--bun:split
DROP TRIGGER projects_search_update;
--bun:split
DROP TRIGGER projects_search_delete;
--bun:split
DROP TRIGGER project_groups_search_insert;
--bun:split
DROP TRIGGER project_groups_search_update;
--bun:split
DROP TRIGGER project_groups_search_delete;
--bun:split
DROP TABLE search_fts;
--bun:split
DROP TABLE search_keys;
