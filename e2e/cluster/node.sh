#!/usr/bin/env bash
#
# node.sh - real kubelet nodes for the local control plane: a kubelet v1.20.2
# (build.sh) and its own containerd per node, running real containers with
# Debian's runc. ../shared/docs/real-nodes.md has the verified facts behind
# each setting; the comments here say which.
#
#   node.sh up [N]    start nodes 1..N (default $MUSTER_REAL_NODES, else 1),
#                     reusing those already running; waits until each is
#                     Ready and has muster's images (make images) imported
#   node.sh down [I...]  stop nodes I... (default: every node this state dir
#                     started) and remove what they made: containers,
#                     mounts, bridges, cgroups, the Node objects. Host
#                     sysctls are never changed.
#   node.sh names     print the node names, one per line
#
# Node i is called 127.0.0.(i+1): kubelet listens there (10250), and the
# 1.20 apiserver dials a node's Hostname address for logs and exec, while
# kubelet refuses a loopback --node-ip (real-nodes.md, 3). Each node has:
#   - its own containerd (root, state, socket, runc root) under
#     $CLUSTER_DIR/nodes/NAME, with restrict_oom_score_adj (the sandbox lacks
#     CAP_SYS_RESOURCE; without it every pod sandbox fails) and the project's
#     static pause image as sandbox image (no registry is reachable);
#   - a bridge mstrI with 10.244.I.1/24 made here, the CNI bridge plugin
#     with isGateway false and no masquerade, host-local IPAM with its own
#     data dir: the host reaches pod IPs (the controller's push), nothing
#     on the host is rewritten (no iptables chains: kubelet's
#     --make-iptables-util-chains=false);
#   - a cgroup root /muster-node-I made in every v1 hierarchy (cpuset
#     copies its parent's cpus and mems);
#   - the taint muster.dev/real-node=true:NoSchedule and the label
#     muster.dev/real-node=true, so only pods that ask land there, and the
#     node agent's fake nodes stay apart.
# kubelet authenticates as the admin user of up.sh (the test cluster has no
# node authorizer); its own API on 127.0.0.(i+1):10250 is the 1.20 default
# (anonymous, always allow), reachable from this machine only.
# Image garbage collection and disk-pressure eviction are off: the imported
# images cannot be pulled again, and CI disks are often past 85 %.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd -- "$HERE/../.." && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

NODES_DIR=$CLUSTER_DIR/nodes
IMAGES_DIR=${MUSTER_IMAGES_DIR:-$ROOT/build/images}
REAL_NODE_KEY=muster.dev/real-node
READY_SECONDS=${MUSTER_NODE_READY_SECONDS:-180}
CGROUP_V1=/sys/fs/cgroup

node_name() { printf '127.0.0.%d\n' "$(($1 + 1))"; }
node_dir() { printf '%s/%s\n' "$NODES_DIR" "$(node_name "$1")"; }
bridge_name() { printf 'mstr%d\n' "$1"; }
cgroup_name() { printf 'muster-node-%d\n' "$1"; }

kubectl_admin() {
	kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"
}

