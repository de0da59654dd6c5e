#!/usr/bin/env bash
#
# up.sh - starts muster's local Kubernetes control plane (`make cluster`):
# etcd, kube-apiserver, kube-scheduler and kube-controller-manager v1.20.2, all
# on loopback, with the JobSet CRD installed. There is no kubelet: tests play
# the nodes themselves (see README.md beside this file).
#
# It runs deps.sh and build.sh first (both quick when there is nothing to do),
# makes the certificates, token and admin kubeconfig once per state dir, starts
# the four processes detached (setsid, stdio to log files, pids recorded in the
# state dir), waits for /readyz, and installs the JobSet CRD before the
# controller manager starts, so that the garbage collector watches JobSets from
# its first moment. If the recorded processes are alive and the apiserver is
# ready it starts nothing. If anything fails, or on Ctrl-C, it stops what it
# started. The last line on stdout is the absolute path of the admin
# kubeconfig; everything else goes to stderr. down.sh undoes it.
#
# Environment: MUSTER_CACHE, MUSTER_CLUSTER_DIR, MUSTER_APISERVER_PORT (16443),
# MUSTER_ETCD_PORT (12379), MUSTER_ETCD_PEER_PORT (12380),
# MUSTER_SCHEDULER_METRICS_PORT (16251), MUSTER_JOBSET_CRD,
# MUSTER_CONTROLLERS, MUSTER_READY_TIMEOUT (seconds, 60).

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

REPO_ROOT=$(cd -- "$HERE/../.." && pwd -P)
JOBSET_CRD=${MUSTER_JOBSET_CRD:-$REPO_ROOT/../shared/jobset/jobset.x-k8s.io_jobsets.yaml}
FALLBACK_CRD=$HERE/jobset-crd.yaml
TOPOLOGY_CRDS=("$REPO_ROOT/../shared/kueue/kueue.x-k8s.io_topologies.yaml"
	"$REPO_ROOT/../shared/volcano/topology.volcano.sh_hypernodes.yaml")
CRD_NAME=jobsets.jobset.x-k8s.io
# serviceaccount and serviceaccount-token give every namespace the "default"
# service account and its token, without which the ServiceAccount admission
# plugin refuses pods; deployment and replicaset run muster as users install
# it (Deployments on the real nodes); the rest is what the tests rely on. Not
# job: the JobSet stand-in plays the Job controller (1.20's knows no Indexed
# Jobs). Not endpoint: the fake nodes' pods have loopback IPs, which
# Endpoints refuse, so every JobSet's headless Service would fail its update
# again and again (tens of MB of Events and log in a 5,000-pod benchmark);
# the test that needs a Service's endpoints runs it alone for its duration
# (test_real_nodes.py). podgc deletes the pods bound to a node that no longer
# exists (after its 40 s quarantine), as in any cluster: without it, every
# node agent that deletes its nodes on exit leaves their pods Terminating for
# ever, with their namespaces, and the benchmarks after the tests run on an
# apiserver and scheduler that still carry them (40 % slower).
CONTROLLERS=${MUSTER_CONTROLLERS:-serviceaccount-token,serviceaccount,garbagecollector,namespace,nodelifecycle,podgc,deployment,replicaset}
READY_TIMEOUT=${MUSTER_READY_TIMEOUT:-60}
PYTHON=/usr/bin/python3
PKI=$CLUSTER_DIR/pki
APISERVER_URL=https://127.0.0.1:$APISERVER_PORT
START_SECONDS=$SECONDS

STARTED=()
SUCCEEDED=0

step() {
	log "[$((SECONDS - START_SECONDS)) s] $*"
}

# fail NAME MESSAGE: reports why NAME did not come up, with the end of its log.
fail() {
	local name=$1
	shift
	log "error: $*"
	if [[ -s $CLUSTER_DIR/$name.log ]]; then
		log "last lines of $CLUSTER_DIR/$name.log:"
		tail -n 25 -- "$CLUSTER_DIR/$name.log" | sed 's/^/    /' >&2
	fi
	exit 1
}

