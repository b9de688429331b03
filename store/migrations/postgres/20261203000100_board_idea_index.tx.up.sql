-- The console's board filtered by an idea (issue 22): the idea's tasks are those of the
-- proposals listing it, so the board counts a project's tasks by status and pages one status's
-- column within some proposals. This index answers both from the index alone, in the order of
-- every task list (store/tasks.go's priorityRank, written exactly as the query writes it), so a
-- filtered board reads the idea's tasks' index entries, never the rest of the project.
CREATE INDEX tasks_project_proposal_status_idx ON tasks (project_uuid, proposal_uuid, status, (CASE priority WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END), created_at, uuid) INCLUDE (priority);
