#!/usr/bin/env bash
# Prints (stdout) muster's MutatingWebhookConfiguration `muster-jobset-mutate`,
# ValidatingWebhookConfiguration `muster-jobset-validate` and
# MutatingWebhookConfiguration `muster-pod-pin` (placement: each Job or pod of a
# placed JobSet gets its domain's nodeSelector), with the CA's certificate as
# caBundle.
#
#   deploy/render-webhooks.sh --ca-file FILE
#           [--url https://HOST:PORT | --service NAME --namespace NS [--port 443]]
#           [--failure-policy Fail|Ignore] [--timeout-seconds N] [--no-match-conditions]
#           [--namespace-label KEY=VALUE]
#
#   --ca-file FILE      PEM CA that signed the webhook's serving certificate
#                       (gen-certs.sh's ca.crt); its base64 becomes caBundle
#   --url URL           register by URL (URL + /mutate, URL + /validate): a webhook
#                       outside the cluster, e.g. https://127.0.0.1:8443 on the
#                       local control plane (whose Services have no endpoints)
#   --service, --namespace, --port
#                       register by Service (default: muster-webhook in
#                       muster-system, port 443), the in-cluster deployment.
#                       --namespace is also the muster namespace that the
#                       namespaceSelector excludes
#   --failure-policy    Fail (default) or Ignore; see deploy/README.md
#   --timeout-seconds   1..30 (default 5)
#   --namespace-label KEY=VALUE
#                       send only the JobSets of namespaces labelled KEY=VALUE
#                       (opt-in), instead of every namespace but kube-system and
#                       muster's. Before 1.28 the apiserver ignores
#                       matchConditions, so with failurePolicy Fail a webhook
#                       outage refuses every JobSet create and update in the
#                       namespaces matched; an opt-in label keeps that to the
#                       namespaces that use gang starts
#   --no-match-conditions
#                       leave out matchConditions. They are CEL, used by 1.28+
#                       (beta, on by default; 1.30 GA). Kubernetes before 1.27
#                       does not know the field: the apiserver drops it silently,
#                       but kubectl's schema validation refuses the object unless
#                       --validate=false is given. Render without them there.
#
# What the webhooks match: jobsets in jobset.x-k8s.io/v1alpha2, Namespaced,
# CREATE and UPDATE (the mutating webhook injects on CREATE and, on an UPDATE
# that resumes a suspended JobSet, raises its gang generation), in every namespace but
# kube-system and the muster namespace; with matchConditions (1.28+), only
# JobSets that ask for a gang start (spec.groupSchedulingConfig or a
# muster.dev/group-scheduling-* annotation), or a topology request, or carry
# the placement gate's marks (muster.dev/placement, muster.dev/placement-reason,
# muster.dev/placement-skipped, and on a pod template the pin route's
# muster.dev/job-pinned and muster.dev/job-selector: copied from another
# JobSet, the webhook removes them); for UPDATE also the
# old object, so removing the request is seen. Requests of muster's controller are sent too: its resume of
# a JobSet it placed must raise the gang generation, and only its requests may
# mark a JobSet placed. deploy/test/ evaluates these expressions in `make
# test` (the local control plane, 1.20, ignores them). The pod webhook matches pods CREATE carrying
# the label muster.dev/placement=true (objectSelector: only pods of JobSets
# muster placed are sent), in the same namespaces; failurePolicy Fail, so that
# no such pod runs unpinned. Its second webhook matches Jobs CREATE carrying
# the same label (JobSet copies it from the gated JobSet's Job templates): a
# Job whose pods all go to one domain is pinned whole and its pod template
# labelled muster.dev/job-pinned, which the pod webhook's objectSelector leaves
# out, so that its pods are not sent again; and no such Job is made before its
# JobSet is placed.
# Exit codes: 0 printed, 1 failure, 2 bad usage.
set -euo pipefail

ca_file=
url=
service=muster-webhook
namespace=muster-system
port=443
failure_policy=Fail
timeout_seconds=5
match_conditions=1
service_given=0
namespace_label=

usage() {
	sed -n '6,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
# --help: the comment at the top of this file.
help() {
	sed -n '2,/^set -euo pipefail$/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 0
}
say() { echo "render-webhooks: $*" >&2; }
die() {
	say "$*"
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--ca-file | --url | --service | --namespace | --port | --failure-policy | --timeout-seconds | --namespace-label)
		[ $# -ge 2 ] || { say "$1 needs a value"; usage; }
		case $1 in
		--ca-file) ca_file=$2 ;;
		--url) url=$2 ;;
		--service) service=$2; service_given=1 ;;
		--namespace) namespace=$2 ;;
		--port) port=$2; service_given=1 ;;
		--failure-policy) failure_policy=$2 ;;
		--timeout-seconds) timeout_seconds=$2 ;;
		--namespace-label) namespace_label=$2 ;;
		esac
		shift 2
		;;
	--no-match-conditions) match_conditions=0; shift ;;
	-h | --help) help ;;
	*) say "unknown argument: $1"; usage ;;
	esac
