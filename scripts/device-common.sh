# SPDX-License-Identifier: MIT
# Sourced by the scripts/device-*.sh that run on the GPU machine (the
# device tool), which has no package registry: binaries are built here
# and travel with the .debs of the libraries they load.
#
#   device_prepare DIR BINARY...   here: copies the binaries (and
#       libampclient.so.0.1) to DIR/bin, names the commit they were built
#       from in DIR/bin/ampd.commit (the machine's copy of the tree may
#       hold another history), and downloads to DIR/debs the package of
#       every library they load (ldd, then dpkg -S; libc6 is there
#       already). DIR is git-ignored and carried to the machine.
#   device_baseline DIR REV        here: builds REV's ampd in a scratch
#       worktree as DIR/bin/ampd-old, the daemon an A/B run compares with,
#       and names REV in DIR/bin/ampd-old.commit.
#   device_show_versions DIR       there: prints both names, beside the
#       figures they are for.
#   device_setup DIR               there: unpacks DIR/debs into a folder
#       (not into /), points LD_LIBRARY_PATH at it and at DIR/bin, and
#       registers NVIDIA's OpenCL driver, installed but not registered
#       (where there is none, the OpenCL devices registered already).

device_step() { echo "== $(date -u +%H:%M:%S) $*"; }

device_prepare() {
  local dir=$1 b
  shift
  for b in "$@" build/client/libampclient.so.0.1; do
    [ -e "$b" ] || { echo "missing $b: run scripts/build.sh build first" >&2; return 2; }
  done
  rm -rf "${dir:?}/debs" "${dir:?}/bin" && mkdir -p "$dir/debs" "$dir/bin" || return 2
  cp "$@" "$dir/bin/" && cp -L build/client/libampclient.so.0.1 "$dir/bin/" || return 2
  { git log -1 --format='%h %cs %s' | tr -d '\n'
    git diff --quiet HEAD -- . ':!build-dev' || printf ' (and changes not committed)'; echo; } >"$dir/bin/ampd.commit"
  local pkgs
  mapfile -t pkgs < <(for l in $(ldd "$@" | awk '/=> \//{print $3}' | sort -u); do
           dpkg -S "$l" 2>/dev/null || dpkg -S "$(readlink -f "$l")" 2>/dev/null || true
         done | cut -d: -f1 | sort -u | grep -vx libc6)
  device_step "downloading: ${pkgs[*]}"
  (cd "$dir/debs" && timeout 300 apt-get download "${pkgs[@]}") || return 2
  du -sh "$dir"
  device_step "prepared $dir: carry it to the device machine"
}

device_baseline() {
  local dir=$1 rev wt rc=0
  rev=$(git rev-parse --verify --quiet "${2:-}^{commit}") || { echo "not a commit: '${2:-}'" >&2; return 2; }
  [ -d "$dir/bin" ] || { echo "no $dir/bin: prepare it first" >&2; return 2; }
  wt=$(mktemp -d) && git worktree add --detach --quiet "$wt" "$rev" || return 2
  device_step "building $(git log -1 --format=%h "$rev")'s ampd"
  cmake -S "$wt" -B "$wt/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build "$wt/build" --target ampd -j"$(nproc)" >/dev/null &&
    cp "$wt/build/ampd" "$dir/bin/ampd-old" &&
    git log -1 --format='%h %cs %s' "$rev" >"$dir/bin/ampd-old.commit" || rc=2
  git worktree remove --force "$wt"
  [ $rc = 0 ] && device_step "$dir/bin/ampd-old: $(cat "$dir/bin/ampd-old.commit")"
  return $rc
}

device_show_versions() {
  echo "ampd: $(cat "$1/bin/ampd.commit" 2>/dev/null || echo 'a build of an unnamed commit')"
  if [ -e "$1/bin/ampd-old.commit" ]; then
    echo "ampd-old: $(cat "$1/bin/ampd-old.commit")"
  elif [ -e "$1/bin/ampd-old" ]; then
    echo "ampd-old: a build of an unnamed commit (scripts/device-tenants.sh baseline REV names it)"
  fi
}

device_setup() {
  local dir=$1 root=/tmp/device-root lib
  mkdir -p $root && for f in "$dir"/debs/*.deb; do dpkg -x "$f" $root || return 2; done
  export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu:$PWD/$dir/bin
  mkdir -p /etc/OpenCL/vendors
  lib=$(ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
  if [ -n "$lib" ]; then
    echo "$lib" > /etc/OpenCL/vendors/nvidia.icd
  else   # a trial here: the OpenCL devices already registered (PoCL)
    echo "no libnvidia-opencl.so.1 on this machine" >&2
  fi
}
