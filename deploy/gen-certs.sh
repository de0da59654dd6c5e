#!/usr/bin/env bash
# Makes a private CA and the webhook's serving certificate with openssl.
#
#   deploy/gen-certs.sh --out DIR [--service NAME] [--namespace NS] [--cluster-domain D]
#                       [--dns NAME]... [--ip ADDR]... [--days N] [--ca-days N]
#                       [--key-type ec|rsa] [--force | --renew]
#
# Writes DIR/ca.crt, DIR/ca.key, DIR/tls.crt, DIR/tls.key (keys mode 0600,
# certificates 0644; DIR is created mode 0700 if missing).
#
#   ca.crt   self-signed CA (CA:TRUE, keyCertSign), --ca-days (default 3650);
#            base64 of it is the webhook configurations' caBundle
#   tls.crt  serving certificate signed by that CA, --days (default 365):
#            CA:FALSE, extendedKeyUsage serverAuth, SANs
#              DNS:NAME.NS.svc, DNS:NAME.NS.svc.CLUSTER_DOMAIN (default
#              muster-webhook.muster-system.svc[.cluster.local]) and every
#              --dns/--ip (e.g. --ip 127.0.0.1 for a webhook registered by URL)
#
# Keys: ECDSA P-256 (default) or RSA 2048 (--key-type rsa); signatures SHA-256.
#
# Existing files are never overwritten by accident:
#   (neither)  refuses if any of the four files exists in DIR (exit 1)
#   --force    makes a new CA and a new serving certificate (the caBundle changes:
#              re-render and re-apply the webhook configurations)
#   --renew    keeps the CA (ca.crt, ca.key must exist) and issues a new serving
#              key and certificate; the caBundle stays valid. Each file is
#              written beside its target and renamed over it (tls.key first,
#              then tls.crt), so a webhook reloading its files never reads a
#              half-written one.
#
# Progress goes to stderr; nothing goes to stdout; keys are never printed.
# Exit codes: 0 done, 1 failure or refusal, 2 bad usage.
set -euo pipefail

out=
service=muster-webhook
namespace=muster-system
cluster_domain=cluster.local
days=365
ca_days=3650
key_type=ec
mode=new
dns=()
ips=()

usage() {
	sed -n '4,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
# --help: the comment at the top of this file.
help() {
	sed -n '2,/^set -euo pipefail$/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 0
}
say() { echo "gen-certs: $*" >&2; }
die() {
	say "$*"
	exit 1
}
need_value() { [ "$2" -ge 2 ] || { say "$1 needs a value"; usage; }; }

while [ $# -gt 0 ]; do
	case $1 in
	--out | --service | --namespace | --cluster-domain | --dns | --ip | --days | --ca-days | --key-type)
		need_value "$1" $#
		case $1 in
		--out) out=$2 ;;
		--service) service=$2 ;;
		--namespace) namespace=$2 ;;
		--cluster-domain) cluster_domain=$2 ;;
		--dns) dns+=("$2") ;;
		--ip) ips+=("$2") ;;
		--days) days=$2 ;;
		--ca-days) ca_days=$2 ;;
		--key-type) key_type=$2 ;;
		esac
		shift 2
		;;
	--force) [ "$mode" = new ] || usage; mode=force; shift ;;
	--renew) [ "$mode" = new ] || usage; mode=renew; shift ;;
	-h | --help) help ;;
	*) say "unknown argument: $1"; usage ;;
	esac
done

[ -n "$out" ] || { say "--out DIR is required"; usage; }
dns_label='[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'
[[ $service =~ ^${dns_label}$ ]] || die "--service '$service' is not a DNS label"
[[ $namespace =~ ^${dns_label}$ ]] || die "--namespace '$namespace' is not a DNS label"
[[ $cluster_domain =~ ^${dns_label}(\.${dns_label})*$ ]] || die "--cluster-domain '$cluster_domain' is not a DNS name"
for name in ${dns[@]+"${dns[@]}"}; do
	# A leading "*." is allowed: a wildcard name.
	if ! [[ $name =~ ^(\*\.)?${dns_label}(\.${dns_label})*$ ]] || [ ${#name} -gt 253 ]; then
		die "--dns '$name' is not a DNS name (lower case)"
	fi
done
for addr in ${ips[@]+"${ips[@]}"}; do
	[[ $addr =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ || $addr =~ ^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*$ ]] ||
		die "--ip '$addr' is not an IPv4 or IPv6 address"
done
[[ $days =~ ^[1-9][0-9]{0,4}$ ]] || die "--days '$days' is not a number of days (1..99999)"
[[ $ca_days =~ ^[1-9][0-9]{0,4}$ ]] || die "--ca-days '$ca_days' is not a number of days (1..99999)"
case $key_type in ec | rsa) ;; *) die "--key-type is ec or rsa, not '$key_type'" ;; esac
command -v openssl >/dev/null || die "openssl is not on PATH"