done

[ -n "$ca_file" ] || { say "--ca-file is required"; usage; }
[ -r "$ca_file" ] || die "cannot read $ca_file"
grep -q -- '-----BEGIN CERTIFICATE-----' "$ca_file" || die "$ca_file is not a PEM certificate"
if grep -q -- 'PRIVATE KEY' "$ca_file"; then
	die "$ca_file holds a private key; give the CA certificate (ca.crt), not its key"
fi
if [ -n "$url" ] && [ "$service_given" = 1 ]; then
	die "give --url or --service/--port, not both"
fi
if [ -n "$url" ]; then
	# The apiserver wants https, a host, no user info, query or fragment.
	[[ $url =~ ^https://[^/?#@[:space:]]+(/[^?#[:space:]]*)?$ ]] ||
		die "--url '$url' must be https://HOST[:PORT][/PATH] without query or fragment"
	url=${url%/}
fi
dns_label='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'
[[ $service =~ $dns_label ]] || die "--service '$service' is not a DNS label"
[[ $namespace =~ $dns_label ]] || die "--namespace '$namespace' is not a DNS label"
if ! [[ $port =~ ^[1-9][0-9]{0,4}$ ]] || [ "$port" -gt 65535 ]; then
	die "--port '$port' is not a port"
fi
case $failure_policy in Fail | Ignore) ;; *) die "--failure-policy is Fail or Ignore, not '$failure_policy'" ;; esac
if ! [[ $timeout_seconds =~ ^[1-9][0-9]?$ ]] || [ "$timeout_seconds" -gt 30 ]; then
	die "--timeout-seconds is 1..30, not '$timeout_seconds'"
fi

if [ -n "$namespace_label" ]; then
	# A qualified label key (optional DNS prefix, then a name) and a label value.
	label_re='^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?=([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$'
	[[ $namespace_label =~ $label_re ]] || die "--namespace-label '$namespace_label' is not KEY=VALUE with a label key and value"
fi

ca_bundle=$(base64 <"$ca_file" | tr -d '\n')

client_config() { # $1: the path
	if [ -n "$url" ]; then
		cat <<EOF
    clientConfig:
      url: "$url$1"
      caBundle: $ca_bundle
EOF
	else
		cat <<EOF
    clientConfig:
      service:
        name: $service
        namespace: $namespace
        path: $1
        port: $port
      caBundle: $ca_bundle
EOF
	fi
}

namespace_selector() {
	if [ -n "$namespace_label" ]; then
		cat <<EOF
    namespaceSelector:
      # Opt-in: only namespaces labelled ${namespace_label%%=*}=${namespace_label#*=}.
      matchLabels:
        "${namespace_label%%=*}": "${namespace_label#*=}"
EOF
		return
	fi
	cat <<EOF
    namespaceSelector:
      # kubernetes.io/metadata.name is set on every namespace from 1.21 on;
      # on 1.20 only where set by hand (muster's namespace sets it), so there
      # kube-system is not excluded (harmless: the webhooks see jobsets only).
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: NotIn
          values: ["kube-system", "$namespace"]
EOF
}

# The rule is shared; only the operations differ.
common() { # $1: operations, as a YAML flow list
	cat <<EOF
    rules:
      - apiGroups: ["jobset.x-k8s.io"]
        apiVersions: ["v1alpha2"]
        operations: $1
        resources: ["jobsets"]
        scope: Namespaced
    matchPolicy: Equivalent
$(namespace_selector)
    sideEffects: None
    admissionReviewVersions: ["v1"]
    timeoutSeconds: $timeout_seconds
    failurePolicy: $failure_policy
EOF
}

# CEL (1.28+). `object` is the JobSet being admitted (null on DELETE, which is
# not matched), `oldObject` the stored one on UPDATE (null on CREATE).
asks() { # $1: object or oldObject
	local o=$1
	printf "(%s != null && ((has(%s.spec) && has(%s.spec.groupSchedulingConfig)) || (has(%s.metadata.annotations) && \
('muster.dev/group-scheduling-timeout' in %s.metadata.annotations || \
'muster.dev/group-scheduling-targets' in %s.metadata.annotations || \
'muster.dev/placement' in %s.metadata.annotations || \
'muster.dev/placement-reason' in %s.metadata.annotations || \
'muster.dev/placement-skipped' in %s.metadata.annotations)) || %s))" "$o" "$o" "$o" "$o" "$o" "$o" "$o" "$o" "$o" "$(topology "$o")"
}

