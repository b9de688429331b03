#!/bin/sh
# Waits for the Temporal frontend, creates the namespace Chorus uses unless it exists, and
# registers Chorus's custom search attributes in it (those already there are left alone). Run by
# the temporal-namespace service of docker-compose.yml in the temporalio/admin-tools image (which
# ships the `temporal` CLI). Elsewhere `chorus temporal setup` does the same without the CLI
# (deploy/test-prod.sh, docs/production.md "Production without Docker"). Chorus's workers also register any missing attribute when they
# start (workflows.EnsureSearchAttributes); the names below must stay those of
# workflows.SearchAttributeKeys (cmd/chorus/compose_test.go checks it).
set -eu

SEARCH_ATTRIBUTES="ChorusEntity ChorusProjectUuid ChorusStatus ChorusAssignee ChorusCreator ChorusProgress ChorusTitle ChorusAssigneeName"

ADDRESS="${TEMPORAL_ADDRESS:-temporal:7233}"
NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
RETENTION="${TEMPORAL_NAMESPACE_RETENTION:-720h}"
WAIT_SECONDS="${TEMPORAL_WAIT_SECONDS:-180}"

echo "temporal-namespace: waiting for the Temporal frontend at $ADDRESS"
waited=0
until temporal operator cluster health --address "$ADDRESS" >/dev/null 2>&1; do
	if [ "$waited" -ge "$WAIT_SECONDS" ]; then
		echo "temporal-namespace: Temporal at $ADDRESS did not become healthy within ${WAIT_SECONDS}s" >&2
		temporal operator cluster health --address "$ADDRESS" >&2 || true
		exit 1
	fi
	sleep 2
	waited=$((waited + 2))
done

if temporal operator namespace describe --namespace "$NAMESPACE" --address "$ADDRESS" >/dev/null 2>&1; then
	echo "temporal-namespace: namespace $NAMESPACE already exists"
elif out=$(temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" --address "$ADDRESS" 2>&1); then
	echo "temporal-namespace: created namespace $NAMESPACE (retention $RETENTION)"
else
	case "$out" in
	*"already"*"exist"* | *"AlreadyExists"*) echo "temporal-namespace: namespace $NAMESPACE already exists" ;;
	*)
		echo "$out" >&2
		echo "temporal-namespace: cannot create namespace $NAMESPACE" >&2
		exit 1
		;;
	esac
fi

# A new namespace reaches the server's namespace caches within about 10 s; until then the
# search attributes cannot be added (nor workflows started), so retry until they are in.
waited=0
for name in $SEARCH_ATTRIBUTES; do
	until out=$(temporal operator search-attribute create --namespace "$NAMESPACE" --address "$ADDRESS" \
		--name "$name" --type Keyword 2>&1) || case "$out" in *"already"*) true ;; *) false ;; esac; do
		if [ "$waited" -ge "$WAIT_SECONDS" ]; then
			echo "$out" >&2
			echo "temporal-namespace: cannot add search attribute $name to namespace $NAMESPACE" >&2
			exit 1
		fi
		sleep 1
		waited=$((waited + 1))
	done
done
echo "temporal-namespace: search attributes $SEARCH_ATTRIBUTES are registered in $NAMESPACE"

# Wait until the namespace answers a visibility query naming every attribute: the frontend
# refuses workflow starts with these attributes ("no mapping defined for search attribute") until
# its namespace cache has the new mapping, a few seconds after the attributes were added.
QUERY=""
for name in $SEARCH_ATTRIBUTES; do
	QUERY="${QUERY:+$QUERY AND }$name = 'ready-check'"
done
until temporal workflow count --namespace "$NAMESPACE" --address "$ADDRESS" --query "$QUERY" >/dev/null 2>&1; do
	if [ "$waited" -ge "$WAIT_SECONDS" ]; then
		temporal workflow count --namespace "$NAMESPACE" --address "$ADDRESS" --query "$QUERY" >&2 || true
		exit 1
	fi
	sleep 1
	waited=$((waited + 1))
done
