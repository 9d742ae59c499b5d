#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds ampd's OCI image (deploy/container/Containerfile) with podman, from
# this tree's Debian packages on a Debian 12 base that mmdebstrap makes from
# the Debian archive (no registry needed): scripts/image.sh [DIR [TAG]].
# DIR (default build-image/) keeps the base tarball and the .debs; TAG
# defaults to localhost/ampd:0.1. `scripts/image.sh --base-only DIR` makes
# and imports the base alone. Needs root, podman, mmdebstrap and runc
# (scripts/deps.sh installs them).
#
# PODMAN_ARGS go before podman's command (default: vfs storage and runc,
# which work where overlay mounts and crun's cgroup setup do not, as in
# nested or sandboxed machines).
set -euo pipefail
cd "$(dirname "$0")/.."
base_only=0
if [ "${1:-}" = --base-only ]; then base_only=1; shift; fi
dir=${1:-build-image}
tag=${2:-localhost/ampd:0.1}
base=localhost/ampd-base:bookworm
read -r -a podman <<<"${PODMAN_ARGS:---storage-driver vfs --runtime runc}"
mirror=${AMP_IMAGE_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$dir"

if [ ! -s "$dir/base.tar" ]; then
  mmdebstrap --variant=minbase --format=tar bookworm "$dir/base.tar.tmp" \
    "deb $mirror bookworm main" "deb $mirror-security bookworm-security main" >&2
  mv "$dir/base.tar.tmp" "$dir/base.tar"
fi
podman "${podman[@]}" image exists "$base" || podman "${podman[@]}" import "$dir/base.tar" "$base" >&2
[ "$base_only" = 1 ] && exit 0

rm -rf "$dir/context"
mkdir -p "$dir/context"
scripts/deb.sh "$dir/context/debs" >/dev/null
cp deploy/container/Containerfile "$dir/context/"
podman "${podman[@]}" build --network=host --build-arg "BASE=$base" -t "$tag" \
  -f "$dir/context/Containerfile" "$dir/context" >&2
echo "$tag"
