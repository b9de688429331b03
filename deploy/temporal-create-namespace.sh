#!/bin/sh
# Waits for the Temporal frontend, then creates the namespace Chorus uses unless it exists.
# Run by the temporal-namespace service of docker-compose.yml in the temporalio/admin-tools image
# (which ships the `temporal` CLI). Chorus's workers register their own search attributes in the
# namespace when they start; the namespace itself must exist first.
set -eu

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
	exit 0
fi

if out=$(temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" --address "$ADDRESS" 2>&1); then
	echo "temporal-namespace: created namespace $NAMESPACE (retention $RETENTION)"
	# The frontend learns of new namespaces from its namespace cache, refreshed about every 10s;
	# wait so that Chorus, started right after this job, finds the namespace on its first try.
	sleep 15
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