# on_exit: unless the start succeeded, stop what this run started.
on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	if ((!SUCCEEDED && ${#STARTED[@]})); then
		log "start failed or interrupted; stopping what this run started"
		local i
		for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
			stop_component "${STARTED[i]}" || true
		done
	fi
	exit "$rc"
}

kubectl_admin() {
	kubectl --kubeconfig="$KUBECONFIG_PATH" "$@"
}

admin_token() {
	cut -d, -f1 -- "$PKI/tokens.csv"
}

# apiserver_ready: true when /readyz answers ok to the admin token over verified TLS.
apiserver_ready() {
	[[ -r $PKI/tokens.csv && -r $PKI/ca.crt ]] || return 1
	local body
	# The token goes through a curl config on a pipe, not the command line.
	body=$(curl -sS --max-time 2 --cacert "$PKI/ca.crt" \
		-K <(printf 'header = "Authorization: Bearer %s"\n' "$(admin_token)") \
		"$APISERVER_URL/readyz" 2>/dev/null) || return 1
	[[ $body == ok ]]
}

etcd_healthy() {
	curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'
}

port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

all_running() {
	local name
	for name in "${COMPONENTS[@]}"; do
		component_pid "$name" >/dev/null || return 1
	done
}

# make_pki: the CA, the apiserver's serving certificate, the service-account
# key pair and the admin token, made once per state dir (into a temporary dir
# renamed at the end, so an interrupted run leaves no half set).
make_pki() {
	[[ -f $PKI/tokens.csv ]] && return 0
	step "creating certificates and the admin token in $PKI"
	local tmp=$PKI.tmp
	rm -rf -- "$tmp"
	mkdir -m 0700 -- "$tmp"
	(
		umask 077
		cd -- "$tmp"
		openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ca.key
		openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=muster-e2e-ca" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.crt
		openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out apiserver.key
		openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr
		printf '%s\n' \
			"basicConstraints=critical,CA:FALSE" \
			"keyUsage=critical,digitalSignature,keyEncipherment" \
			"extendedKeyUsage=serverAuth" \
			"subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,$(real_node_gateways)" \
			>apiserver.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-sha256 -days 3650 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
		openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
		openssl pkey -in sa.key -pubout -out sa.pub
		printf '%s,admin,admin,system:masters\n' "$(openssl rand -hex 32)" >tokens.csv
		chmod 0600 -- *.key tokens.csv
		rm -f -- apiserver.csr apiserver.ext ca.srl
	)
	mv -- "$tmp" "$PKI"
}

# real_node_gateways: the SANs of the real nodes' bridge addresses
# (10.244.I.1, node.sh), through which their pods reach this apiserver.
real_node_gateways() {
	local i sans=""
	for ((i = 1; i <= 8; i++)); do
		sans+="${sans:+,}IP:10.244.$i.1"
	done
	printf '%s\n' "$sans"
}

# write_kubeconfig: token authentication, server certificate checked against our CA.
write_kubeconfig() {
	local ca_data tmp=$KUBECONFIG_PATH.tmp
	ca_data=$(base64 -w0 <"$PKI/ca.crt")
	(
		umask 077
		cat >"$tmp" <<-KUBECONFIG
			apiVersion: v1
			kind: Config
			clusters:
			- name: muster-e2e
			  cluster:
			    server: $APISERVER_URL
			    certificate-authority-data: $ca_data
			users:
			- name: admin
			  user:
			    token: $(admin_token)
			contexts:
			- name: muster-e2e
			  context:
			    cluster: muster-e2e
			    user: admin
			current-context: muster-e2e
		KUBECONFIG
	)
	mv -- "$tmp" "$KUBECONFIG_PATH"
}

# start_component NAME COMMAND...: starts COMMAND in its own session with stdio
# to NAME.log, records its pid, and makes sure the pid is the binary itself.
start_component() {
	local name=$1
	shift
	local log_file=$CLUSTER_DIR/$name.log
	printf '\n==== %s starting %s\n' "$(date '+%F %T')" "$name" >>"$log_file"
	# 9>&- keeps the run lock out of the long-lived process. setsid does not
	# fork here (a background job of a script is no process-group leader), so
	# $! is the component's own pid once the exec chain is done.
	(cd -- "$CLUSTER_DIR" && exec setsid "$@") </dev/null >>"$log_file" 2>&1 9>&- &
	local pid=$!
	printf '%s\n' "$pid" >"$CLUSTER_DIR/$name.pid"
	STARTED+=("$name")
	local tenths
	for ((tenths = 0; tenths < 50; tenths++)); do
		pid_is_component "$pid" "$name" && return 0
		kill -0 "$pid" 2>/dev/null || fail "$name" "$name exited at once"
		sleep 0.1
	done
	fail "$name" "pid $pid never became $name"
}

# wait_for NAME SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds,
# failing early if NAME's process has died.
wait_for() {
	local name=$1 seconds=$2 description=$3
	shift 3
	local deadline=$((SECONDS + seconds))
	until "$@"; do
		component_pid "$name" >/dev/null || fail "$name" "$name died while waiting for $description"
		((SECONDS < deadline)) || fail "$name" "$description: not within $seconds s"
		sleep 0.2
	done
}

# A single member elects itself after one election timeout; 500 ms instead of
# the default 1 s saves start time and cannot cause churn without peers.
start_etcd() {
	step "starting etcd on 127.0.0.1:$ETCD_PORT"
	start_component etcd /usr/bin/etcd \
		--name=muster-e2e \
		--data-dir="$CLUSTER_DIR/etcd" \
		--listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster="muster-e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
		--heartbeat-interval=100 \
		--election-timeout=500
	wait_for etcd 30 "etcd /health" etcd_healthy
	defragment_etcd
}

# The state is kept between starts, and the apiserver's compaction frees
# pages inside etcd's file without shrinking it: after a few 5,000-pod
# benchmarks the file was 543 MB with 54 MB in use, a quarter of etcd's
# 2 GiB quota, past which every write fails. A start rewrites it compactly
# (etcd's gateway; Debian's etcd-server has no etcdctl), before any client
# connects. A failure is reported and the start goes on: the data is whole,
# only larger.
defragment_etcd() {
	local answer
	if ! answer=$(curl -fsS --max-time 120 -X POST -d '{}' \
		"http://127.0.0.1:$ETCD_PORT/v3/maintenance/defragment" 2>&1); then
		log "warning: defragmenting etcd's data failed (the start goes on): $answer"
	fi
}

# --endpoint-reconciler-type=none: the "kubernetes" Service would point at
# 127.0.0.1, which Endpoints validation refuses, every 10 s in the log.
# --bind-address=0.0.0.0: the real nodes' pods (muster installed in the
# cluster) reach the apiserver at their bridge's host address 10.244.I.1
# (there is no kube-proxy for the "kubernetes" Service); everything else
# uses 127.0.0.1. --enable-aggregator-routing: webhooks registered by
# Service are dialled at their endpoints (pod IPs on the bridges), not at a
# ClusterIP nothing would route.
# --allow-privileged: upstream examples (TPU multislice) ask for privileged pods.
start_apiserver() {
	step "starting kube-apiserver on $APISERVER_URL"
	start_component kube-apiserver "$K8S_BIN_DIR/kube-apiserver" \
		--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
		--bind-address=0.0.0.0 \
		--advertise-address=127.0.0.1 \
		--enable-aggregator-routing=true \
		--secure-port="$APISERVER_PORT" \
		--cert-dir="$PKI" \
		--tls-cert-file="$PKI/apiserver.crt" \
		--tls-private-key-file="$PKI/apiserver.key" \
		--client-ca-file="$PKI/ca.crt" \
		--service-account-key-file="$PKI/sa.pub" \
		--service-account-signing-key-file="$PKI/sa.key" \
		--service-account-issuer=https://kubernetes.default.svc \
		--token-auth-file="$PKI/tokens.csv" \
		--authorization-mode=RBAC \
		--service-cluster-ip-range=10.96.0.0/16 \
		--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
		--allow-privileged=true \
		--endpoint-reconciler-type=none
	wait_for kube-apiserver "$READY_TIMEOUT" "kube-apiserver /readyz" apiserver_ready
	step "kube-apiserver is ready"
}

# The client rate limits of the scheduler (50 QPS by default: 100 s just to
# bind 5,000 pods) and of the controller-manager (20 QPS: the garbage
# collector then removes 30-40 pods/s) are raised, as large clusters do, so
# that a 5,000-pod JobSet is limited by muster and the apiserver, not by them.
#
# Its metrics and profile are served on 127.0.0.1:$SCHEDULER_METRICS_PORT
# (the insecure port of 1.20, loopback only) unless that port is taken: then
# nowhere, and the benchmarks print no scheduler figures.
start_scheduler() {
	local port=$SCHEDULER_METRICS_PORT
	rm -f -- "$SCHEDULER_URL_FILE"
	if port_in_use "$port"; then
		log "warning: 127.0.0.1:$port is taken: kube-scheduler serves no metrics (MUSTER_SCHEDULER_METRICS_PORT)"
		port=0
	fi
	step "starting kube-scheduler"
	start_component kube-scheduler "$K8S_BIN_DIR/kube-scheduler" \
		--kubeconfig="$KUBECONFIG_PATH" \
		--leader-elect=false \
		--kube-api-qps=500 \
		--kube-api-burst=1000 \
		--address=127.0.0.1 \
		--port="$port" \
		--secure-port=0
	# Empty when it serves nowhere: the file says this up.sh started it.
	if [ "$port" != 0 ]; then
		printf 'http://127.0.0.1:%s\n' "$port" >"$SCHEDULER_URL_FILE"
	else
		: >"$SCHEDULER_URL_FILE"
	fi
}

start_controller_manager() {
	step "starting kube-controller-manager ($CONTROLLERS)"
	start_component kube-controller-manager "$K8S_BIN_DIR/kube-controller-manager" \
		--kubeconfig="$KUBECONFIG_PATH" \
		--leader-elect=false \
		--port=0 \
		--secure-port=0 \
		--controllers="$CONTROLLERS" \
		--kube-api-qps=300 \
		--kube-api-burst=600 \
		--concurrent-gc-syncs=50 \
		--use-service-account-credentials=false \
		--service-account-private-key-file="$PKI/sa.key" \
		--root-ca-file="$PKI/ca.crt"
}

# install_crd: the upstream JobSet CRD made loadable by 1.20 when it is there,
# else the project's own; then waits until the API serves JobSets.
install_crd() {
	local manifest
	if [[ -f $JOBSET_CRD ]]; then
		step "installing the upstream JobSet CRD from $JOBSET_CRD (transformed for 1.20)"
		manifest=$CLUSTER_DIR/jobset-crd.1.20.json
		"$PYTHON" "$HERE/crd_for_1_20.py" "$JOBSET_CRD" "$manifest"
	else
		step "no upstream JobSet CRD at $JOBSET_CRD; installing $FALLBACK_CRD"
		manifest=$FALLBACK_CRD
	fi
	# Server-side apply: the upstream CRD is too big for the last-applied
	# annotation that client-side apply would add.
	kubectl_admin apply --server-side --force-conflicts --field-manager=muster-e2e \
		-f "$manifest" >&2
	wait_for kube-apiserver 60 "CRD $CRD_NAME Established" crd_established
	install_topology_crds
}

# install_topology_crds: Kueue's Topology and Volcano's HyperNode CRDs,
# upstream and unmodified in ../shared, made loadable by 1.20 the same way,
# so the suite can create real objects of both kinds.
install_topology_crds() {
	local crd name manifest
	for crd in "${TOPOLOGY_CRDS[@]}"; do
		[[ -f $crd ]] || continue
		name=$(basename "$crd" .yaml)
		manifest=$CLUSTER_DIR/$name.1.20.json
		step "installing $name from $crd (transformed for 1.20)"
		"$PYTHON" "$HERE/crd_for_1_20.py" "$crd" "$manifest"
		kubectl_admin apply --server-side --force-conflicts --field-manager=muster-e2e -f "$manifest" >&2
	done
}

# topology_crds_present: every topology CRD in ../shared is installed.
topology_crds_present() {
	local crd
	for crd in "${TOPOLOGY_CRDS[@]}"; do
		[[ -f $crd ]] || continue
		kubectl_admin get "crd/$(basename "$crd" .yaml | sed 's/^\([^_]*\)_\(.*\)$/\2.\1/')" >/dev/null 2>&1 ||
			return 1
	done
}

# crd_established: polled rather than `kubectl wait`, which errors out instead
# of waiting while a brand-new CRD has no status.conditions yet.
crd_established() {
	[[ $(kubectl_admin get "crd/$CRD_NAME" \
		-o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]]
}

# check_alive: the scheduler and controller manager have no health port here
# (their secure ports are off so nothing can clash), so make sure they survived
# their first second, when a bad flag or kubeconfig would end them.
check_alive() {
	local name
	sleep 1
	for name in kube-scheduler kube-controller-manager; do
		component_pid "$name" >/dev/null || fail "$name" "$name exited shortly after starting"
	done
}

# start_real_nodes: MUSTER_REAL_NODES (default 1) real kubelet nodes
# (node.sh), with muster's images (make images) imported; 0 for none.
start_real_nodes() {
	local count=${MUSTER_REAL_NODES:-1}
	((count > 0)) || return 0
	step "real nodes: $count (MUSTER_REAL_NODES), images from make images"
	make -s --no-print-directory -C "$HERE/../.." images >&2 || die "make images failed"
	"$HERE/node.sh" up "$count" >&2
}

main() {
	"$HERE/deps.sh" >&2
	"$HERE/build.sh" >&2
	command -v kubectl >/dev/null || die "kubectl not found"

	take_lock "$CLUSTER_LOCK" 300

	if all_running && apiserver_ready; then
		if ! kubectl_admin get "crd/$CRD_NAME" >/dev/null 2>&1; then
			install_crd
		elif ! topology_crds_present; then
			install_topology_crds
		fi
		if [[ ! -e $SCHEDULER_URL_FILE ]]; then
			# Started by an up.sh that did not serve its metrics yet.
			log "restarting kube-scheduler to serve its metrics"
			stop_component kube-scheduler || die "could not stop kube-scheduler"
			start_scheduler
		fi
		log "reusing the running control plane in $CLUSTER_DIR ($APISERVER_URL)"
		start_real_nodes
		printf '%s\n' "$KUBECONFIG_PATH"
		return 0
	fi
	# Whatever is left of a half-running cluster goes; its state stays.
	stop_all || die "could not stop the leftovers of the previous start"

	local port
	for port in "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT"; do
		if port_in_use "$port"; then
			die "127.0.0.1:$port is already in use; choose free ports with MUSTER_ETCD_PORT, MUSTER_ETCD_PEER_PORT and MUSTER_APISERVER_PORT"
		fi
	done

	mkdir -p -- "$CLUSTER_DIR"
	chmod 0700 -- "$CLUSTER_DIR"
	[[ -e $CLUSTER_MARKER ]] || printf 'state of muster e2e/cluster/up.sh; removed by down.sh\n' >"$CLUSTER_MARKER"
	make_pki
	write_kubeconfig

	trap on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	start_etcd
	start_apiserver
	start_scheduler
	install_crd
	start_controller_manager
	check_alive

	SUCCEEDED=1
	step "control plane is up: $APISERVER_URL (logs and pids in $CLUSTER_DIR)"
	start_real_nodes
	printf '%s\n' "$KUBECONFIG_PATH"
}

main "$@"
