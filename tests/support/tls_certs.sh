#!/bin/sh
# SPDX-License-Identifier: MIT
# tls_certs.sh DIR: the certificates the TLS tests use, made fresh with the
# openssl command (nothing secret is committed). EC P-256 keys, all in DIR:
#   ca.pem             the test CA (ca.key)
#   server.pem/.key    localhost and 127.0.0.1, signed by the CA
#   expired.pem        the same names and key, expired a day ago
#   client.pem/.key    a client certificate signed by the CA
#   other-ca.pem       another CA (other-ca.key)
#   other-client.pem/.key    a client certificate signed by the other CA
#   other-server.pem/.key    localhost and 127.0.0.1, signed by the other CA
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {   # ca NAME CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 30 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
sign() { # sign NAME CA DAYS EXTENSIONS [KEY]
  k=${5:-$1.key}
  [ -f "$k" ] || key "$k"
  openssl req -new -key "$k" -out "$1.csr" -subj "/CN=$1"
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days "$3" \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
srv='subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth'
cli='extendedKeyUsage=clientAuth'
ca ca "ampd test CA"
ca other-ca "another CA"
sign server ca 30 "$srv"
sign expired ca -1 "$srv" server.key
sign client ca 30 "$cli"
sign other-client other-ca 30 "$cli"
sign other-server other-ca 30 "$srv"
rm -f ./*.srl
