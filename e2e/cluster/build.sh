#!/usr/bin/env bash
#
# build.sh - builds kube-apiserver, kube-scheduler, kube-controller-manager
# and kubelet v1.20.2 from Debian's `kubernetes` source package, and caches
# the four binaries in $MUSTER_CACHE/k8s-1.20.2/bin (MUSTER_CACHE defaults to
# ~/.cache/muster). When the cached binaries are there it does nothing.
#
# Steps (docs/local-cluster.md in ../shared is the verified recipe):
#   1. apt-get source --download-only kubernetes, and unpack the upstream
#      tarball (the full tree with vendor/; Debian's patches are not applied);
#   2. replace the vendored modern-go/reflect2 1.0.1 with Debian's 1.0.2,
#      because 1.0.1 built with Debian's Go 1.19 crashes the apiserver
#      (`fatal error: fault` in mapiterinit) at the first CRD write;
#   3. kubelet only warns about the host's sysctls instead of rewriting them
#      (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops): the real
#      nodes of node.sh share the machine, whose settings are not ours to
#      change; one line of pkg/kubelet/cm/container_manager_linux.go
#      (KernelTunableModify -> KernelTunableWarn, ../shared/docs/real-nodes.md);
#   4. make WHAT="cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager cmd/kubelet".
# The source tree lives in a scratch dir under the cache and is removed after a
# successful build; the Go build cache (GOCACHE) stays, so a rebuild is quicker.
# Measured on 2 cores: 6 minutes with a cold Go cache, 1.5 minutes with the
# Go cache kept (binaries deleted), for the control plane; kubelet adds about
# 3-4 minutes cold; peak memory about 1.4 GB.
# Needs the packages deps.sh installs.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

SCRATCH=$K8S_DIR/scratch
BUILD_LOG=$K8S_DIR/build.log
GO_BUILD_CACHE=$MUSTER_CACHE/go-build
START_SECONDS=$SECONDS

step() {
	log "[$((SECONDS - START_SECONDS)) s] $*"
}

have_binaries() {
	local b
	for b in "${K8S_BINARIES[@]}"; do
		[[ -x $K8S_BIN_DIR/$b ]] || return 1
	done
}

