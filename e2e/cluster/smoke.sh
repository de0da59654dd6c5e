#!/usr/bin/env bash
#
# smoke.sh - checks that a control plane started by up.sh does what the
# end-to-end tests rely on, and leaves nothing behind:
#   - /readyz answers ok through the admin kubeconfig;
#   - kube-scheduler binds a pod to a (fake) Ready node and honours nodeSelector;
#   - an upstream example JobSet applies and reads back with the CRD's defaults;
#   - the garbage collector deletes a ConfigMap owned by a JobSet once the
#     JobSet is deleted.
# Usage: smoke.sh [KUBECONFIG]   (default: the one up.sh prints)
# Env: MUSTER_JOBSET_EXAMPLE (default ../shared/jobset/examples/simple-paralleljobs.yaml).
# There is no kubelet: the node is an API object whose status this script
# writes, as the tests' node agent will.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

REPO_ROOT=$(cd -- "$HERE/../.." && pwd -P)
export KUBECONFIG=${1:-$KUBECONFIG_PATH}
EXAMPLE=${MUSTER_JOBSET_EXAMPLE:-$REPO_ROOT/../shared/jobset/examples/simple-paralleljobs.yaml}
NAMESPACE=muster-smoke-$$
NODE=muster-smoke-node-$$
[[ -r $KUBECONFIG ]] || die "no kubeconfig at $KUBECONFIG (run up.sh first)"

cleanup() {
	kubectl delete namespace "$NAMESPACE" --wait=false --ignore-not-found >/dev/null 2>&1 || true
	kubectl delete node "$NODE" --ignore-not-found >/dev/null 2>&1 || true
}
trap cleanup EXIT

# poll SECONDS DESCRIPTION COMMAND...: retries COMMAND every 0.25 s.
poll() {
	local seconds=$1 description=$2
	shift 2
	local deadline=$((SECONDS + seconds))
	until "$@"; do
		((SECONDS < deadline)) || die "$description: not within $seconds s"
		sleep 0.25
	done
}

jsonpath() {
	kubectl get "$@" 2>/dev/null
}

pod_node() {
	[[ $(jsonpath -n "$NAMESPACE" pod "$1" -o 'jsonpath={.spec.nodeName}') == "$2" ]]
}

default_token_ready() {
	[[ -n $(jsonpath -n "$NAMESPACE" serviceaccount default -o 'jsonpath={.secrets[0].name}') ]]
}

# configmap_gone: a successful list that no longer has it (an error is not "gone").
configmap_gone() {
	local found
	found=$(kubectl get -n "$NAMESPACE" configmap --field-selector=metadata.name=owned-by-jobset -o name 2>/dev/null) ||
		return 1
	[[ -z $found ]]
}

check_readyz() {
	[[ $(kubectl get --raw /readyz) == ok ]] || die "/readyz is not ok"
	log "ok: /readyz"
}

check_scheduling() {
	kubectl create namespace "$NAMESPACE" >/dev/null
	kubectl apply -f - >/dev/null <<-NODE
		apiVersion: v1
		kind: Node
		metadata:
		  name: $NODE
		  labels:
		    muster.test/pool: smoke
	NODE
	# Report Ready and some capacity through the status subresource, as a kubelet would.
	local now
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	kubectl patch node "$NODE" --subresource=status --type=merge -p "{\"status\":{
		\"capacity\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\"},
		\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\"},
		\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",
			\"message\":\"smoke.sh\",\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
	# The node lifecycle controller would lift it too, but not at once.
	kubectl taint node "$NODE" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
	poll 30 "service account token in $NAMESPACE" default_token_ready
	local name selector
	for name in placed unplaceable; do
		selector=smoke
		[[ $name == unplaceable ]] && selector=nowhere
		kubectl apply -n "$NAMESPACE" -f - >/dev/null <<-POD
			apiVersion: v1
			kind: Pod
			metadata:
			  name: $name
			spec:
			  nodeSelector:
			    muster.test/pool: $selector
			  containers:
			  - name: main
			    image: busybox
		POD
	done
	poll 30 "pod bound to $NODE" pod_node placed "$NODE"
	sleep 1
	pod_node unplaceable "" || die "the scheduler bound a pod whose nodeSelector matches no node"
	log "ok: kube-scheduler bound the pod to $NODE and left the unplaceable one pending"
	kubectl delete -n "$NAMESPACE" pod placed unplaceable --grace-period=0 --force >/dev/null 2>&1
	kubectl delete node "$NODE" >/dev/null
}

check_jobset_and_gc() {
	[[ -r $EXAMPLE ]] || die "no example JobSet at $EXAMPLE"
	kubectl apply -n "$NAMESPACE" -f "$EXAMPLE" >/dev/null
	local name uid groups
	name=$(kubectl create --dry-run=client -o 'jsonpath={.metadata.name}' -f "$EXAMPLE")
	uid=$(jsonpath -n "$NAMESPACE" jobset "$name" -o 'jsonpath={.metadata.uid}')
	groups=$(jsonpath -n "$NAMESPACE" jobset "$name" -o 'jsonpath={.spec.replicatedJobs[*].groupName}')
	[[ -n $uid ]] || die "JobSet $name did not read back"
	[[ $groups =~ ^default( default)*$ ]] || die "JobSet $name: groupName not defaulted (got '$groups')"
	log "ok: JobSet $name from ${EXAMPLE##*/} applied and read back (groupName defaulted)"

	kubectl apply -n "$NAMESPACE" -f - >/dev/null <<-CONFIGMAP
		apiVersion: v1
		kind: ConfigMap
		metadata:
		  name: owned-by-jobset
		  ownerReferences:
		  - apiVersion: jobset.x-k8s.io/v1alpha2
		    kind: JobSet
		    name: $name
		    uid: $uid
		data:
		  released: "false"
	CONFIGMAP
	configmap_gone && die "the ConfigMap owned by JobSet $name was not created"
	kubectl delete -n "$NAMESPACE" jobset "$name" --wait=true >/dev/null
	local start=$SECONDS
	poll 60 "garbage collection of the ConfigMap owned by JobSet $name" configmap_gone
	log "ok: garbage collector removed the JobSet's ConfigMap ($((SECONDS - start)) s after the JobSet was deleted)"
}

check_readyz
check_scheduling
check_jobset_and_gc
log "smoke test passed"
