DROP TABLE login_links;
DROP TABLE console_sessions;
ALTER TABLE users DROP COLUMN role;
