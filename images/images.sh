#!/usr/bin/env bash
#
# images.sh - writes muster's container images, without a daemon, as OCI
# archives in OUT_DIR (default build/images), reproducibly (images/oci_image.py):
#
#   muster-barrier.tar     the static barrier alone, user 65532
#   muster-webhook.tar     bin/muster-webhook as /usr/local/bin/muster, the
#   muster-controller.tar  shared libraries `ldd` lists for it (nothing else),
#                          the CA bundle, a passwd/group entry for 65532; no
#                          shell. The same contents as ./Dockerfile's images.
#   pause.tar              images/pause.c, static (musl): the real nodes'
#                          sandbox image (no registry is reachable from CI)
#   busybox.tar            Debian's busybox-static and its applets: the test
#                          pods' image
#
# Usage: images/images.sh [OUT_DIR]   (after `make`; `make images` runs it)
#        images/images.sh --rootfs PROGRAM DIR
#            writes the files of muster-webhook's or muster-controller's image
#            into DIR instead (the Dockerfile's build stage: a daemon then
#            builds an image of the same files, FROM scratch)
# Environment: MUSTER_IMAGE_REPO (default ghcr.io/muster-dev),
# MUSTER_IMAGE_TAG (default the Makefile's VERSION), LOCAL_REPO for the two
# test images (default muster.local).
# Prints one line per image: its archive, reference and manifest digest, and
# writes the same lines to OUT_DIR/images.txt.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(dirname -- "$HERE")
OUT=${1:-$ROOT/build/images} # (not read with --rootfs)
REPO=${MUSTER_IMAGE_REPO:-ghcr.io/muster-dev}
TAG=${MUSTER_IMAGE_TAG:-dev}
LOCAL=${LOCAL_REPO:-muster.local}
WRITER=(python3 "$HERE/oci_image.py")
NONROOT=65532

die() {
	printf 'images.sh: %s\n' "$*" >&2
	exit 1
}


record() { # ARCHIVE REF DIGEST
	printf '%s %s %s\n' "$1" "$2" "$3" | tee -a "$OUT/images.txt.tmp"
}

# image NAME REF ARGS...: writes OUT/NAME.tar.
image() {
	local name=$1 ref=$2 digest
	shift 2
	digest=$("${WRITER[@]}" --out "$OUT/$name.tar" --name "$ref" "$@")
	record "$OUT/$name.tar" "$ref" "$digest"
}

# shared_libraries BINARY: prints SRC:DST pairs for every library ldd lists
# (and the ELF interpreter), each copied to the path the loader looks at.
shared_libraries() {
	ldd "$1" | awk '
		$2 == "=>" && $3 ~ /^\// { print $3 }
		$1 ~ /^\// { print $1 }
	' | sort -u | while read -r lib; do
		[[ -f $lib ]] || die "ldd names $lib for $1, which is not there"
		printf -- '--file\n%s:%s:0755\n' "$(realpath -- "$lib")" "$lib"
	done
}

# program_args PROGRAM: oci_image.py's arguments for the webhook's or the
# controller's image.
program_args() {
	local program=$1
	local passwd="root:x:0:0:root:/root:/sbin/nologin\\nnonroot:x:$NONROOT:$NONROOT:nonroot:/nonexistent:/sbin/nologin\\n"
	local group="root:x:0:\\nnonroot:x:$NONROOT:\\n"
	local ca=/etc/ssl/certs/ca-certificates.crt
	[[ -f $ca ]] || die "$ca is missing (Debian's ca-certificates)"
	printf '%s\n' --file "$ROOT/bin/$program:/usr/local/bin/muster:0755"
	shared_libraries "$ROOT/bin/$program"
	printf '%s\n' --file "$ca:$ca:0644" --text "/etc/passwd:0644:$passwd" --text "/etc/group:0644:$group" \
		--dir /tmp:1777 --user "$NONROOT:$NONROOT" --entrypoint /usr/local/bin/muster
}

if [[ ${1:-} == --rootfs ]]; then
	(($# == 3)) || die "usage: images.sh --rootfs PROGRAM DIR"
	[[ $2 == muster-webhook || $2 == muster-controller ]] || die "--rootfs: PROGRAM is muster-webhook or muster-controller"
	[[ -x $ROOT/bin/$2 ]] || die "bin/$2 is missing: run make first"
	mapfile -t args < <(program_args "$2")
	"${WRITER[@]}" --name "$REPO/$2:$TAG" --rootfs-dir "$3" "${args[@]}"
	exit 0
fi

for b in muster-barrier muster-webhook muster-controller; do
	[[ -x $ROOT/bin/$b ]] || die "bin/$b is missing: run make first"
done
command -v musl-gcc >/dev/null || die "musl-gcc is missing (Debian's musl-tools)"
[[ -x /bin/busybox ]] || die "/bin/busybox is missing (Debian's busybox-static)"
mkdir -p -- "$OUT"
: >"$OUT/images.txt.tmp"

# The barrier: a static binary, nothing else.
file "$ROOT/bin/muster-barrier" | grep -q 'statically linked' || die "bin/muster-barrier is not static"
image muster-barrier "$REPO/muster-barrier:$TAG" \
	--file "$ROOT/bin/muster-barrier:/muster-barrier:0755" \
	--user "$NONROOT:$NONROOT" --entrypoint /muster-barrier

# The webhook and the controller.
for program in muster-webhook muster-controller; do
	mapfile -t args < <(program_args "$program")
	image "$program" "$REPO/$program:$TAG" "${args[@]}"
done

# pause, static with musl (13 KB).
musl-gcc -static -Os -s -std=c11 -Wall -Wextra -Werror \
	-o "$OUT/pause" "$HERE/pause.c"
image pause "$LOCAL/pause:1" --file "$OUT/pause:/pause:0755" --user "$NONROOT:$NONROOT" --entrypoint /pause

# busybox: the binary and a link per applet (busybox --list), in /bin.
mapfile -t applets < <(/bin/busybox --list | sort | grep -vx busybox)
links=()
for a in "${applets[@]}"; do
	links+=(--symlink "/bin/$a:busybox")
done
image busybox "$LOCAL/busybox:1" --file /bin/busybox:/bin/busybox:0755 "${links[@]}" \
	--env PATH=/bin --cmd sh

mv -- "$OUT/images.txt.tmp" "$OUT/images.txt"