main() {
	if have_binaries; then
		log "reusing cached Kubernetes $K8S_VERSION binaries in $K8S_BIN_DIR"
		return 0
	fi
	take_lock "$K8S_DIR.lock" 1800
	# Another run may have finished the build while we waited for the lock.
	if have_binaries; then
		log "reusing cached Kubernetes $K8S_VERSION binaries in $K8S_BIN_DIR"
		return 0
	fi
	command -v go >/dev/null || die "go is missing: run deps.sh first"

	step "building Kubernetes $K8S_VERSION control plane into $K8S_BIN_DIR (log: $BUILD_LOG)"
	rm -rf -- "$SCRATCH"
	mkdir -p -- "$SCRATCH/download" "$SCRATCH/src" "$SCRATCH/reflect2" "$GO_BUILD_CACHE"
	# As root, apt would try to download as its _apt user, who cannot enter
	# ~root, and warn; the files are still checked against the signed index.
	local -a apt=(apt-get -q)
	((EUID != 0)) || apt+=(-o APT::Sandbox::User=root)

	step "downloading the kubernetes source package"
	(cd -- "$SCRATCH/download" && "${apt[@]}" source --download-only kubernetes >&2) ||
		die "apt-get source kubernetes failed (is the bookworm deb-src entry there? run deps.sh)"
	local -a orig=("$SCRATCH"/download/kubernetes_*.orig.tar.gz)
	[[ -f ${orig[0]} ]] || die "no kubernetes_*.orig.tar.gz in the downloaded source package"
	[[ ${orig[0]##*/} == *"$K8S_VERSION"* ]] ||
		die "source package is ${orig[0]##*/}, not Kubernetes $K8S_VERSION as this script expects"

	step "unpacking ${orig[0]##*/}"
	tar -xzf "${orig[0]}" -C "$SCRATCH/src"
	local tree
	tree=$(dirname -- "$(find "$SCRATCH/src" -maxdepth 3 -path '*/cmd/kube-apiserver' -type d | head -n 1)")
	tree=${tree%/cmd}
	[[ -f $tree/Makefile && -d $tree/vendor ]] || die "unexpected layout in ${orig[0]##*/}"

	step "replacing vendor/github.com/modern-go/reflect2 with Debian's 1.0.2"
	(cd -- "$SCRATCH/download" && "${apt[@]}" download golang-github-modern-go-reflect2-dev >&2)
	local -a deb=("$SCRATCH"/download/golang-github-modern-go-reflect2-dev_*.deb)
	dpkg -x "${deb[0]}" "$SCRATCH/reflect2"
	local reflect2=$SCRATCH/reflect2/usr/share/gocode/src/github.com/modern-go/reflect2
	[[ -f $reflect2/reflect2.go ]] || die "reflect2 sources not found in ${deb[0]##*/}"
	rm -rf -- "$tree/vendor/github.com/modern-go/reflect2"
	cp -r -- "$reflect2" "$tree/vendor/github.com/modern-go/"
	rm -f -- "$tree/vendor/github.com/modern-go/reflect2/go.mod"

	step "kubelet: warn about the host's sysctls, do not rewrite them"
	local cm=$tree/pkg/kubelet/cm/container_manager_linux.go
	grep -q 'b := KernelTunableModify' "$cm" || die "$cm: the line to patch (b := KernelTunableModify) is not there"
	sed -i 's/b := KernelTunableModify/b := KernelTunableWarn/' "$cm"

	step "make (about 10 minutes with a cold Go cache, 2 with a warm one)"
	# The Kubernetes build sets GOCACHE to _output/local/go/cache itself; a
	# symlink there keeps the Go build cache in our cache dir across builds.
	# Since the scratch path never changes, -trimpath keeps the entries valid.
	mkdir -p -- "$tree/_output/local/go"
	ln -sfn -- "$GO_BUILD_CACHE" "$tree/_output/local/go/cache"
	# Debian's Go first on PATH, and no network or toolchain switching:
	# everything needed is in vendor/.
	# A line a minute while make runs (it takes minutes and is quiet for long
	# stretches): elapsed time, where the log is, what it is building.
	(
		while sleep 60; do
			step "make is still running (log: $BUILD_LOG; last line: $(tail -n 1 -- "$BUILD_LOG" 2>/dev/null | cut -c1-100))"
		done
	) &
	local ticker=$! status=0
	(
		export PATH=/usr/lib/go/bin:$PATH
		export GOCACHE=$GO_BUILD_CACHE GOPROXY=off GOFLAGS="" GOTOOLCHAIN=local CGO_ENABLED=0
		unset GOPATH GOROOT GO111MODULE
		make -C "$tree" WHAT="cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager cmd/kubelet"
	) 2>&1 | tee "$BUILD_LOG" >&2 || status=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	if ((status != 0)); then
		log "make failed; last lines of $BUILD_LOG:"
		tail -n 40 -- "$BUILD_LOG" >&2
		die "build failed (scratch tree kept in $SCRATCH)"
	fi

	# Install via a temporary dir and a rename, so a half-copied set of binaries
	# never looks like a cache hit.
	rm -rf -- "$K8S_BIN_DIR.tmp"
	mkdir -p -- "$K8S_BIN_DIR.tmp"
	local b
	for b in "${K8S_BINARIES[@]}"; do
		install -m 0755 -- "$tree/_output/bin/$b" "$K8S_BIN_DIR.tmp/$b"
	done
	rm -rf -- "$K8S_BIN_DIR"
	mv -- "$K8S_BIN_DIR.tmp" "$K8S_BIN_DIR"
	rm -rf -- "$SCRATCH"
	step "done: $(cd -- "$K8S_BIN_DIR" && echo "${K8S_BINARIES[*]}")"
}

main "$@"
