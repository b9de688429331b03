DROP TABLE session_task_checkins;
--bun:split
DROP TABLE agent_sessions;
