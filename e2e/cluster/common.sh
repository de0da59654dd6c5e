# shellcheck shell=bash disable=SC2034 # the settings here are used by the scripts that source it
#
# common.sh - settings and helpers shared by deps.sh, build.sh, up.sh and down.sh.
#
# It is sourced, never run. It names the cache and state directories, the ports,
# and the control-plane components, and it holds the one place that decides
# whether a recorded pid still belongs to one of our processes. That check is
# what lets down.sh and up.sh's failure path kill exactly what they started and
# never a process that merely inherited a recycled pid.

MUSTER_CACHE=${MUSTER_CACHE:-${HOME:?set HOME or MUSTER_CACHE}/.cache/muster}
MUSTER_CACHE=$(realpath -m -- "$MUSTER_CACHE")

K8S_VERSION=1.20.2
K8S_DIR=$MUSTER_CACHE/k8s-$K8S_VERSION
K8S_BIN_DIR=$K8S_DIR/bin
K8S_BINARIES=(kube-apiserver kube-scheduler kube-controller-manager kubelet)

CLUSTER_DIR=${MUSTER_CLUSTER_DIR:-$MUSTER_CACHE/cluster}
CLUSTER_DIR=$(realpath -m -- "$CLUSTER_DIR")
# The lock lives beside the state dir, not in it, because down.sh removes the dir.
CLUSTER_LOCK=$CLUSTER_DIR.lock
# down.sh removes the state dir only when this marker says up.sh made it.
CLUSTER_MARKER=$CLUSTER_DIR/.muster-cluster
KUBECONFIG_PATH=$CLUSTER_DIR/admin.kubeconfig

APISERVER_PORT=${MUSTER_APISERVER_PORT:-16443}
ETCD_PORT=${MUSTER_ETCD_PORT:-12379}
ETCD_PEER_PORT=${MUSTER_ETCD_PEER_PORT:-12380}
# kube-scheduler's /metrics and /debug/pprof, plain HTTP on loopback only (the
# benchmarks read its scheduling attempts); its URL is written to
# $SCHEDULER_URL_FILE while it serves there.
SCHEDULER_METRICS_PORT=${MUSTER_SCHEDULER_METRICS_PORT:-16251}
SCHEDULER_URL_FILE=$CLUSTER_DIR/kube-scheduler.url

# Start order; stop in reverse.
COMPONENTS=(etcd kube-apiserver kube-scheduler kube-controller-manager)

# stop_grace_tenths NAME: how long NAME gets between SIGTERM and SIGKILL, in
# tenths of a second. etcd gets 10 s to close its data cleanly. The Kubernetes
# components keep no state of their own, and kube-apiserver 1.20 does not exit
# on SIGTERM while a client still holds a watch open (measured: it waited the
# full 60 s a `kubectl get -w` lived), so they get 3 s.
stop_grace_tenths() {
	case $1 in
	etcd) printf '%s\n' "${MUSTER_STOP_GRACE_TENTHS:-100}" ;;
	*) printf '%s\n' "${MUSTER_STOP_GRACE_TENTHS:-30}" ;;
	esac
}

log() {
	printf '%s %s: %s\n' "$(date +%H:%M:%S)" "${0##*/}" "$*" >&2
}

die() {
	log "error: $*"
	exit 1
}

# pid_is_component PID NAME: true when PID is alive, runs the binary NAME, and
# names this cluster's state dir in one of its arguments (every component gets
# a path under it: data dir, certificates or kubeconfig). A zombie has an empty
# cmdline and so counts as gone.
pid_is_component() {
	local pid=$1 name=$2 arg
	local -a argv=()
	[[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	mapfile -d '' -t argv 2>/dev/null </proc/"$pid"/cmdline || return 1
	((${#argv[@]} > 1)) || return 1
	[[ ${argv[0]##*/} == "$name" ]] || return 1
	for arg in "${argv[@]:1}"; do
		[[ $arg == *"$CLUSTER_DIR/"* ]] && return 0
	done
	return 1
}

# component_pid NAME: prints the recorded pid of NAME if that process is still ours.
component_pid() {
	local name=$1 pid=
	local pidfile=$CLUSTER_DIR/$name.pid
	[[ -r $pidfile ]] || return 1
	read -r pid <"$pidfile" || [[ -n $pid ]] || return 1
	pid_is_component "$pid" "$name" || return 1
	printf '%s\n' "$pid"
}

# stop_component NAME: SIGTERM, a bounded wait, then SIGKILL; then forgets the pid.
# Returns non-zero only if the process is still there after SIGKILL.
stop_component() {
	local name=$1 pid tenths grace
	if pid=$(component_pid "$name"); then
		grace=$(stop_grace_tenths "$name")
		log "stopping $name (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		for ((tenths = 0; tenths < grace; tenths++)); do
			pid_is_component "$pid" "$name" || break
			sleep 0.1
		done
		if pid_is_component "$pid" "$name"; then
			log "$name (pid $pid) still running $((grace / 10)).$((grace % 10)) s after SIGTERM; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			for ((tenths = 0; tenths < 50; tenths++)); do
				pid_is_component "$pid" "$name" || break
				sleep 0.1
			done
			if pid_is_component "$pid" "$name"; then
				log "error: $name (pid $pid) survived SIGKILL"
				return 1
			fi
		fi
	fi
	rm -f -- "$CLUSTER_DIR/$name.pid"
}

# stop_all: stops every recorded component, last started first.
stop_all() {
	local i rc=0
	for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
		stop_component "${COMPONENTS[i]}" || rc=1
	done
	return "$rc"
}

# take_lock FILE SECONDS: serialises concurrent runs on file descriptor 9.
# Processes started while holding it must be given 9>&- so they do not keep it.
take_lock() {
	local file=$1 seconds=$2
	mkdir -p -- "$(dirname -- "$file")"
	exec 9>"$file"
	if ! flock -n 9; then
		log "waiting for another run holding $file (up to $seconds s)"
		flock -w "$seconds" 9 || die "timed out waiting for $file"
	fi
}
