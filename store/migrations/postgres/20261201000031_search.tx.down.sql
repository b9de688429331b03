DROP INDEX tasks_search_idx;
--bun:split
DROP INDEX ideas_search_idx;
--bun:split
DROP INDEX proposals_search_idx;
--bun:split
DROP INDEX documents_search_idx;
--bun:split
DROP INDEX projects_search_idx;
--bun:split
DROP INDEX project_groups_search_idx;