# A topology request muster places (webhook/placement_gate.h): muster's and
# upstream JobSet's annotations on the JobSet, a Job template's
# exclusive-topology, Kueue's podset-* and muster's on a pod template; and the
# gate's label muster.dev/placement on a Job or pod template, which the
# webhook strips from a JobSet it does not gate (its Jobs and pods would be
# sent to /pin, which refuses them without a placement record), and the pin
# route's marks on a pod template (muster.dev/job-pinned would keep its pods
# from /pin, muster.dev/job-selector would pin them), stripped too. The mutating
# webhook sees objects before the apiserver validates them: every field
# below the JobSet's metadata is tested with has() before it is read, so that
# a missing one gives false and not an error (which failurePolicy Fail would
# turn into a refusal with a CEL message).
topology() { # $1: object or oldObject
	local o=$1
	printf "(has(%s.metadata.annotations) && %s.metadata.annotations.exists(k, k.startsWith('muster.dev/topology-') || \
k == 'muster.dev/network-topology' || k == 'alpha.jobset.sigs.k8s.io/exclusive-topology')) || \
(has(%s.spec) && has(%s.spec.replicatedJobs) && %s.spec.replicatedJobs.exists(r, has(r.template) && \
((has(r.template.metadata) && ((has(r.template.metadata.annotations) && \
'alpha.jobset.sigs.k8s.io/exclusive-topology' in r.template.metadata.annotations) || \
(has(r.template.metadata.labels) && 'muster.dev/placement' in r.template.metadata.labels))) || \
(has(r.template.spec) && has(r.template.spec.template) && has(r.template.spec.template.metadata) && \
((has(r.template.spec.template.metadata.annotations) && \
r.template.spec.template.metadata.annotations.exists(k, k.startsWith('kueue.x-k8s.io/podset-') || \
k == 'muster.dev/network-topology' || k == 'muster.dev/partition-policy' || k == 'muster.dev/job-selector')) || \
(has(r.template.spec.template.metadata.labels) && ('muster.dev/placement' in r.template.spec.template.metadata.labels || \
'muster.dev/job-pinned' in r.template.spec.template.metadata.labels)))))))" "$o" "$o" "$o" "$o" "$o"
}

match_conditions() { # $1: the expression selecting the JobSets
	[ "$match_conditions" = 1 ] || return 0
	cat <<EOF
    matchConditions:
      - name: asks-for-gang-start
        expression: >-
          $1
EOF
}

cat <<EOF
# Rendered by deploy/render-webhooks.sh; caBundle is $ca_file.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: muster-jobset-mutate
  labels:
    app.kubernetes.io/name: muster
    app.kubernetes.io/component: webhook
webhooks:
  - name: mutate.jobsets.muster.dev
$(client_config /mutate)
$(common '["CREATE", "UPDATE"]')
    reinvocationPolicy: Never
$(match_conditions "$(asks object) || $(asks oldObject)")
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: muster-jobset-validate
  labels:
    app.kubernetes.io/name: muster
    app.kubernetes.io/component: webhook
webhooks:
  - name: validate.jobsets.muster.dev
$(client_config /validate)
$(common '["CREATE", "UPDATE"]')
$(match_conditions "$(asks object) || $(asks oldObject)")
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: muster-pod-pin
  labels:
    app.kubernetes.io/name: muster
    app.kubernetes.io/component: webhook
webhooks:
  - name: pin.pods.muster.dev
$(client_config /pin)
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
        scope: Namespaced
    matchPolicy: Equivalent
$(namespace_selector)
    objectSelector:
      matchLabels:
        muster.dev/placement: "true"
      matchExpressions:
        - key: muster.dev/job-pinned
          operator: DoesNotExist
    sideEffects: None
    admissionReviewVersions: ["v1"]
    timeoutSeconds: $timeout_seconds
    failurePolicy: Fail
    reinvocationPolicy: Never
  - name: pin.jobs.muster.dev
$(client_config /pin)
    rules:
      - apiGroups: ["batch"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["jobs"]
        scope: Namespaced
    matchPolicy: Equivalent
$(namespace_selector)
    objectSelector:
      matchLabels:
        muster.dev/placement: "true"
    sideEffects: None
    admissionReviewVersions: ["v1"]
    timeoutSeconds: $timeout_seconds
    failurePolicy: Fail
    reinvocationPolicy: Never
EOF
