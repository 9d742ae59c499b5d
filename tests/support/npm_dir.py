# SPDX-License-Identifier: MIT
"""npm_dir.py: a package.json and package-lock.json of the source tree
installed under the build tree with `npm ci`, for the tests that run Node
programs (test_node_grpc_js, test_node_burst, test_k8s_schemas). Installed once: a later run
finds node_modules newer than the lock and installs nothing (offline)."""
import os
import shutil
import subprocess

INSTALL_TIMEOUT_S = 300


def npm_dir(source, name):
    """BUILD/name with source's locked packages installed, and None; or None
    and the reason it cannot be had (no node or npm, no registry)."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "node or npm is not installed (scripts/deps.sh installs nodejs and npm)"
    where = os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), name)
    stamp = os.path.join(where, "node_modules", ".package-lock.json")
    lock = os.path.join(source, "package-lock.json")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock):
        return where, None
    os.makedirs(where, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(source, f), where)
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=where,
                       capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if p.returncode != 0:
        return None, "npm ci failed (no registry?): %s" % p.stderr.strip()[-500:]
    return where, None
