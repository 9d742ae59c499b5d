#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (scripts/deb.sh), checks them with lintian
# (no error or warning), installs them on this
# machine, runs jobs through the installed ampctl and a program built on the
# installed libampclient-dev and one on the installed python3-ampclient
# against the installed ampd (started by hand:
# CI has no systemd as PID 1), checks what the packages set up (the ampd
# account, ampd.conf as a conffile, the units), then purges them.
# Refuses to run where any of them is installed already: it would remove it.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(ampd ampctl libampclient0.1 libampclient-dev python3-ampclient)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

for p in "${PKGS[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
    echo "deb-test: $p is installed already; not touching it" >&2
    exit 1
  fi
done

out=$(mktemp -d)
ampd_pid=""
cleanup() {
  [ -n "$ampd_pid" ] && kill "$ampd_pid" 2>/dev/null || true
  $SUDO dpkg --purge "${PKGS[@]}" >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT

scripts/deb.sh "$out/debs" >/dev/null

fail() { echo "deb-test: $*" >&2; exit 1; }

# Debian's own checks: no error or warning on any package.
lintian --fail-on error,warning "$out"/debs/*.deb >&2 || fail "lintian found problems (above)"

$SUDO dpkg -i "$out"/debs/*.deb >&2
getent group ampd >/dev/null || fail "no ampd group after installing (sysusers.d)"
dpkg-query -W -f='${Conffiles}' ampd | grep "/etc/ampd/ampd.conf " >/dev/null || fail "ampd.conf is no conffile"
grep -q "^ExecStart=/usr/sbin/ampd --config /etc/ampd/ampd.conf$" /lib/systemd/system/ampd.service ||
  fail "ampd.service does not name /usr/sbin/ampd and /etc/ampd/ampd.conf"
[ -e /lib/systemd/system/ampd.socket ] || fail "no ampd.socket"
[ -e /usr/share/man/man3/amp_process.3.gz ] || fail "libampclient-dev has no amp_process(3)"

sock="$out/ampd.sock"
/usr/sbin/ampd --config /etc/ampd/ampd.conf --listen "unix:$sock" 2>"$out/ampd.log" &
ampd_pid=$!
for _ in $(seq 1200); do
  [ -S "$sock" ] && break
  kill -0 "$ampd_pid" 2>/dev/null || { cat "$out/ampd.log" >&2; fail "the installed ampd exited"; }
  sleep 0.1
done
# The socket listens before the devices open: wait until they have.
/usr/bin/ampctl -a "unix:$sock" health --wait 2m >/dev/null ||
  { cat "$out/ampd.log" >&2; fail "the installed ampd did not become SERVING"; }
got=$(/usr/bin/ampctl -a "unix:$sock" reverse -o - packaged)
[ "$got" = degakcap ] || fail "ampctl reverse: \"$got\""

# A program on the installed library alone (pkg-config from the -dev package).
cc -std=c11 -Wall -Wextra -Werror tests/install/consumer.c -o "$out/consumer" \
   $(pkg-config --cflags --libs ampclient)
# grep reads all of it: with -q it could exit first and, under pipefail,
# ldd's SIGPIPE fail the check.
ldd "$out/consumer" | grep -E "libampclient\.so\.0\.1 => (/usr)?/lib/" >/dev/null ||
  fail "consumer not on libampclient0.1: $(ldd "$out/consumer" | grep ampclient)"
"$out/consumer" "unix:$sock" >&2

# The installed Python package alone (no PYTHONPATH; run from / so that no
# checkout's python/ can be picked up).
got=$(cd / && /usr/bin/python3 -c 'import sys, ampclient
with ampclient.Client(sys.argv[1]) as c: print(c.reverse(b"packaged").decode())' "unix:$sock")
[ "$got" = degakcap ] || fail "python3-ampclient reverse: \"$got\""

kill -TERM "$ampd_pid"
status=0
wait "$ampd_pid" || status=$?
ampd_pid=""
[ "$status" -eq 0 ] || { cat "$out/ampd.log" >&2; fail "the installed ampd exited $status"; }

$SUDO dpkg --purge "${PKGS[@]}" >&2
[ ! -e /usr/sbin/ampd ] && [ ! -e /etc/ampd/ampd.conf ] || fail "purging left files behind"
echo "deb-test: ok (built, installed, served a job, purged)"