# pid_of FILE BINARY DIR: the pid in FILE if it still runs BINARY with DIR in
# its arguments (common.sh's check, for the node's own directory).
pid_of() {
	local file=$1 binary=$2 dir=$3 pid="" arg
	local -a argv=()
	[[ -r $file ]] || return 1
	read -r pid <"$file" || [[ -n $pid ]] || return 1
	[[ $pid =~ ^[1-9][0-9]*$ && -r /proc/$pid/cmdline ]] || return 1
	mapfile -d '' -t argv 2>/dev/null </proc/"$pid"/cmdline || return 1
	((${#argv[@]} > 1)) && [[ ${argv[0]##*/} == "$binary" ]] || return 1
	for arg in "${argv[@]:1}"; do
		[[ $arg == *"$dir"* ]] && {
			printf '%s\n' "$pid"
			return 0
		}
	done
	return 1
}

# start DIR NAME COMMAND...: COMMAND in its own session, logs in DIR/NAME.log.
start() {
	local dir=$1 name=$2
	shift 2
	(cd -- "$dir" && exec setsid "$@") </dev/null >>"$dir/$name.log" 2>&1 9>&- &
	printf '%s\n' "$!" >"$dir/$name.pid"
}

# stop_pid FILE BINARY DIR: SIGTERM, 10 s, SIGKILL.
stop_pid() {
	local file=$1 binary=$2 dir=$3 pid tenths
	if pid=$(pid_of "$file" "$binary" "$dir"); then
		kill -TERM "$pid" 2>/dev/null || true
		for ((tenths = 0; tenths < 100; tenths++)); do
			pid_of "$file" "$binary" "$dir" >/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f -- "$file"
}

write_containerd_config() {
	local i=$1 dir=$2
	cat >"$dir/containerd.toml" <<-TOML
		version = 2
		root = "$dir/containerd/root"
		state = "$dir/containerd/state"
		disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
		[grpc]
		  address = "$dir/containerd.sock"
		[ttrpc]
		  address = "$dir/containerd.ttrpc.sock"
		[debug]
		  address = ""
		[metrics]
		  address = ""
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "muster.local/pause:1"
		  restrict_oom_score_adj = true
		  stream_server_address = "$(node_name "$i")"
		  stream_server_port = "0"
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$dir/cni/conf"
		  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		    runtime_type = "io.containerd.runc.v2"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		      Root = "$dir/runc"
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$dir/containerd/opt"
	TOML
}

write_cni_config() {
	local i=$1 dir=$2
	cat >"$dir/cni/conf/10-muster.conflist" <<-JSON
		{
		  "cniVersion": "0.4.0",
		  "name": "muster-node-$i",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "$(bridge_name "$i")",
		      "isGateway": false,
		      "ipMasq": false,
		      "hairpinMode": true,
		      "ipam": {
		        "type": "host-local",
		        "dataDir": "$dir/cni/ipam",
		        "ranges": [[{"subnet": "10.244.$i.0/24", "gateway": "10.244.$i.1"}]],
		        "routes": [{"dst": "0.0.0.0/0"}]
		      }
		    },
		    {"type": "loopback"}
		  ]
		}
	JSON
}

make_bridge() {
	local i=$1 br
	br=$(bridge_name "$i")
	ip link show "$br" >/dev/null 2>&1 || ip link add "$br" type bridge
	# replace, not "show | grep -q || add": under pipefail grep -q's early
	# exit can kill ip with SIGPIPE, and the add then fails on a bridge
	# that already has the address (about 1 run in 10 with a bridge left
	# from before).
	ip addr replace "10.244.$i.1/24" dev "$br"
	ip link set "$br" up
}

make_cgroups() {
	local name=$1 h
	for h in "$CGROUP_V1"/*/; do
		h=${h%/}
		[[ ${h##*/} == unified ]] && continue
		[[ -e $h/cgroup.procs ]] || continue
		mkdir -p -- "$h/$name"
		if [[ ${h##*/} == cpuset* && -e $h/cpuset.cpus ]]; then
			cat "$h/cpuset.cpus" >"$h/$name/cpuset.cpus"
			cat "$h/cpuset.mems" >"$h/$name/cpuset.mems"
		fi
	done
}

# remove_cgroups NAME: removes NAME and everything below it, deepest first,
# in every hierarchy (the pods' cgroups in the unified mount included).
remove_cgroups() {
	local name=$1 h
	for h in "$CGROUP_V1"/*/; do
		h=${h%/}
		[[ -d $h/$name ]] || continue
		find "$h/$name" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ ! -d $h/$name ]] || log "warning: could not remove cgroup $h/$name"
	done
}

# node_ready NAME SINCE: the Node's Ready condition is True and was posted
# at or after SINCE (epoch seconds): by the kubelet running now, not one
# killed before it (the condition stays True for the node controller's
# 40 s grace, so a restarted node looked Ready before its kubelet ran).
node_ready() {
	local got status beat
	got=$(kubectl_admin get node "$1" \
		-o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}' 2>/dev/null) ||
		return 1
	read -r status beat <<<"$got"
	[[ $status == True && -n $beat ]] || return 1
	beat=$(date -d "$beat" +%s 2>/dev/null) || return 1
	((beat >= $2))
}

# import_images DIR: every image of images.txt the node's containerd does not
# have under that name and digest yet.
import_images() {
	local dir=$1 archive ref digest have
	local list=$IMAGES_DIR/images.txt
	[[ -f $list ]] || die "no $list: run make images first"
	have=$(ctr --address "$dir/containerd.sock" --namespace k8s.io images ls 2>/dev/null | awk '{ print $1, $3 }')
	while read -r archive ref digest; do
		grep -qxF -- "$ref $digest" <<<"$have" && continue
		ctr --address "$dir/containerd.sock" --namespace k8s.io images import "$archive" >/dev/null ||
			die "importing $archive into $(basename -- "$dir") failed"
	done <"$list"
}

start_node() {
	local i=$1 dir name
	dir=$(node_dir "$i")
	name=$(node_name "$i")
	if pid_of "$dir/kubelet.pid" kubelet "$dir" >/dev/null && pid_of "$dir/containerd.pid" containerd "$dir" >/dev/null; then
		import_images "$dir"
		log "node $name already running"
		return 0
	fi
	stop_node_processes "$i"
	# Node names are fixed loopback addresses: one cluster per machine has
	# real nodes.
	if (exec 3<>"/dev/tcp/$name/10250") 2>/dev/null; then
		die "$name:10250 is in use: another cluster's real node? (a second cluster runs with MUSTER_REAL_NODES=0)"
	fi
	log "starting real node $name (containerd, kubelet; logs in $dir)"
	mkdir -p -- "$dir"/{containerd,runc,kubelet,certs,volume-plugins,cni/conf,cni/ipam}
	write_containerd_config "$i" "$dir"
	write_cni_config "$i" "$dir"
	make_bridge "$i"
	make_cgroups "$(cgroup_name "$i")"
	start "$dir" containerd /usr/bin/containerd --config "$dir/containerd.toml"
	local tenths
	for ((tenths = 0; tenths < 300; tenths++)); do
		ctr --address "$dir/containerd.sock" version >/dev/null 2>&1 && break
		pid_of "$dir/containerd.pid" containerd "$dir" >/dev/null || die "containerd of $name exited; see $dir/containerd.log"
		sleep 0.1
	done
	import_images "$dir"
	start "$dir" kubelet "$K8S_BIN_DIR/kubelet" \
		--kubeconfig="$KUBECONFIG_PATH" \
		--hostname-override="$name" \
		--address="$name" \
		--port=10250 \
		--read-only-port=0 \
		--healthz-port=0 \
		--root-dir="$dir/kubelet" \
		--cert-dir="$dir/certs" \
		--volume-plugin-dir="$dir/volume-plugins" \
		--container-runtime=remote \
		--container-runtime-endpoint="unix://$dir/containerd.sock" \
		--runtime-request-timeout=5m \
		--cgroup-driver=cgroupfs \
		--cgroup-root="/$(cgroup_name "$i")" \
		--fail-swap-on=false \
		--make-iptables-util-chains=false \
		--register-with-taints="$REAL_NODE_KEY=true:NoSchedule" \
		--node-labels="$REAL_NODE_KEY=true" \
		--pod-infra-container-image=muster.local/pause:1 \
		--image-gc-high-threshold=100 \
		--image-gc-low-threshold=99 \
		--eviction-hard= \
		--max-pods=50 \
		--v=1
}

wait_ready() {
	local i=$1 name dir deadline since
	name=$(node_name "$i")
	dir=$(node_dir "$i")
	deadline=$((SECONDS + READY_SECONDS))
	# The pid file is written as kubelet starts (start above).
	since=$(stat -c %Y -- "$dir/kubelet.pid") || die "no $dir/kubelet.pid"
	until node_ready "$name" "$since"; do
		pid_of "$dir/kubelet.pid" kubelet "$dir" >/dev/null ||
			die "kubelet of $name exited; last lines of $dir/kubelet.log: $(tail -n 5 -- "$dir/kubelet.log" | tr '\n' ' ')"
		((SECONDS < deadline)) || die "node $name not Ready within $READY_SECONDS s; see $dir/kubelet.log"
		sleep 1
	done
	log "node $name is Ready"
}

# stop_node_processes I: the node's containers, kubelet, containerd, its
# shims; then its mounts. Leaves the directory.
stop_node_processes() {
	local i=$1 dir sock pid
	dir=$(node_dir "$i")
	sock=$dir/containerd.sock
	[[ -d $dir ]] || return 0
	# kubelet first, so it does not restart what is killed next.
	stop_pid "$dir/kubelet.pid" kubelet "$dir"
	if pid_of "$dir/containerd.pid" containerd "$dir" >/dev/null; then
		local task
		for task in $(ctr --address "$sock" --namespace k8s.io tasks ls -q 2>/dev/null); do
			ctr --address "$sock" --namespace k8s.io tasks kill --signal SIGKILL "$task" >/dev/null 2>&1 || true
		done
		sleep 1
	fi
	stop_pid "$dir/containerd.pid" containerd "$dir"
	# Shims outlive containerd: those started for this node's socket.
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock" || true); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	# Everything still mounted under the node's directory, deepest first.
	awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
		umount -l -- "$m" 2>/dev/null || log "warning: could not unmount $m"
	done
}

# remove_pod_networks BRIDGE: the network namespaces (and their veth
# pairs) of the pods whose host-side veth is on BRIDGE. A node stopped with
# containers still running (its tasks killed, containerd stopped) never ran
# CNI DEL for them, so without this each leaves a netns cni-* and a veth.
remove_pod_networks() {
	local br=$1 veth ns
	while read -r veth ns; do
		[[ -n $ns ]] && { ip netns del "$ns" 2>/dev/null || true; }
		ip link del "$veth" 2>/dev/null || true
	done < <(ip -o link show master "$br" 2>/dev/null |
		sed -n 's/^[0-9]*: \([^@:]*\)[@:].* link-netns \([^ ]*\).*/\1 \2/p')
}

down_node() {
	local i=$1 name
	name=$(node_name "$i")
	stop_node_processes "$i"
	remove_pod_networks "$(bridge_name "$i")"
	ip link del "$(bridge_name "$i")" 2>/dev/null || true
	remove_cgroups "$(cgroup_name "$i")"
	if [[ -r $KUBECONFIG_PATH ]]; then
		kubectl_admin delete node "$name" --ignore-not-found --wait=false --request-timeout=10s >/dev/null 2>&1 || true
	fi
	rm -rf -- "$(node_dir "$i")"
	log "node $name stopped and removed"
}

# started_indexes: the node numbers with a directory in this state dir.
started_indexes() {
	local d
	for d in "$NODES_DIR"/127.0.0.*; do
		[[ -d $d ]] || continue
		printf '%d\n' "$((${d##*.} - 1))"
	done
}

main() {
	local cmd=${1:-} count=${2:-${MUSTER_REAL_NODES:-1}} i
	case $cmd in
	up)
		if ! [[ $count =~ ^[0-9]+$ ]] || ((count > 8)); then
			die "node count must be 0..8, not $count"
		fi
		((count > 0)) || return 0
		[[ -x $K8S_BIN_DIR/kubelet ]] || die "no kubelet in $K8S_BIN_DIR: run build.sh"
		for b in containerd ctr runc ip; do
			command -v "$b" >/dev/null || die "$b is missing: run deps.sh"
		done
		((EUID == 0)) || die "real nodes need root (bridges, cgroups, containers)"
		mkdir -p -- "$NODES_DIR"
		for ((i = 1; i <= count; i++)); do
			start_node "$i"
		done
		for ((i = 1; i <= count; i++)); do
			wait_ready "$i"
		done
		;;
	down)
		shift
		local -a which=("$@")
		((${#which[@]})) || mapfile -t which < <(started_indexes)
		for i in "${which[@]}"; do
			[[ $i =~ ^[1-8]$ ]] || die "node number must be 1..8, not $i"
			down_node "$i"
		done
		rmdir -- "$NODES_DIR" 2>/dev/null || true
		;;
	names)
		for i in $(started_indexes); do
			node_name "$i"
		done
		;;
	*) die "usage: node.sh up [N] | down [I...] | names" ;;
	esac
}

# Sourced (the tests call its functions): define them only.
[[ ${BASH_SOURCE[0]} != "$0" ]] || main "$@"
