#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages of debian/ (ampd, ampctl, libampclient0.1,
# libampclient-dev, python3-ampclient) into OUTDIR (default build-deb/):
# scripts/deb.sh [OUTDIR]
# The build runs in a scratch copy of the tree, since dpkg-buildpackage
# writes into the source (debian/tmp, obj-*) and its .debs beside it. The
# package's own tests are skipped (nocheck): scripts/test.sh runs the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build-deb}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ampd" "$out"
tar -c --exclude='./build*' --exclude=./.git --exclude='./obj-*' . | tar -x -C "$work/ampd"
(cd "$work/ampd" &&
 DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" DEB_BUILD_PROFILES=nocheck \
   dpkg-buildpackage -us -uc -b >&2)
rm -f "$out"/*.deb
mv "$work"/*.deb "$out"/
ls "$out"/*.deb
