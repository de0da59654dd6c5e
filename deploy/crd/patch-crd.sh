#!/usr/bin/env bash
# Adds the schema of spec.groupSchedulingConfig to the installed JobSet CRD
# (or removes it with --remove), so that the apiserver keeps the field instead
# of pruning it silently.
#
#   deploy/crd/patch-crd.sh [--kubeconfig FILE] [--context NAME] [--remove [--force]] [--status]
#
# Idempotent: when the schema is already there and identical, nothing is
# written; when an older muster schema is there, it is replaced; --remove on a
# CRD without it does nothing. The JSON patch applied is
# groupschedulingconfig.patch.json beside this script. It names the version by
# index (/spec/versions/0, v1alpha2 in JobSet v0.12.0) and starts with a
# "test" of that version's name, so a CRD laid out differently is refused by
# the apiserver rather than patched in the wrong place. This script looks the
# index of v1alpha2 up by name and rewrites the paths when it is not 0.
#
# --remove refuses while any JobSet still has spec.groupSchedulingConfig (not
# counting JobSets being deleted or in a namespace being deleted): once
# the schema is gone the apiserver prunes the field from every read, the
# controller no longer sees those JobSets as group-scheduled, and their pods'
# barriers are never released (they time out). --force removes anyway.
#
# After a patch it returns once the apiserver serves the field (kubectl
# validates it and the apiserver keeps it; PATCH_CRD_WAIT_SECONDS, 60);
# after a removal, once it no longer does.
#
# --status prints "present", "absent" or "outdated" (stdout) and changes
# nothing. Progress goes to stderr. Needs kubectl (and nothing else).
#
# Exit codes: 0 done (or nothing to do), 1 failure, 2 bad usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_file="$here/groupschedulingconfig.patch.json"
crd=jobsets.jobset.x-k8s.io
version=v1alpha2
field_path=schema.openAPIV3Schema.properties.spec.properties.groupSchedulingConfig

kubectl_args=()
mode=apply
force=0

usage() {
	sed -n '6,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
# --help: the comment at the top of this file.
help() {
	sed -n '2,/^set -euo pipefail$/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 0
}

say() { echo "patch-crd: $*" >&2; }
die() {
	say "$*"
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--kubeconfig) [ $# -ge 2 ] || usage; kubectl_args+=(--kubeconfig "$2"); shift 2 ;;
	--kubeconfig=*) kubectl_args+=(--kubeconfig "${1#*=}"); shift ;;
	--context) [ $# -ge 2 ] || usage; kubectl_args+=(--context "$2"); shift 2 ;;
	--context=*) kubectl_args+=(--context "${1#*=}"); shift ;;
	--remove) mode=remove; shift ;;
	--status) mode=status; shift ;;
	--force) force=1; shift ;;
	-h | --help) help ;;
	*) say "unknown argument: $1"; usage ;;
	esac
done

[ -r "$patch_file" ] || die "$patch_file is missing"
command -v kubectl >/dev/null || die "kubectl is not on PATH"

# ${a[@]+...}: an empty array under set -u, also in bash 3.2 (macOS).
k() { kubectl ${kubectl_args[@]+"${kubectl_args[@]}"} "$@"; }

# The index of $version in spec.versions, found by name.
names=$(k get crd "$crd" -o 'jsonpath={range .spec.versions[*]}{.name}{"\n"}{end}') ||
	die "cannot read CRD $crd (is JobSet installed?)"
index=-1
i=0
while IFS= read -r name; do
	if [ "$name" = "$version" ]; then
		index=$i
		break
	fi
	i=$((i + 1))
done <<<"$names"
[ "$index" -ge 0 ] || die "CRD $crd has no version $version (versions: $(echo "$names" | tr '\n' ' '))"

# The patch with /spec/versions/0 turned into this CRD's index.
patch=$(sed "s#/spec/versions/0/#/spec/versions/$index/#g" "$patch_file")

in_schema() { k get crd "$crd" -o "jsonpath={.spec.versions[$index].$field_path.type}"; }

# "present" when applying the patch would change nothing. A server-side dry
# run answers that exactly, whatever order the apiserver keeps the keys in.
state() {
	local out
	if [ -z "$(in_schema)" ]; then
		echo absent
		return
	fi
	out=$(k patch crd "$crd" --type json --patch "$patch" --dry-run=server 2>&1) ||
		die "dry run of the patch failed: $out"
	case $out in
	*"(no change)"*) echo present ;;
	*) echo outdated ;;
	esac
}

