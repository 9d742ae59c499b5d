#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages ampd builds and tests with. Idempotent: only
# packages that are missing are installed, so a second run does nothing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libuv1-dev libnghttp2-dev libmicrohttpd-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev openssl
  zlib1g-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  check libsubunit-dev
  clang libclang-rt-14-dev
  python3-grpcio python3-protobuf protobuf-compiler grpc-proto python3-prometheus-client
  libsystemd-dev systemd
  debhelper dpkg-dev lintian
  haproxy python3-yaml
  python3-numpy dh-python
  podman buildah mmdebstrap runc
  golang-goprotobuf-dev
  golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-golang-x-sys-dev
  ruby ruby-grpc libgrpc++-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# tests/test_node_grpc_js.py: Debian's node and npm, unless a node with npm is there already
command -v npm >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
