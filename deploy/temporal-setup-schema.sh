#!/bin/sh
# Creates (when missing) and migrates Temporal's two PostgreSQL databases with temporal-sql-tool.
# Run by the temporal-schema service of docker-compose.yml in the temporalio/admin-tools image,
# with the same environment as the temporal service (DB, POSTGRES_SEEDS, DB_PORT, POSTGRES_USER,
# POSTGRES_PWD, DBNAME, VISIBILITY_DBNAME), so both agree on what they use; and, with the same
# variables, by deploy/test-prod.sh and an operator following docs/production.md "Production without Docker",
# with temporal-sql-tool on PATH and TEMPORAL_SCHEMA_ROOT pointing at the schema directory of the
# go.temporal.io/server module (schema/postgresql/v12).
#
# SKIP_DB_CREATE=true leaves out create-database, for a login that may not create databases
# (deploy/postgres-init.sql, run by a superuser, made them).
#
# Idempotent: create-database succeeds on an existing database (deploy/postgres-init.sql normally
# made it), setup-schema -v 0.0 leaves a database that is already past 0.0 alone, and
# update-schema applies only the versions the database lacks.
set -eu

PLUGIN="${DB:-postgres12}"
HOST="${POSTGRES_SEEDS:-postgres}"
PORT="${DB_PORT:-5432}"
USER_NAME="${POSTGRES_USER:?POSTGRES_USER is not set}"
PASSWORD="${POSTGRES_PWD:?POSTGRES_PWD is not set}"
SCHEMA_ROOT="${TEMPORAL_SCHEMA_ROOT:-/etc/temporal/schema/postgresql/v12}"

sql_tool() {
	temporal-sql-tool --plugin "$PLUGIN" --ep "$HOST" -p "$PORT" -u "$USER_NAME" --pw "$PASSWORD" "$@"
}

# setup_db NAME SCHEMA_DIR
setup_db() {
	name="$1"
	dir="$2"
	echo "temporal-schema: database $name"
	# Succeeds when the database already exists (postgres-init.sql normally made it), provided
	# the login may create databases at all.
	if [ "${SKIP_DB_CREATE:-false}" != true ]; then
		sql_tool --db "$name" create-database
	fi
	sql_tool --db "$name" setup-schema -v 0.0
	sql_tool --db "$name" update-schema -d "$dir"
}

setup_db "${DBNAME:-temporal}" "$SCHEMA_ROOT/temporal/versioned"
setup_db "${VISIBILITY_DBNAME:-temporal_visibility}" "$SCHEMA_ROOT/visibility/versioned"
echo "temporal-schema: done"
