#!/usr/bin/env bash
#
# restart-apiserver.sh - stops the kube-apiserver of a control plane started by
# up.sh and starts it again with exactly the same command line, then waits for
# /readyz. etcd, kube-scheduler and kube-controller-manager keep running, as
# they would through an apiserver upgrade or crash: their clients see the
# connection drop, then retry, re-list or resume their watches.
#
# The command line is read back from /proc/PID/cmdline of the recorded pid
# (after common.sh's check that the pid is still this cluster's apiserver), so
# the new process gets the very flags up.sh gave the old one. Stopping is
# common.sh's stop_component: SIGTERM, then SIGKILL after
# MUSTER_STOP_GRACE_TENTHS (default 30) tenths of a second; kube-apiserver 1.20
# does not exit on SIGTERM while a client holds a watch open, so with watchers
# around it is a SIGKILL 3 s later. The new pid goes to kube-apiserver.pid, the
# output is appended to kube-apiserver.log, as up.sh does. Serialised with
# up.sh and down.sh through the cluster lock.
#
# Exit 0 once the new apiserver answers /readyz ok; 1 if there is no running
# apiserver to restart or the new one does not become ready within
# MUSTER_READY_TIMEOUT seconds (60). Prints nothing on stdout; progress and
# the elapsed times go to stderr. If it fails (or is interrupted) after the
# stop, the apiserver stays down: up.sh then stops the survivors and starts
# the whole control plane again on the same state.
#
# /readyz ok is not the end of the recovery for the apiserver's clients:
# kube-controller-manager 1.20's informers back off (up to 30 s) while it is
# away, and measured here a namespace created right after the restart got its
# service-account token only 10-40 s later.
#
# Environment: the same as up.sh (MUSTER_CACHE, MUSTER_CLUSTER_DIR,
# MUSTER_APISERVER_PORT, ...), to name the cluster.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

READY_TIMEOUT=${MUSTER_READY_TIMEOUT:-60}
PKI=$CLUSTER_DIR/pki
NAME=kube-apiserver
LOG_FILE=$CLUSTER_DIR/$NAME.log

# apiserver_ready URL: /readyz answers ok to the admin token over verified TLS
# (as in up.sh; the token goes through a curl config on a pipe).
apiserver_ready() {
	local body
	body=$(curl -sS --max-time 2 --cacert "$PKI/ca.crt" \
		-K <(printf 'header = "Authorization: Bearer %s"\n' "$(cut -d, -f1 -- "$PKI/tokens.csv")") \
		"$1/readyz" 2>/dev/null) || return 1
	[[ $body == ok ]]
}

# tail_log: the end of the apiserver log, for a failure message.
tail_log() {
	[[ -s $LOG_FILE ]] || return 0
	log "last lines of $LOG_FILE:"
	tail -n 25 -- "$LOG_FILE" | sed 's/^/    /' >&2
}

main() {
	local pid port=$APISERVER_PORT arg started=$SECONDS tenths deadline
	local -a argv=()

	[[ -r $PKI/tokens.csv && -r $PKI/ca.crt ]] || die "no cluster state in $CLUSTER_DIR (run up.sh first)"
	take_lock "$CLUSTER_LOCK" 120
	pid=$(component_pid "$NAME") || die "no running $NAME recorded in $CLUSTER_DIR (run up.sh first)"
	mapfile -d '' -t argv </proc/"$pid"/cmdline || die "cannot read the command line of $NAME (pid $pid)"
	((${#argv[@]} > 1)) || die "$NAME (pid $pid) exited before its command line could be read"
	for arg in "${argv[@]}"; do
		[[ $arg == --secure-port=* ]] && port=${arg#--secure-port=}
	done

	stop_component "$NAME" || die "$NAME (pid $pid) did not stop"
	log "$NAME stopped after $((SECONDS - started)) s; starting it again with the same flags"

	printf '\n==== %s restarting %s (restart-apiserver.sh)\n' "$(date '+%F %T')" "$NAME" >>"$LOG_FILE"
	# As up.sh's start_component: own session, stdio to the log, no lock fd.
	(cd -- "$CLUSTER_DIR" && exec setsid "${argv[@]}") </dev/null >>"$LOG_FILE" 2>&1 9>&- &
	pid=$!
	printf '%s\n' "$pid" >"$CLUSTER_DIR/$NAME.pid"
	for ((tenths = 0; tenths < 50; tenths++)); do
		pid_is_component "$pid" "$NAME" && break
		kill -0 "$pid" 2>/dev/null || {
			tail_log
			die "$NAME exited at once"
		}
		sleep 0.1
	done
	pid_is_component "$pid" "$NAME" || die "pid $pid never became $NAME"

	deadline=$((SECONDS + READY_TIMEOUT))
	until apiserver_ready "https://127.0.0.1:$port"; do
		if ! pid_is_component "$pid" "$NAME"; then
			tail_log
			die "$NAME (pid $pid) died before /readyz was ok"
		fi
		if ((SECONDS >= deadline)); then
			tail_log
			die "$NAME (pid $pid): /readyz not ok within $READY_TIMEOUT s"
		fi
		sleep 0.2
	done
	log "$NAME (pid $pid) ready on https://127.0.0.1:$port; restart took $((SECONDS - started)) s"
}

main "$@"
