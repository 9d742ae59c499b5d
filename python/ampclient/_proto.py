# SPDX-License-Identifier: MIT
"""_proto.py: ampd's message classes, made at import from the descriptor
set that the build compiles from proto/ (ampd.desc, the same file the
daemon serves by reflection).

A private descriptor pool, not protoc's generated *_pb2 modules: nothing
generated is committed or installed but the descriptors, the classes cannot
collide with a program's own amp_pb2 or grpcio-health-checking's health
classes in protobuf's default pool, and no protoc/runtime version pairing
is needed. Enum names are looked up in the descriptors, so the op and type
names the client accepts are the proto's own.
"""
import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DESCRIPTOR_SET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ampd.desc")
PACKAGE = "amp.v1"
SERVICE = "/amp.v1.Amp/"
HEALTH_SERVICE = "/grpc.health.v1.Health/"


def _load_pool():
    try:
        with open(DESCRIPTOR_SET, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    except FileNotFoundError:
        raise ImportError("ampclient: %s is missing: use the package from a build tree "
                          "(PYTHONPATH=BUILD/python) or an installed one"
                          % DESCRIPTOR_SET) from None
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return pool


POOL = _load_pool()
# protobuf >= 4.22 has GetMessageClass; Debian 12's 4.21 only the factory.
_get_class = getattr(message_factory, "GetMessageClass", None) or \
    message_factory.MessageFactory(POOL).GetPrototype


def message(full_name):
    """The message class of full_name ("amp.v1.ReverseRequest")."""
    return _get_class(POOL.FindMessageTypeByName(full_name))


def enum_value(enum_name, prefix, word, field):
    """The number of enum_name's value PREFIX_WORD (case-insensitive word);
    ValueError naming field and the accepted words otherwise."""
    desc = POOL.FindEnumTypeByName(enum_name)
    value = desc.values_by_name.get(prefix + str(word).upper())
    if value is None or str(word).upper() == "UNSPECIFIED":
        words = [v.name[len(prefix):].lower() for v in desc.values
                 if v.name.startswith(prefix) and not v.name.endswith("UNSPECIFIED")]
        raise ValueError("%s: %r is not one of %s" % (field, word, ", ".join(words)))
    return value.number


def enum_name(enum_name_, prefix, number):
    """The lower-case word of enum_name_'s value number."""
    name = POOL.FindEnumTypeByName(enum_name_).values_by_number[number].name
    return name[len(prefix):].lower()


ReverseRequest = message("amp.v1.ReverseRequest")
TransformRequest = message("amp.v1.TransformRequest")
HistogramRequest = message("amp.v1.HistogramRequest")
FillRequest = message("amp.v1.FillRequest")
PipelineRequest = message("amp.v1.PipelineRequest")
DataReply = message("amp.v1.DataReply")
HistogramReply = message("amp.v1.HistogramReply")
PipelineReply = message("amp.v1.PipelineReply")
StreamRequest = message("amp.v1.StreamRequest")
StreamReply = message("amp.v1.StreamReply")
JobHeader = message("amp.v1.JobHeader")
Step = message("amp.v1.Step")
RegionSlice = message("amp.v1.RegionSlice")
ListDevicesRequest = message("amp.v1.ListDevicesRequest")
ListDevicesReply = message("amp.v1.ListDevicesReply")
StatusRequest = message("amp.v1.StatusRequest")
StatusReply = message("amp.v1.StatusReply")
HealthCheckRequest = message("grpc.health.v1.HealthCheckRequest")
HealthCheckResponse = message("grpc.health.v1.HealthCheckResponse")
