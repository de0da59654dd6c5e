#!/usr/bin/env bash
# Writes a kustomize overlay that installs muster with its images pinned by
# digest: the webhook's and the controller's containers and the webhook's
# --barrier-image, as REGISTRY/muster-<name>@sha256:..., the digests read
# from `make images`' build/images/images.txt: each image index's (amd64 and
# arm64), so every node runs the image of its architecture.
#
#   deploy/pin-images.sh --registry REGISTRY --out DIR
#           [--images build/images/images.txt] [--base deploy/base]
#
#   --registry REGISTRY  where the images are pushed, e.g. registry.example.com/muster
#   --out DIR            the overlay's folder (made; its kustomization.yaml written)
#   --images FILE        `make images`' list: archive, reference, digest per line
#   --base DIR           the install to pin: deploy/base (default),
#                        deploy/kubernetes-1.20 or deploy/namespaced
#
# Push the archives so that their digests stay what images.txt says: an OCI
# archive copied with --preserve-digests is stored as it is, or skopeo fails
# rather than convert it; --all copies the index and both platforms' images
# (without it skopeo copies only this machine's):
#
#   for i in barrier webhook controller; do
#     skopeo copy --all --preserve-digests oci-archive:build/images/muster-$i.tar docker://REGISTRY/muster-$i:TAG
#   done
#   deploy/pin-images.sh --registry REGISTRY --out release/
#   kubectl apply -k release/
#
# The overlay's patch checks that the webhook's arguments 6 and 7 are still
# `--barrier-image IMAGE` before it replaces the image. Exit codes: 0
# written, 1 failure (nothing written), 2 bad usage.
set -euo pipefail

registry=
out=
images=build/images/images.txt
base=deploy/base

usage() {
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

die() {
	printf 'pin-images.sh: %s\n' "$*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--registry) [ $# -ge 2 ] || usage; registry=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
	--images) [ $# -ge 2 ] || usage; images=$2; shift 2 ;;
	--base) [ $# -ge 2 ] || usage; base=$2; shift 2 ;;
	-h | --help) usage ;;
	*) printf 'pin-images.sh: unknown argument %s\n' "$1" >&2; usage ;;
	esac
done
if [ -z "$registry" ] || [ -z "$out" ]; then usage; fi
case $registry in
*[!A-Za-z0-9._:/-]* | /* | */) die "--registry $registry: a registry and path such as registry.example.com/muster, no trailing /" ;;
esac
[ -f "$images" ] || die "$images: no such file (run make images first)"
[ -f "$base/kustomization.yaml" ] || die "--base $base: no kustomization.yaml there"

# The digest of muster-NAME from images.txt ("ARCHIVE REFERENCE DIGEST").
digest_of() {
	local found
	found=$(awk -v name="muster-$1" '{ n = $2; sub(/:[^:\/]*$/, "", n); sub(/.*\//, "", n); if (n == name) print $3 }' "$images")
	[ -n "$found" ] || die "$images has no muster-$1 image"
	[ "$(printf '%s\n' "$found" | wc -l)" -eq 1 ] || die "$images lists muster-$1 more than once"
	[[ $found =~ ^sha256:[0-9a-f]{64}$ ]] || die "$images: muster-$1's digest $found is not sha256:<64 hex digits>"
	printf '%s' "$found"
}

webhook=$(digest_of webhook)
controller=$(digest_of controller)
barrier=$(digest_of barrier)

mkdir -p -- "$out"
resources=$(realpath --relative-to="$out" -- "$base")
tmp=$(mktemp "$out/.kustomization.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
cat >"$tmp" <<EOF
# Written by deploy/pin-images.sh from $images: muster by digest.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $resources
images:
  - name: ghcr.io/muster-dev/muster-webhook
    newName: $registry/muster-webhook
    digest: $webhook
  - name: ghcr.io/muster-dev/muster-controller
    newName: $registry/muster-controller
    digest: $controller
patches:
  - target:
      kind: Deployment
      name: muster-webhook
    patch: |-
      - op: test
        path: /spec/template/spec/containers/0/args/6
        value: --barrier-image
      - op: replace
        path: /spec/template/spec/containers/0/args/7
        value: $registry/muster-barrier@$barrier
EOF
mv -- "$tmp" "$out/kustomization.yaml"
trap - EXIT
printf '%s\n' "$out/kustomization.yaml"
