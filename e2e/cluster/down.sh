#!/usr/bin/env bash
#
# down.sh - stops muster's local Kubernetes control plane (`make cluster-down`)
# and its real nodes (node.sh down: containers, mounts, bridges, cgroups),
# and removes its state dir ($MUSTER_CLUSTER_DIR, by default
# ~/.cache/muster/cluster): etcd data, certificates, token, kubeconfig, logs.
# The cached Kubernetes binaries and Go build cache are kept.
#
# It stops exactly the processes whose pids up.sh recorded, newest first:
# SIGTERM, a bounded wait, then SIGKILL. Before each signal it checks through
# /proc/PID/cmdline that the pid still runs the expected binary with this
# state dir in its arguments, so a pid recycled by an unrelated process is
# never touched. Idempotent: with nothing running and no state dir it only
# says so. It removes the state dir only if up.sh's marker file is in it.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

main() {
	if [[ ! -e $CLUSTER_DIR ]]; then
		log "no cluster state in $CLUSTER_DIR; nothing to stop"
		rm -f -- "$CLUSTER_LOCK"
		return 0
	fi
	take_lock "$CLUSTER_LOCK" 120
	# The real nodes first: their containers, mounts, bridges and cgroups.
	"$HERE/node.sh" down 9>&- || die "the real nodes did not stop; kept $CLUSTER_DIR"
	stop_all || die "some processes did not stop; kept $CLUSTER_DIR and its pid files"
	if [[ ! -e $CLUSTER_MARKER ]]; then
		die "$CLUSTER_DIR has no $(basename -- "$CLUSTER_MARKER") marker: not removing a directory up.sh did not make"
	fi
	rm -rf -- "$CLUSTER_DIR"
	rm -f -- "$CLUSTER_LOCK"
	log "stopped; removed $CLUSTER_DIR"
}

main "$@"
