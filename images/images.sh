#!/usr/bin/env bash
#
# images.sh - writes muster's container images, without a daemon, as OCI
# archives in OUT_DIR (default build/images), reproducibly (images/oci_image.py).
# muster's three are image indexes of a linux/amd64 and a linux/arm64 image
# (bin/ and bin/arm64/, `make images` builds both):
#
#   muster-barrier.tar     the static barrier alone, user 65532
#   muster-webhook.tar     bin/muster-webhook as /usr/local/bin/muster, the
#   muster-controller.tar  shared libraries its loader lists for it (`ldd`;
#                          for arm64 the arm64 loader under qemu-user; nothing
#                          else), the CA bundle, a passwd/group entry for
#                          65532; no shell. The same contents as
#                          ./Dockerfile's images (amd64).
#   pause.tar              images/pause.c, static (musl): the real nodes'
#                          sandbox image (no registry is reachable from CI)
#   busybox.tar            Debian's busybox-static and its applets: the test
#                          pods' image
#   (these two are the local amd64 nodes' only: one amd64 image each)
#
# Usage: images/images.sh [OUT_DIR]   (after `make`; `make images` runs it)
#        images/images.sh --rootfs PROGRAM DIR
#            writes the files of muster-webhook's or muster-controller's image
#            into DIR instead (the Dockerfile's build stage: a daemon then
#            builds an image of the same files, FROM scratch)
# Environment: MUSTER_IMAGE_REPO (default ghcr.io/muster-dev),
# MUSTER_IMAGE_TAG (default the Makefile's VERSION), LOCAL_REPO for the two
# test images (default muster.local).
# ARM64_EMULATOR (default qemu-aarch64-static) runs the arm64 loader.
# Prints one line per image: its archive, reference and digest (the index's
# for muster's three, the manifest's for pause and busybox), and writes the
# same lines to OUT_DIR/images.txt.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(dirname -- "$HERE")
OUT=${1:-$ROOT/build/images} # (not read with --rootfs)
REPO=${MUSTER_IMAGE_REPO:-ghcr.io/muster-dev}
TAG=${MUSTER_IMAGE_TAG:-dev}
LOCAL=${LOCAL_REPO:-muster.local}
WRITER=(python3 "$HERE/oci_image.py")
EMULATOR=${ARM64_EMULATOR:-qemu-aarch64-static}
ARM64_LOADER=/lib/ld-linux-aarch64.so.1
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

# shared_libraries BINARY [LIST...]: prints SRC:DST pairs for every library
# the command LIST (default ldd) lists for BINARY (and the ELF interpreter),
# each copied to the path the loader looks at.
shared_libraries() {
	local binary=$1 listed
	shift
	(($#)) || set -- ldd
	listed=$("$@" "$binary") || die "$* $binary failed"
	awk '
		$2 == "=>" && $3 ~ /^\// { print $3 }
		$1 ~ /^\// { print $1 }
	' <<<"$listed" | sort -u | while read -r lib; do
		[[ -f $lib ]] || die "the loader names $lib for $binary, which is not there"
		printf -- '--file\n%s:%s:0755\n' "$(realpath -- "$lib")" "$lib"
	done
}

# common_args: oci_image.py's arguments shared by the webhook's and the
# controller's image on every platform.
common_args() {
	local passwd="root:x:0:0:root:/root:/sbin/nologin\\nnonroot:x:$NONROOT:$NONROOT:nonroot:/nonexistent:/sbin/nologin\\n"
	local group="root:x:0:\\nnonroot:x:$NONROOT:\\n"
	local ca=/etc/ssl/certs/ca-certificates.crt
	[[ -f $ca ]] || die "$ca is missing (Debian's ca-certificates)"
	printf '%s\n' --file "$ca:$ca:0644" --text "/etc/passwd:0644:$passwd" --text "/etc/group:0644:$group" \
		--dir /tmp:1777 --user "$NONROOT:$NONROOT" --entrypoint /usr/local/bin/muster
}

# program_args PROGRAM [arm64]: the program and its libraries, amd64's from
# bin/ (ldd), or arm64's from bin/arm64/ (its loader under qemu-user).
program_args() {
	local program=$1
	if [[ ${2:-} == arm64 ]]; then
		printf '%s\n' --file "$ROOT/bin/arm64/$program:/usr/local/bin/muster:0755"
		shared_libraries "$ROOT/bin/arm64/$program" "$EMULATOR" "$ARM64_LOADER" --list
	else
		printf '%s\n' --file "$ROOT/bin/$program:/usr/local/bin/muster:0755"
		shared_libraries "$ROOT/bin/$program"
	fi
}

if [[ ${1:-} == --rootfs ]]; then
	(($# == 3)) || die "usage: images.sh --rootfs PROGRAM DIR"
	[[ $2 == muster-webhook || $2 == muster-controller ]] || die "--rootfs: PROGRAM is muster-webhook or muster-controller"
	[[ -x $ROOT/bin/$2 ]] || die "bin/$2 is missing: run make first"
	listed=$(common_args && program_args "$2")
	mapfile -t args <<<"$listed"
	"${WRITER[@]}" --name "$REPO/$2:$TAG" --rootfs-dir "$3" "${args[@]}"
	exit 0
fi

for b in muster-barrier muster-webhook muster-controller; do
	[[ -x $ROOT/bin/$b ]] || die "bin/$b is missing: run make first"
	[[ -x $ROOT/bin/arm64/$b ]] || die "bin/arm64/$b is missing: run make arm64 first"
done
command -v musl-gcc >/dev/null || die "musl-gcc is missing (Debian's musl-tools)"
command -v "$EMULATOR" >/dev/null || die "$EMULATOR is missing (Debian's qemu-user-static)"
[[ -f $ARM64_LOADER ]] || die "$ARM64_LOADER is missing (Debian's libc6:arm64)"
[[ -x /bin/busybox ]] || die "/bin/busybox is missing (Debian's busybox-static)"
mkdir -p -- "$OUT"
: >"$OUT/images.txt.tmp"

# The barrier: a static binary, nothing else.
file "$ROOT/bin/muster-barrier" | grep -q 'x86-64.*statically linked' || die "bin/muster-barrier is not static x86-64"
file "$ROOT/bin/arm64/muster-barrier" | grep -q 'aarch64.*statically linked' ||
	die "bin/arm64/muster-barrier is not static aarch64"
image muster-barrier "$REPO/muster-barrier:$TAG" --user "$NONROOT:$NONROOT" --entrypoint /muster-barrier \
	--platform linux/amd64 --file "$ROOT/bin/muster-barrier:/muster-barrier:0755" \
	--platform linux/arm64 --file "$ROOT/bin/arm64/muster-barrier:/muster-barrier:0755"

# The webhook and the controller.
for program in muster-webhook muster-controller; do
	# (a command substitution, so that a failure in it ends the script)
	listed=$(common_args && echo --platform && echo linux/amd64 && program_args "$program" &&
		echo --platform && echo linux/arm64 && program_args "$program" arm64)
	mapfile -t args <<<"$listed"
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
