# SPDX-License-Identifier: MIT
"""test_reflection.py: gRPC server reflection and Health/Watch, from a client
that has none of ampd's .proto files.

The reflection protocol's own messages are built at test time from Debian's
grpc-proto (/usr/share/grpc-proto) with protoc and python3-protobuf's
dynamic message classes, and the calls go through python3-grpcio's generic
stream API: the client side of what grpcurl does. Checks list_services
(v1 and v1alpha), file_by_filename and file_containing_symbol (a service,
a method, messages, enums), NOT_FOUND in error_response for unknown files,
symbols and extensions, a call to amp.v1.Amp/Reverse made from the
returned descriptors alone, malformed requests (INTERNAL, INVALID_ARGUMENT)
that leave the daemon serving, and Health/Watch: SERVING at once,
SERVICE_UNKNOWN for another name, UNIMPLEMENTED for two requests, a watch
the client cancels, and NOT_SERVING then the end of the stream when the
daemon drains (SIGTERM), well before --drain-timeout.
Prints one line per check (support/cases.py).
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from cases import expect, module_cases, run_cases  # noqa: E402
from daemon_proc import Daemon  # noqa: E402

CALL_TIMEOUT_S = 120
GRPC_PROTO = "/usr/share/grpc-proto"
NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]
SERVING, NOT_SERVING, SERVICE_UNKNOWN = 1, 2, 3
# Long, so that a drain held by an open watch would show.
DRAIN_TIMEOUT_S = 100
DRAIN_FAST_S = 40
SERVICES = {"amp.v1.Amp", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"}
HEALTH_REQ = "grpc.health.v1.HealthCheckRequest"
HEALTH_RES = "grpc.health.v1.HealthCheckResponse"


def message_class(pool, name):
    desc = pool.FindMessageTypeByName(name)
    get = getattr(message_factory, "GetMessageClass", None)   # protobuf >= 4.22
    return get(desc) if get else message_factory.MessageFactory(pool).GetPrototype(desc)


def pool_from_protos(*names):
    """A descriptor pool holding Debian's grpc-proto files, compiled now."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        subprocess.run(["protoc", "-I" + GRPC_PROTO, "--include_imports",
                        "--descriptor_set_out=" + out, *names], check=True)
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(out, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return pool


class Ctx:
    channel = None
    pools = {}   # package -> (request class, response class)


def reflection_classes(package):
    if package not in Ctx.pools:
        pool = pool_from_protos("grpc/reflection/%s/reflection.proto" % package)
        Ctx.pools[package] = (
            message_class(pool, "grpc.reflection.%s.ServerReflectionRequest" % package),
            message_class(pool, "grpc.reflection.%s.ServerReflectionResponse" % package))
    return Ctx.pools[package]


def reflect(requests, package="v1"):
    """One ServerReflectionInfo stream: the requests (dicts of fields), the
    responses in order."""
    req_cls, res_cls = reflection_classes(package)
    call = Ctx.channel.stream_stream(
        "/grpc.reflection.%s.ServerReflection/ServerReflectionInfo" % package,
        request_serializer=req_cls.SerializeToString,
        response_deserializer=res_cls.FromString)
    return list(call(iter([req_cls(**r) for r in requests]), timeout=CALL_TIMEOUT_S))


def files_of(res):
    expect(res.WhichOneof("message_response") == "file_descriptor_response",
           "want files, got %s" % res)
    return [descriptor_pb2.FileDescriptorProto.FromString(b)
            for b in res.file_descriptor_response.file_descriptor_proto]


def expect_not_found(res, what):
    expect(res.WhichOneof("message_response") == "error_response", "%s: got %s" % (what, res))
    expect(res.error_response.error_code == NOT_FOUND,
           "%s: error code %d" % (what, res.error_response.error_code))
    expect(res.error_response.error_message, "%s: no error message" % what)


def expect_rpc_error(fn, code):
    try:
        fn()
    except grpc.RpcError as e:
        expect(e.code() == code, "got %s (%s), want %s" % (e.code(), e.details(), code))
        return e
    raise AssertionError("call succeeded, want %s" % code)


# --- reflection ------------------------------------------------------------------

def test_list_services_v1_and_v1alpha():
    for package in ("v1", "v1alpha"):
        (res,) = reflect([{"host": "h", "list_services": "*"}], package)
        names = {s.name for s in res.list_services_response.service}
        expect(names == SERVICES, "%s lists %s" % (package, sorted(names)))
        expect(res.original_request.list_services == "*", "original_request %s" % res)
        expect(res.valid_host == "h", "valid_host %r" % res.valid_host)


def test_symbol_amp_service_describes_reverse():
    (res,) = reflect([{"file_containing_symbol": "amp.v1.Amp"}])
    files = files_of(res)
    expect(files[0].name == "amp.proto" and files[0].package == "amp.v1", files[0].name)
    (svc,) = [s for s in files[0].service if s.name == "Amp"]
    (rev,) = [m for m in svc.method if m.name == "Reverse"]
    expect(rev.input_type == ".amp.v1.ReverseRequest", rev.input_type)
    req = [m for m in files[0].message_type if m.name == "ReverseRequest"]
    expect(len(req) == 1 and any(f.name == "data" for f in req[0].field), "ReverseRequest")


def test_symbols_of_every_kind():
    want = {
        "amp.v1.Amp.Reverse": "amp.proto",                         # method
        "amp.v1.ReverseRequest": "amp.proto",                      # message
        "amp.v1.ElementType": "amp.proto",                         # enum
        "grpc.health.v1.Health": "grpc/health/v1/health.proto",    # service
        "grpc.health.v1.Health.Watch": "grpc/health/v1/health.proto",
        "grpc.health.v1.HealthCheckResponse.ServingStatus": "grpc/health/v1/health.proto",
        "grpc.reflection.v1alpha.ServerReflection": "grpc/reflection/v1alpha/reflection.proto",
        "grpc.reflection.v1.ErrorResponse": "grpc/reflection/v1/reflection.proto",
    }
    names = list(want)
    for sym, res in zip(names, reflect([{"file_containing_symbol": s} for s in names])):
        files = files_of(res)
        expect(files[0].name == want[sym], "%s is in %s" % (sym, files[0].name))


def test_file_by_filename_health_has_watch():
    (res,) = reflect([{"file_by_filename": "grpc/health/v1/health.proto"}])
    (f,) = files_of(res)
    (watch,) = [m for m in f.service[0].method if m.name == "Watch"]
    expect(watch.server_streaming and not watch.client_streaming, "Watch %s" % watch)


def test_unknown_symbols_and_files_not_found():
    asks = [{"file_containing_symbol": "amp.v1.NoSuch"},
            {"file_containing_symbol": "amp.v1.Amp.NoSuchMethod"},
            {"file_containing_symbol": "amp.v1"},
            {"file_containing_symbol": ""},
            {"file_by_filename": "no/such.proto"},
            {"list_services": ""}]   # the stream goes on after errors
    res = reflect(asks)
    expect(len(res) == len(asks), "%d responses" % len(res))
    for ask, r in zip(asks[:-1], res):
        expect_not_found(r, str(ask))
    expect(res[-1].list_services_response.service, "no services after errors")


def test_extensions():
    req_cls, _ = reflection_classes("v1")
    ext = req_cls(file_containing_extension={"containing_type": "amp.v1.ReverseRequest",
                                             "extension_number": 100})
    res = reflect([{"file_containing_extension": ext.file_containing_extension},
                   {"all_extension_numbers_of_type": "amp.v1.ReverseRequest"},
                   {"all_extension_numbers_of_type": "amp.v1.NoSuch"},
                   {"all_extension_numbers_of_type": "amp.v1.Amp"}])
    expect_not_found(res[0], "extension")
    nums = res[1].all_extension_numbers_response
    expect(res[1].WhichOneof("message_response") == "all_extension_numbers_response",
           "extension numbers: %s" % res[1])
    expect(nums.base_type_name == "amp.v1.ReverseRequest" and not nums.extension_number,
           "extension numbers %s" % nums)
    expect_not_found(res[2], "extension numbers of an unknown type")
    expect_not_found(res[3], "extension numbers of a service")


def test_dynamic_reverse_from_reflection():
    """What grpcurl does: descriptors from the server, then a call."""
    (res,) = reflect([{"file_containing_symbol": "amp.v1.Amp.Reverse"}])
    pool = descriptor_pool.DescriptorPool()
    for f in reversed(files_of(res)):   # dependencies after their users
        pool.Add(f)
    method = pool.FindServiceByName("amp.v1.Amp").methods_by_name["Reverse"]
    req_cls = message_class(pool, method.input_type.full_name)
    res_cls = message_class(pool, method.output_type.full_name)
    fn = Ctx.channel.unary_unary("/amp.v1.Amp/Reverse",
                                 request_serializer=req_cls.SerializeToString,
                                 response_deserializer=res_cls.FromString)
    reply = fn(req_cls(data=b"reflected"), timeout=CALL_TIMEOUT_S)
    expect(reply.data == b"detcelfer", "reply %s" % reply)


def test_malformed_requests_fail_cleanly():
    raw = Ctx.channel.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
    for msg, code in ((b"\xff\xff\xff", grpc.StatusCode.INTERNAL),
                      (b"\x22\x05ab", grpc.StatusCode.INTERNAL),   # length past the end
                      (b"", grpc.StatusCode.INVALID_ARGUMENT),     # asks nothing
                      (b"\x0a\x01h", grpc.StatusCode.INVALID_ARGUMENT)):
        expect_rpc_error(lambda: list(raw(iter([msg]), timeout=CALL_TIMEOUT_S)), code)
    (res,) = reflect([{"list_services": ""}])
    expect(len(res.list_services_response.service) == len(SERVICES), "serving after bad input")


def test_many_requests_one_stream():
    """More answers than the daemon lets wait unread: it pauses, then goes on."""
    n = 400
    res = reflect([{"file_containing_symbol": "amp.v1.Amp"}] * n)
    expect(len(res) == n and all(files_of(r)[0].name == "amp.proto" for r in res),
           "%d answers" % len(res))


# --- Health/Watch ------------------------------------------------------------------

def health_classes():
    if "health" not in Ctx.pools:
        pool = pool_from_protos("grpc/health/v1/health.proto")
        Ctx.pools["health"] = (message_class(pool, HEALTH_REQ), message_class(pool, HEALTH_RES))
    return Ctx.pools["health"]


def watch(channel, service=""):
    req_cls, res_cls = health_classes()
    fn = channel.unary_stream("/grpc.health.v1.Health/Watch",
                              request_serializer=req_cls.SerializeToString,
                              response_deserializer=res_cls.FromString)
    return fn(req_cls(service=service), timeout=CALL_TIMEOUT_S)


def test_watch_serving_and_cancel():
    for service, want in (("", SERVING), ("amp.v1.Amp", SERVING), ("no.Such", SERVICE_UNKNOWN)):
        w = watch(Ctx.channel, service)
        first = next(w)
        expect(first.status == want, "%r: status %d, want %d" % (service, first.status, want))
        w.cancel()
        expect_rpc_error(lambda: next(w), grpc.StatusCode.CANCELLED)


def test_watch_two_requests_unimplemented():
    raw = Ctx.channel.stream_stream("/grpc.health.v1.Health/Watch")
    expect_rpc_error(lambda: list(raw(iter([b"", b""]), timeout=CALL_TIMEOUT_S)),
                     grpc.StatusCode.UNIMPLEMENTED)
    expect_rpc_error(lambda: list(raw(iter([]), timeout=CALL_TIMEOUT_S)),
                     grpc.StatusCode.UNIMPLEMENTED)


def test_watch_sees_drain():
    """Its own daemon: SIGTERM turns SERVING into NOT_SERVING, and the watch
    ends so that the drain does not wait for it."""
    d = Daemon(("--drain-timeout", str(DRAIN_TIMEOUT_S)))
    status = None
    try:
        ch = grpc.insecure_channel(d.address)
        w, unknown = watch(ch), watch(ch, "no.Such")
        expect(next(w).status == SERVING, "not SERVING before the drain")
        expect(next(unknown).status == SERVICE_UNKNOWN, "not SERVICE_UNKNOWN before the drain")
        got = []
        reader = threading.Thread(target=lambda: got.extend(r.status for r in w))
        reader.start()
        t0 = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        reader.join(CALL_TIMEOUT_S)
        expect(got == [NOT_SERVING], "after SIGTERM the watch got %r" % got)
        expect(w.code() == grpc.StatusCode.OK, "watch ended with %s" % w.code())
        expect(list(unknown) == [], "the unknown name's watch got more")
        d.proc.wait(DRAIN_TIMEOUT_S * 2)
        took = time.monotonic() - t0
        expect(took < DRAIN_FAST_S, "drain took %.1f s: held by the watch?" % took)
        ch.close()
    finally:
        status = d.stop()
    expect(status == 0, "drained ampd exited with %d" % status)


def main():
    daemon = Daemon()
    try:
        Ctx.channel = grpc.insecure_channel(daemon.address)
        failed = run_cases(module_cases(globals()))
        Ctx.channel.close()
    finally:
        status = daemon.stop()
    if status != 0:
        failed += 1
        print("FAIL ampd exited with status %d" % status)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
