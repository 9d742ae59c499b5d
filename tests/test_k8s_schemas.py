# SPDX-License-Identifier: MIT
"""test_k8s_schemas.py: deploy/k8s/ampd.yaml validated against the
Kubernetes API's schemas: every object through kubernetes-models (npm;
classes and validators generated from Kubernetes' own OpenAPI), run by
deploy/k8s/validate/validate.mjs. The first run installs the locked
packages into BUILD/k8s-validate with `npm ci` (later runs find them
there); with no node or npm, or no registry to install from, it exits 77
(skipped, the reason printed). test_k8s_manifests checks what the schemas
cannot: that the fields fit ampd."""
import json
import os
import shutil
import subprocess
import sys

import yaml

SKIPPED = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("AMP_SOURCE_DIR", os.path.join(HERE, ".."))
VALIDATE = os.path.join(SOURCE, "deploy", "k8s", "validate")
MANIFEST = os.path.join(SOURCE, "deploy", "k8s", "ampd.yaml")
INSTALL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 120


def installed():
    """BUILD/k8s-validate with the validator and its packages, or a reason why not."""
    if not shutil.which("node") or not shutil.which("npm"):
        return None, "node or npm is not installed (scripts/deps.sh installs nodejs and npm)"
    where = os.path.join(os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"])), "k8s-validate")
    os.makedirs(where, exist_ok=True)
    # ES modules resolve their imports beside themselves: the script goes
    # where node_modules is.
    shutil.copy(os.path.join(VALIDATE, "validate.mjs"), where)
    stamp = os.path.join(where, "node_modules", ".package-lock.json")
    lock = os.path.join(VALIDATE, "package-lock.json")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock):
        return where, None
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(VALIDATE, f), where)
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=where,
                       capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if p.returncode != 0:
        return None, "npm ci failed (no registry?): %s" % p.stderr.strip()[-500:]
    return where, None


def main():
    where, why = installed()
    if why:
        print("SKIP %s" % why)
        return SKIPPED
    with open(MANIFEST) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    p = subprocess.run(["node", os.path.join(where, "validate.mjs")], input=json.dumps(docs),
                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    print(p.stdout + p.stderr, end="")
    ok = p.returncode == 0 and p.stdout.count("\nok ") + p.stdout.startswith("ok ") == len(docs)
    if not ok:
        print("FAIL the manifests do not all validate (%d objects)" % len(docs))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
