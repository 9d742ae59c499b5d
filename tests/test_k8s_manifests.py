# SPDX-License-Identifier: MIT
"""test_k8s_manifests.py: deploy/k8s/ampd.yaml checked without a cluster.

kubeconform is not in Debian 12, so the manifests are parsed with
python3-yaml and the fields that make them work are checked by hand: the
Deployment asks for a GPU, clients get a tls: listener, its probes are
gRPC probes on the --health-listen port (the kubelet's cannot speak TLS), its grace period outlasts ampd's --drain-delay and --drain-timeout,
it meets the restricted Pod Security Standard, every ampd option it passes
is one `ampd --help` lists, and `ampd --check-config` takes the container's
exact arguments (its mounts made as temporary directories, the Secrets'
token file and certificate as the operator would give them); Prometheus' annotations name
the metrics port ampd listens on; the autoscaler's metric is one a real
ampd exports; the Services and the disruption budget select the
Deployment's pods. Prints one line per check (support/cases.py).
"""
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

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


def every_interface_port(c, flag, prefix=""):
    """The port of c's flag HOST:PORT, which must be on every interface,
    with a containerPort."""
    value = arg_value(c["args"], flag)
    expect(value.startswith(prefix), "%s %s is not %s..." % (flag, value, prefix))
    host, port = value[len(prefix):].rsplit(":", 1)
    expect(host in ("0.0.0.0", "[::]"), "%s %s is not on every interface: the kubelet and the "
           "Service could not reach it" % (flag, value))
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    expect(int(port) in ports.values(), "containerPort %r lacks %s" % (ports, port))
    return int(port)


def test_tls_for_clients_grpc_probes_on_health(docs):
    _, c = container(docs)
    every_interface_port(c, "--listen", "tls:")
    expect("--allow-plaintext-network" not in c["args"], "plaintext allowed on the pod network")
    health = every_interface_port(c, "--health-listen")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        expect(c[probe]["grpc"]["port"] == health, "%s is not a gRPC probe on %d" % (probe, health))


def test_grace_outlasts_the_drain(docs):
    dep, c = container(docs)
    drain = int(arg_value(c["args"], "--drain-timeout")) + int(arg_value(c["args"], "--drain-delay"))
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


def test_restricted_pod_security(docs):
    dep, c = container(docs)
    pod = dep["spec"]["template"]["spec"]["securityContext"]
    expect(pod.get("runAsNonRoot") is True and pod.get("runAsUser", 0) != 0, "pod runs as root")
    expect(pod.get("seccompProfile", {}).get("type") == "RuntimeDefault", "no RuntimeDefault seccomp")
    sc = c["securityContext"]
    expect(sc.get("allowPrivilegeEscalation") is False, "privilege escalation allowed")
    expect(sc.get("readOnlyRootFilesystem") is True, "root filesystem writable")
    expect(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities not all dropped")


def test_check_config_takes_the_args(docs):
    """The container's exact arguments, each mount a temporary directory."""
    dep, c = container(docs)
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    with tempfile.TemporaryDirectory() as tmp:
        where = {}
        for m in c["volumeMounts"]:
            d = os.path.join(tmp, m["name"])
            os.mkdir(d)
            where[m["mountPath"]] = d
            secret = volumes[m["name"]].get("secret")
            if secret and secret["secretName"] == "ampd-tokens":
                path = os.path.join(d, "tokens")
                with open(path, "w") as f:
                    f.write("k8s-client k8s-token-0123456789abcdef\n")
                os.chmod(path, secret["defaultMode"])
            if secret and secret["secretName"] == "ampd-tls":   # a kubernetes.io/tls Secret
                subprocess.run(["sh", os.path.join(HERE, "support", "tls_certs.sh"), tmp],
                               check=True)
                for src, name in (("server.pem", "tls.crt"), ("server.key", "tls.key")):
                    os.rename(os.path.join(tmp, src), os.path.join(d, name))
                    os.chmod(os.path.join(d, name), secret["defaultMode"])
        args = []
        for a in map(str, c["args"]):
            for mount, d in where.items():
                if a == mount or a.startswith(mount + "/"):
                    a = d + a[len(mount):]
            args.append(a)
        p = subprocess.run([os.environ["AMPD_BIN"], "--check-config", *args], capture_output=True,
                           text=True, timeout=60)
    expect(p.returncode == 0 and "configuration ok" in p.stderr + p.stdout,
           "ampd --check-config %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))


def test_metrics_scraped_and_scaled_on(docs):
    dep, c = container(docs)
    notes = dep["spec"]["template"]["metadata"]["annotations"]
    port = int(arg_value(c["args"], "--metrics-listen").rsplit(":", 1)[1])
    expect(notes.get("prometheus.io/scrape") == "true" and int(notes["prometheus.io/port"]) == port,
           "scrape annotations %r do not name --metrics-listen's port %d" % (notes, port))
    expect({"name": "metrics", "containerPort": port, "protocol": "TCP"} in c["ports"],
           "no containerPort for the metrics")
    hpa = one(docs, "HorizontalPodAutoscaler")
    expect(hpa["apiVersion"] == "autoscaling/v2" and hpa["spec"]["scaleTargetRef"]["name"]
           == dep["metadata"]["name"], "the autoscaler does not scale the Deployment")
    metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    d = Daemon(("--metrics-listen", "127.0.0.1:0"), stderr=subprocess.PIPE)
    try:
        url = None
        while url is None:
            line = d.proc.stderr.readline().decode(errors="replace")
            expect(line, "no 'metrics on' line")
            m = re.search(r"metrics on (http://\S+/metrics)", line)
            url = m.group(1) if m else None
        with urllib.request.urlopen(url, timeout=30) as r:
            page = r.read().decode()
    finally:
        status = d.stop()
    expect(re.search(r"^# TYPE %s gauge$" % re.escape(metric), page, re.M),
           "ampd exports no gauge %s for the autoscaler" % metric)
    expect(status == 0, "ampd exited %d" % status)


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