files=(ca.crt ca.key tls.crt tls.key)
case $mode in
new)
	for f in "${files[@]}"; do
		[ ! -e "$out/$f" ] || die "$out/$f exists; pass --renew to re-issue the serving certificate with the same CA, or --force to start over"
	done
	;;
renew)
	if [ ! -f "$out/ca.crt" ] || [ ! -f "$out/ca.key" ]; then
		die "--renew needs $out/ca.crt and $out/ca.key"
	fi
	;;
esac

umask 077
mkdir -p "$out"
work=$(mktemp -d "$out/.gen-certs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# openssl's chatter is kept in a file and shown only when it fails; it never
# contains key material (no command below is asked to print a key).
run() {
	if ! "$@" >"$work/openssl.log" 2>&1; then
		cat "$work/openssl.log" >&2
		die "failed: $*"
	fi
}

genkey() {
	if [ "$key_type" = ec ]; then
		run openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -pkeyopt ec_param_enc:named_curve -out "$1"
	else
		run openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1"
	fi
}

# A random positive 128-bit serial (RFC 5280: at most 20 octets, positive).
serial() { echo "0x1$(openssl rand -hex 15)"; }

svc_fqdn="$service.$namespace.svc"
sans="DNS:$svc_fqdn,DNS:$svc_fqdn.$cluster_domain"
for name in ${dns[@]+"${dns[@]}"}; do sans+=",DNS:$name"; done
for addr in ${ips[@]+"${ips[@]}"}; do sans+=",IP:$addr"; done

key_usage=digitalSignature
[ "$key_type" = rsa ] && key_usage+=",keyEncipherment"

cat >"$work/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical,CA:TRUE,pathlen:0
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,$key_usage
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
subjectAltName = $sans
EOF

if [ "$mode" != renew ]; then
	say "making a CA ($key_type key, $ca_days days) in $out"
	genkey "$work/ca.key"
	run openssl req -x509 -new -config "$work/openssl.cnf" -extensions ca_ext -sha256 \
		-key "$work/ca.key" -subj "/CN=muster-webhook-ca" -set_serial "$(serial)" -days "$ca_days" \
		-out "$work/ca.crt"
	ca_dir=$work
else
	say "renewing the serving certificate with the CA in $out"
	ca_dir=$out
fi

say "issuing the serving certificate ($sans; $days days)"
genkey "$work/tls.key"
run openssl req -new -config "$work/openssl.cnf" -sha256 -key "$work/tls.key" -subj "/CN=$svc_fqdn" \
	-out "$work/tls.csr"
run openssl x509 -req -in "$work/tls.csr" -CA "$ca_dir/ca.crt" -CAkey "$ca_dir/ca.key" \
	-set_serial "$(serial)" -days "$days" -sha256 -extfile "$work/openssl.cnf" -extensions leaf_ext \
	-out "$work/tls.crt"
run openssl verify -CAfile "$ca_dir/ca.crt" -purpose sslserver "$work/tls.crt"

chmod 0600 "$work/tls.key"
chmod 0644 "$work/tls.crt"
if [ "$mode" != renew ]; then
	chmod 0600 "$work/ca.key"
	chmod 0644 "$work/ca.crt"
	mv -f "$work/ca.key" "$out/ca.key"
	mv -f "$work/ca.crt" "$out/ca.crt"
fi
mv -f "$work/tls.key" "$out/tls.key"
mv -f "$work/tls.crt" "$out/tls.crt"

if [ "$mode" = renew ]; then
	say "wrote $out/tls.key, $out/tls.crt (same CA: the caBundle stays valid)"
else
	say "wrote $out/ca.crt, $out/ca.key, $out/tls.crt, $out/tls.key"
fi
say "the serving certificate is valid until $(openssl x509 -in "$out/tls.crt" -noout -enddate | cut -d= -f2)"
say "next: kubectl -n $namespace create secret tls $service-tls --cert=$out/tls.crt --key=$out/tls.key \\"
say "        --dry-run=client -o yaml | kubectl apply -f -"
if [ "$mode" != renew ]; then
	say "      deploy/render-webhooks.sh --ca-file $out/ca.crt | kubectl apply -f -"
fi
