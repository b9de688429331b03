#!/usr/bin/env bash
# make test-prod: the production topology, proven. Builds the binaries, then runs
# TestProductionTopology (deploy/prod_test.go), which sets up, from this repository's files
# (the ones docker-compose.yml mounts), PostgreSQL roles and databases (deploy/postgres-init.sql),
# Temporal's schemas (deploy/temporal-setup-schema.sh), temporal-server
# (deploy/temporal-server.yaml, deploy/temporal-dynamicconfig.yaml), the namespace and search
# attributes (`chorus temporal setup`; no Temporal CLI), `chorus migrate up`, one api and two worker
# processes, and drives them through MCP. Every process it starts is stopped by its pid.
#
# Needs PostgreSQL with a superuser login: CHORUS_PROD_PG_ADMIN_DSN
# (postgres://postgres:...@127.0.0.1:5432/postgres), or CHORUS_TEST_PG_DSN on the same server.
# It creates and drops the roles P and P_temporal and the databases P, P_temporal and
# P_visibility, where P is $CHORUS_PROD_PREFIX (default chorus_prodtest; give each clone that
# shares a PostgreSQL server its own).
#
#   deploy/test-prod.sh               the scenarios (make test-prod)
#   deploy/test-prod.sh bench [ARGS]  `chorus bench` against the same topology instead (make
#                                     bench-prod ARGS="..."); its JSON goes to ARGS' --json or
#                                     bench-results.json in the repository root
set -euo pipefail
cd "$(dirname "$0")/.."
bench=""
if [ "${1:-}" = bench ]; then
	shift
	# A leading "-" keeps the value non-empty when no argument is given.
	bench="- --json $PWD/bench-results.json $*"
fi

if [ -z "${CHORUS_PROD_PG_ADMIN_DSN:-}" ] && [ -z "${CHORUS_TEST_PG_DSN:-}" ]; then
	echo "test-prod: set CHORUS_PROD_PG_ADMIN_DSN (a PostgreSQL superuser URL) or CHORUS_TEST_PG_DSN" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/chorus-test-prod.XXXXXX")
mkdir -p "$work/bin"
echo "test-prod: building chorus, temporal-server and temporal-sql-tool (logs: $work)"
go build -o "$work/bin/chorus" ./cmd/chorus
# The server and its SQL tool are tools of tools/server/go.mod, pinned there.
ln -s "$(go -C tools/server tool -n go.temporal.io/server/cmd/server)" "$work/bin/temporal-server"
ln -s "$(go -C tools/server tool -n go.temporal.io/server/cmd/tools/sql)" "$work/bin/temporal-sql-tool"
schema="$(go -C tools/server list -m -f '{{.Dir}}' go.temporal.io/server)/schema/postgresql/v12"

status=0
CHORUS_PROD_BIN_DIR="$work/bin" CHORUS_PROD_WORK_DIR="$work" CHORUS_PROD_SCHEMA_ROOT="$schema" CHORUS_PROD_BENCH="$bench" \
	go test -count=1 -timeout 30m -run '^TestProductionTopology$' -v ./deploy || status=$?
if [ "$status" = 0 ]; then
	rm -rf "$work"
else
	echo "test-prod: failed; the processes' logs are in $work" >&2
fi
exit "$status"
