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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from npm_dir import npm_dir  # noqa: E402

SKIPPED = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("AMP_SOURCE_DIR", os.path.join(HERE, ".."))
VALIDATE = os.path.join(SOURCE, "deploy", "k8s", "validate")
MANIFEST = os.path.join(SOURCE, "deploy", "k8s", "ampd.yaml")
RUN_TIMEOUT_S = 120


def installed():
    """BUILD/k8s-validate with the validator and its packages, or a reason why not."""
    where, why = npm_dir(VALIDATE, "k8s-validate")
    if where:
        # ES modules resolve their imports beside themselves: the script
        # goes where node_modules is.
        shutil.copy(os.path.join(VALIDATE, "validate.mjs"), where)
    return where, why


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
