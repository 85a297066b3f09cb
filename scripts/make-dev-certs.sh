#!/usr/bin/env bash
# Makes a development PKI for dpdist with openssl: a CA and one server certificate valid for
# 127.0.0.1, ::1 and localhost (subjectAltName), signed by it.
#   scripts/make-dev-certs.sh [DIR]   (default: ./dev-certs)
# Writes DIR/ca.pem (pass as --ca), DIR/server.pem (--cert) and DIR/server.key (--key; the TLS
# key, PEM — not the node's HPKE key, which `dpdist node` keeps as hpke-x25519.key in --data-dir).
# For development only: the CA key (DIR/ca.key) stays beside the certificates.
set -euo pipefail
dir="${1:-dev-certs}"
command -v openssl >/dev/null || { echo "make-dev-certs: openssl is not installed" >&2; exit 1; }
mkdir -p "$dir"
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
  -subj "/CN=dpdist dev CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
cat > "$dir/server.ext" <<'EXT'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
EXT
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
  -CAcreateserial -days 365 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
rm -f "$dir/server.csr" "$dir/server.ext" "$dir/ca.srl"
# rustls reads PKCS#8 keys; openssl 3 writes them by default.
openssl verify -CAfile "$dir/ca.pem" "$dir/server.pem" >/dev/null
echo "wrote $dir/ca.pem (--ca), $dir/server.pem (--cert), $dir/server.key (--key)"
