-- Runs once, when the postgres service initialises an empty data volume (the official image
-- executes /docker-entrypoint-initdb.d/*.sql with psql as POSTGRES_USER). It creates the three
-- databases of the compose stack; each statement is skipped when its database already exists
-- (\gexec runs the generated CREATE only when the SELECT returns a row).
--
--   chorus               Chorus itself (schema applied by the chorus-migrate job)
--   temporal             Temporal persistence    (schema applied by the temporal-schema job)
--   temporal_visibility  Temporal visibility     (schema applied by the temporal-schema job)
--
-- Keep these names in step with CHORUS_DATABASE_URL and with DBNAME / VISIBILITY_DBNAME in
-- docker-compose.yml (cmd/chorus/compose_test.go checks that they agree).

SELECT 'CREATE DATABASE chorus'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'chorus')\gexec

SELECT 'CREATE DATABASE temporal'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'temporal')\gexec

SELECT 'CREATE DATABASE temporal_visibility'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'temporal_visibility')\gexec
