-- Creates the three databases of a Chorus installation; each statement is skipped when its
-- database already exists (\gexec runs the generated CREATE only when the SELECT returns a row).
--
--   chorus               Chorus itself (schema applied by `chorus migrate up`)
--   temporal             Temporal persistence    (schema applied by deploy/temporal-setup-schema.sh)
--   temporal_visibility  Temporal visibility     (schema applied by deploy/temporal-setup-schema.sh)
--
-- Used as is by docker-compose.yml: the postgres image runs it once, as POSTGRES_USER, when it
-- initialises an empty data volume, and every database is then owned by that user. On a VM
-- (docs/production.md "Production without Docker", and deploy/test-prod.sh) run it as a superuser with psql
-- variables choosing the names and owners (roles that must already exist):
--
--   psql -v ON_ERROR_STOP=1 -v chorus_db=chorus -v chorus_owner=chorus \
--        -v temporal_db=temporal -v visibility_db=temporal_visibility -v temporal_owner=temporal \
--        -f deploy/postgres-init.sql
--
-- Keep the default names in step with CHORUS_DATABASE_URL and with DBNAME / VISIBILITY_DBNAME in
-- docker-compose.yml (cmd/chorus/compose_test.go checks that they agree).

\if :{?chorus_db}
\else
\set chorus_db chorus
\endif
\if :{?temporal_db}
\else
\set temporal_db temporal
\endif
\if :{?visibility_db}
\else
\set visibility_db temporal_visibility
\endif
SELECT current_user AS default_owner \gset
\if :{?chorus_owner}
\else
\set chorus_owner :default_owner
\endif
\if :{?temporal_owner}
\else
\set temporal_owner :default_owner
\endif

SELECT format('CREATE DATABASE %I OWNER %I', :'chorus_db', :'chorus_owner')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'chorus_db')\gexec

SELECT format('CREATE DATABASE %I OWNER %I', :'temporal_db', :'temporal_owner')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'temporal_db')\gexec

SELECT format('CREATE DATABASE %I OWNER %I', :'visibility_db', :'temporal_owner')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'visibility_db')\gexec
