#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_proto_codegen.py: code generated from the installed protos (issue
38 item 1). Installs the build tree into a temporary prefix, runs protoc
--python_out on share/ampd/proto, and in a fresh interpreter imports the
generated amp_pb2 and grpc_health.v1.health_pb2 beside grpcio (health
under grpc/health/v1 would be shadowed by grpcio's grpc package: "No
module named 'grpc.health'"), then calls Reverse and health Check on a
real ampd with those classes. With protoc-gen-go (Debian's
golang-goprotobuf-dev), --go_out too: each file's package comes from its
go_package."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"]))
TIMEOUT_S = 120
PROTOS = ("amp.proto", "grpc_health/v1/health.proto")

USE = r'''
import sys
import grpc
import amp_pb2
from grpc_health.v1 import health_pb2
assert grpc.__file__ and "grpc_health" not in grpc.__file__, grpc.__file__
with grpc.insecure_channel(sys.argv[1]) as ch:
    rev = ch.unary_unary("/amp.v1.Amp/Reverse",
                         request_serializer=amp_pb2.ReverseRequest.SerializeToString,
                         response_deserializer=amp_pb2.DataReply.FromString)
    assert rev(amp_pb2.ReverseRequest(data=b"abc"), timeout=60).data == b"cba"
    check = ch.unary_unary("/grpc.health.v1.Health/Check",
                           request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                           response_deserializer=health_pb2.HealthCheckResponse.FromString)
    st = check(health_pb2.HealthCheckRequest(), timeout=60).status
    assert st == health_pb2.HealthCheckResponse.SERVING, st
print("generated classes work")
'''


class T:
    d = None
    proto_dir = None
    work = None


def protoc(*args, protos=PROTOS):
    p = subprocess.run(["protoc", "-I", T.proto_dir] + list(args) + list(protos),
                       capture_output=True, text=True, timeout=TIMEOUT_S)
    expect(p.returncode == 0, "protoc %s: %s" % (" ".join(args), p.stderr))


def test_python_stubs_beside_grpcio():
    out = os.path.join(T.work, "py")
    os.makedirs(out)
    protoc("--python_out=" + out)
    expect(os.path.exists(os.path.join(out, "grpc_health", "v1", "health_pb2.py")),
           "health_pb2 under grpc_health/v1")
    p = subprocess.run([sys.executable, "-c", USE, T.d.address], cwd=out,
                       env=dict(os.environ, PYTHONPATH=out), capture_output=True, text=True,
                       timeout=TIMEOUT_S)
    expect(p.returncode == 0 and "generated classes work" in p.stdout,
           "generated stubs: %s%s" % (p.stdout, p.stderr))


def test_go_packages():
    if not shutil.which("protoc-gen-go"):
        print("note: no protoc-gen-go (golang-goprotobuf-dev): --go_out not run")
        return
    out = os.path.join(T.work, "go")
    os.makedirs(out)
    for proto in PROTOS:   # one at a time: each is its own Go package
        protoc("--go_out=paths=source_relative:" + out, protos=[proto])
    with open(os.path.join(out, "amp.pb.go"), encoding="utf-8") as f:
        expect("\npackage ampv1\n" in f.read(), "amp.pb.go is package ampv1 (go_package)")
    with open(os.path.join(out, "grpc_health", "v1", "health.pb.go"), encoding="utf-8") as f:
        expect("\npackage grpc_health_v1\n" in f.read(), "health.pb.go is grpc_health_v1")


def main():
    T.work = tempfile.mkdtemp(prefix="amp-codegen-")
    prefix = os.path.join(T.work, "prefix")
    subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True,
                   capture_output=True, timeout=TIMEOUT_S)
    T.proto_dir = os.path.join(prefix, "share", "ampd", "proto")
    T.d = Daemon()
    try:
        failed = run_cases(module_cases(globals()))
    finally:
        status = T.d.stop()
        shutil.rmtree(T.work, ignore_errors=True)
    if status != 0:
        print("FAIL ampd exited with status %d" % status)
        failed += 1
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