# The apiserver serves a new schema a moment after the patch: in its
# OpenAPI document, which kubectl validates against (it refuses "unknown
# field" until then), and to its handler, which prunes the field until then.
# Both are waited for, so that a JobSet made right after this script keeps
# its field. The handler is asked by a server-side dry run; one refused for
# another reason (no namespace default, a webhook) leaves the OpenAPI check.
explained() {
	k explain jobsets.spec.groupSchedulingConfig --api-version="jobset.x-k8s.io/$version" >/dev/null 2>&1
}
# What the handler keeps of the field in a server-side dry run (empty:
# pruned); fails when the dry run is refused for another reason.
kept_by_handler() {
	k create --dry-run=server -o 'jsonpath={.spec.groupSchedulingConfig.timeoutAfterSeconds}' -f - 2>/dev/null <<EOF
{"apiVersion":"jobset.x-k8s.io/$version","kind":"JobSet",
 "metadata":{"name":"muster-patch-crd-check","namespace":"default"},
 "spec":{"groupSchedulingConfig":{"timeoutAfterSeconds":60},"replicatedJobs":[]}}
EOF
}
served() {
	local kept
	explained || return 1
	kept=$(kept_by_handler) || return 0
	[ "$kept" = 60 ]
}
# Waits until "$1" (served or gone) holds, else dies saying "$2".
wait_until() {
	local deadline=$((SECONDS + ${PATCH_CRD_WAIT_SECONDS:-60}))
	until "$1"; do
		[ "$SECONDS" -lt "$deadline" ] ||
			die "$2 within ${PATCH_CRD_WAIT_SECONDS:-60} s (kubectl explain jobsets.spec.groupSchedulingConfig); run this script again"
		sleep 0.5
	done
}
wait_served() {
	wait_until served "the schema is patched but the apiserver did not serve it"
	say "$crd: spec.groupSchedulingConfig is served (kubectl validates it, the apiserver keeps it)"
}

# A removal is served a moment later in the same way: until then kubectl
# still knows the field and the handler still keeps it. It is waited for
# too, so that the field added back right after is never taken as served
# by the schema from before the removal.
gone() {
	local kept
	! explained || return 1
	kept=$(kept_by_handler) || return 0
	[ -z "$kept" ]
}
wait_gone() {
	wait_until gone "the field is removed from the schema but the apiserver still served it"
	say "$crd: spec.groupSchedulingConfig is no longer served"
}

case $mode in
status)
	state
	;;
apply)
	current=$(state)
	if [ "$current" = present ]; then
		say "$crd: spec.groupSchedulingConfig is already in the schema of $version; nothing to do"
		exit 0
	fi
	say "$crd: $([ "$current" = absent ] && echo adding || echo updating) spec.groupSchedulingConfig in version $version (index $index)"
	k patch crd "$crd" --type json --patch "$patch" >&2
	[ "$(state)" = present ] || die "the patch was applied but the schema does not read back as expected"
	wait_served
	;;
remove)
	if [ -z "$(in_schema)" ]; then
		say "$crd: spec.groupSchedulingConfig is not in the schema; nothing to do"
		exit 0
	fi
	# JobSets being deleted, or in a namespace being deleted, do not count:
	# they are going away whatever happens to the schema. The namespaces are
	# listed after the JobSets, and only Active ones count: a namespace that
	# finished terminating in between is no longer listed at all.
	listed=$(k get jobsets.jobset.x-k8s.io --all-namespaces -o 'jsonpath={range .items[?(@.spec.groupSchedulingConfig)]}{.metadata.namespace}/{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}') ||
		die "cannot list JobSets"
	active=$(k get namespaces -o 'jsonpath={range .items[?(@.status.phase=="Active")]}{.metadata.name}{"\n"}{end}') ||
		die "cannot list namespaces"
	users=$(printf '%s\n' "$listed" | while read -r key deleting; do
		if [ -z "$key" ] || [ -n "$deleting" ]; then continue; fi
		printf '%s\n' "$active" | grep -qxF -- "${key%%/*}" || continue
		printf '%s\n' "$key"
	done)
	if [ -n "$users" ]; then
		count=$(printf '%s\n' "$users" | wc -l)
		if [ "$force" -eq 0 ]; then
			say "refusing: $count JobSet(s) still use spec.groupSchedulingConfig; without the schema the field"
			say "is pruned and their barriers are never released. Delete them first, or pass --force. First ones:"
			printf '%s\n' "$users" | head -n 10 | sed 's/^/  /' >&2
			exit 1
		fi
		say "--force: removing although $count JobSet(s) use the field"
	fi
	say "$crd: removing spec.groupSchedulingConfig from version $version (index $index)"
	k patch crd "$crd" --type json --patch \
		"[{\"op\":\"test\",\"path\":\"/spec/versions/$index/name\",\"value\":\"$version\"},
		  {\"op\":\"remove\",\"path\":\"/spec/versions/$index/schema/openAPIV3Schema/properties/spec/properties/groupSchedulingConfig\"}]" >&2
	wait_gone
	;;
esac
