# SPDX-License-Identifier: MIT
"""test_k8s_manifests.py: deploy/k8s/ampd.yaml checked without a cluster.

kubeconform and kubectl are not in Debian 12, so the manifests are parsed
with python3-yaml and the fields that make them work are checked by hand:
the Deployment asks for a GPU, its probes are gRPC probes on the container's
port, its grace period outlasts ampd's --drain-timeout, every ampd option it
passes is one `ampd --help` lists; the Services and the disruption budget
select the Deployment's pods. Prints one line per check (support/cases.py).
"""
import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("AMP_SOURCE_DIR", os.path.join(HERE, ".."))
MANIFEST = os.path.join(SOURCE, "deploy", "k8s", "ampd.yaml")
GRACE_MARGIN_S = 5    # time to start draining and to exit after it


def load():
    with open(MANIFEST) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        expect(d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name"),
               "a document lacks apiVersion, kind or metadata.name: %r" % d)
    return docs


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (not name or d["metadata"]["name"] == name)]
    expect(len(found) == 1, "want one %s %s, found %d" % (kind, name or "", len(found)))
    return found[0]


def container(docs):
    dep = one(docs, "Deployment")
    containers = dep["spec"]["template"]["spec"]["containers"]
    expect(len(containers) == 1, "one container")
    return dep, containers[0]


def arg_value(args, flag):
    expect(flag in args, "ampd args lack %s: %r" % (flag, args))
    return str(args[args.index(flag) + 1])


def test_deployment(docs):
    dep, c = container(docs)
    expect(dep["apiVersion"] == "apps/v1", "Deployment apiVersion")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    sel = dep["spec"]["selector"]["matchLabels"]
    expect(sel and all(labels.get(k) == v for k, v in sel.items()), "selector %r" % sel)
    expect(int(c["resources"]["limits"]["nvidia.com/gpu"]) >= 1, "no nvidia.com/gpu limit")
    expect(c["image"], "no image")


def test_probes_are_grpc_on_the_port(docs):
    _, c = container(docs)
    listen = arg_value(c["args"], "--listen")
    port = int(listen.rsplit(":", 1)[1])
    expect(listen.rsplit(":", 1)[0] in ("0.0.0.0", "[::]", ""), "--listen %s is not on every "
           "interface: the kubelet and the Service could not reach it" % listen)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    expect(port in ports.values(), "containerPort %r lacks %d" % (ports, port))
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        expect(c[probe]["grpc"]["port"] == port, "%s is not a gRPC probe on %d" % (probe, port))


def test_grace_outlasts_the_drain(docs):
    dep, c = container(docs)
    drain = int(arg_value(c["args"], "--drain-timeout"))
    grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    expect(drain + GRACE_MARGIN_S <= grace <= drain + 4 * GRACE_MARGIN_S,
           "terminationGracePeriodSeconds %d does not match --drain-timeout %d" % (grace, drain))


def test_args_are_ampd_options(docs):
    _, c = container(docs)
    helptext = subprocess.run([os.environ["AMPD_BIN"], "--help"], capture_output=True,
                              text=True).stdout
    known = set(re.findall(r"--[a-z][a-z-]+", helptext))
    flags = [a for a in c["args"] if str(a).startswith("--")]
    expect(flags and all(f in known for f in flags),
           "ampd does not know %r" % [f for f in flags if f not in known])


def test_services_and_budget_select_the_pods(docs):
    dep, c = container(docs)
    labels = dep["spec"]["template"]["metadata"]["labels"]
    port_names = {p["name"] for p in c["ports"]}
    services = [d for d in docs if d["kind"] == "Service"]
    expect(services, "no Service")
    for svc in services:
        sel = svc["spec"]["selector"]
        expect(all(labels.get(k) == v for k, v in sel.items()), "Service selector %r" % sel)
        for p in svc["spec"]["ports"]:
            expect(p["targetPort"] in port_names, "targetPort %r" % p["targetPort"])
    pdb = one(docs, "PodDisruptionBudget")
    expect(pdb["apiVersion"] == "policy/v1", "PodDisruptionBudget apiVersion")
    sel = pdb["spec"]["selector"]["matchLabels"]
    expect(all(labels.get(k) == v for k, v in sel.items()), "budget selector %r" % sel)
    expect(("maxUnavailable" in pdb["spec"]) != ("minAvailable" in pdb["spec"]),
           "a budget needs one of maxUnavailable, minAvailable")


def main():
    return 0 if run_cases(module_cases(globals()), load()) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
