#!/usr/bin/env bash
#
# deps.sh - installs, from Debian's own repositories, everything the local
# Kubernetes control plane and the end-to-end tests need: Go (to build the
# control plane), etcd, rsync and make (the Kubernetes Makefile), openssl (the
# certificates), dpkg-dev (apt-get source), curl, and the Python packages the
# tests import through /usr/bin/python3, and for the real nodes (node.sh) and
# the images they run (images/images.sh): containerd, runc, the CNI plugins,
# iproute2, busybox-static, musl-tools and file. It also adds the bookworm deb-src
# entry without which `apt-get source kubernetes` cannot work.
#
# Idempotent and non-interactive. When everything is already there it neither
# runs `apt-get update` nor installs anything, and returns in well under a
# second. It does not install kubectl (the machine's own is used) but says so
# clearly when there is none, and then falls back to Debian's kubernetes-client
# (kubectl 1.20.2), which works against this control plane.

set -euo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=common.sh
# shellcheck source=common.sh
. "$HERE/common.sh"

export DEBIAN_FRONTEND=noninteractive

PACKAGES=(golang-go etcd-server rsync make openssl dpkg-dev
	python3-yaml python3-kubernetes python3-pytest curl
	containerd runc containernetworking-plugins iproute2 busybox-static musl-tools file)
DEB_SRC_FILE=/etc/apt/sources.list.d/muster-deb-src.sources
DEBIAN_SOURCES=/etc/apt/sources.list.d/debian.sources
SUITE=bookworm

SUDO=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || die "not root and no sudo: cannot install packages"
	SUDO=(sudo -n)
fi

# missing_packages: prints the packages of PACKAGES that are not installed.
missing_packages() {
	local installed
	installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>/dev/null |
		awk '$1 == "ii" { print $2 }') || true
	local p
	for p in "${PACKAGES[@]}"; do
		grep -qxF -- "$p" <<<"$installed" || printf '%s\n' "$p"
	done
}

# deb822_stanzas FILE...: prints one line per stanza, fields joined by '|', so
# that awk and grep can look at whole entries of *.sources files.
deb822_stanzas() {
	awk '
		/^[[:space:]]*#/ { next }
		/^[[:space:]]*$/ { if (s != "") print s; s = ""; next }
		{ s = s "|" $0 }
		END { if (s != "") print s }
	' "$@" 2>/dev/null
}

# has_deb_src: true when some apt source already offers bookworm's source packages.
has_deb_src() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r $f ]] || continue
		grep -Eq "^[[:space:]]*deb-src([[:space:]]+\[[^]]*\])?[[:space:]]+[^[:space:]]+[[:space:]]+$SUITE([[:space:]]|$)" "$f" && return 0
	done
	local -a sources=()
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r $f ]] && sources+=("$f")
	done
	((${#sources[@]})) || return 1
	deb822_stanzas "${sources[@]}" |
		grep -Ei '\|Types:[^|]*deb-src' |
		grep -Ei "\|Suites:([^|]*[[:space:]])?$SUITE([[:space:]]|\||$)" |
		grep -Eqvi '\|Enabled:[[:space:]]*no'
}

# has_source_index: true when `apt-get update` has already fetched a Sources index.
has_source_index() {
	compgen -G "/var/lib/apt/lists/*_dists_${SUITE}_main_source_Sources*" >/dev/null
}

# add_deb_src: writes a deb-src entry with the mirror of the existing bookworm deb entry.
add_deb_src() {
	local uris='' signed_by=''
	if [[ -r $DEBIAN_SOURCES ]]; then
		local stanza
		stanza=$(deb822_stanzas "$DEBIAN_SOURCES" |
			grep -Ei '\|Types:([^|]*[[:space:]])?deb([[:space:]]|\||$)' |
			grep -Ei "\|Suites:([^|]*[[:space:]])?$SUITE([[:space:]]|\||$)" | head -n 1) || true
		uris=$(tr '|' '\n' <<<"$stanza" | sed -n 's/^URIs:[[:space:]]*//Ip' | head -n 1)
		signed_by=$(tr '|' '\n' <<<"$stanza" | sed -n 's/^Signed-By:[[:space:]]*//Ip' | head -n 1)
	fi
	if [[ -z $uris && -r /etc/apt/sources.list ]]; then
		uris=$(awk -v suite="$SUITE" '$1 == "deb" {
			i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) == suite) { print $i; exit } }' /etc/apt/sources.list)
	fi
	[[ -n $uris ]] || die "found no '$SUITE' deb entry in $DEBIAN_SOURCES or /etc/apt/sources.list to copy the mirror from"
	signed_by=${signed_by:-/usr/share/keyrings/debian-archive-keyring.gpg}
	log "adding $DEB_SRC_FILE (deb-src $uris $SUITE main)"
	printf '%s\n' \
		"# Added by muster's e2e/cluster/deps.sh: the kubernetes source package" \
		"# (built into the local test control plane) comes from here." \
		"Types: deb-src" \
		"URIs: $uris" \
		"Suites: $SUITE" \
		"Components: main" \
		"Signed-By: $signed_by" |
		"${SUDO[@]}" tee "$DEB_SRC_FILE" >/dev/null
}

main() {
	local -a missing
	mapfile -t missing < <(missing_packages)
	local need_update=0
	if ! has_deb_src; then
		add_deb_src
		need_update=1
	elif ! has_source_index; then
		need_update=1
	fi
	((${#missing[@]} == 0)) || need_update=1

	if ! command -v kubectl >/dev/null; then
		log "kubectl is MISSING from PATH (expected /usr/bin/kubectl on this machine);"
		log "falling back to Debian's kubernetes-client package (kubectl 1.20.2)"
		missing+=(kubernetes-client)
		need_update=1
	fi

	if ((need_update == 0)); then
		log "all packages and the $SUITE deb-src entry are present"
		return 0
	fi
	log "apt-get update"
	"${SUDO[@]}" apt-get update -q >&2
	if ((${#missing[@]})); then
		log "installing: ${missing[*]}"
		"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
	fi
	mapfile -t missing < <(missing_packages)
	((${#missing[@]} == 0)) || die "still missing after install: ${missing[*]}"
	command -v kubectl >/dev/null || die "kubectl is still missing"
	has_source_index || die "apt has no $SUITE Sources index after apt-get update"
	log "dependencies ready"
}

main "$@"
