# SPDX-License-Identifier: MIT
"""errors.py: one exception class per gRPC status, under AmpError.

Every failure the client reports is an AmpError carrying the gRPC status
code (a grpc.StatusCode) and the daemon's message: a call's status, an
ERROR line of the region socket (docs/regions.md: it names a gRPC status
too), or an argument the client could not put into a request. Catch
AmpError for all of them, or one subclass (InvalidArgument, NotFound, ...)
for one status. InvalidArgument and OutOfRange are also ValueErrors, and
DeadlineExceeded a TimeoutError, so code that catches the built-in kinds
keeps working.
"""
import grpc


class AmpError(Exception):
    """A call, or a region request, ended with a status other than OK."""
    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message

    def __str__(self):
        return "%s: %s" % (self.code.name, self.message)


class Cancelled(AmpError):
    code = grpc.StatusCode.CANCELLED


class Unknown(AmpError):
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(AmpError, ValueError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(AmpError, TimeoutError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(AmpError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(AmpError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(AmpError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(AmpError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(AmpError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(AmpError):
    code = grpc.StatusCode.ABORTED


class OutOfRange(AmpError, ValueError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(AmpError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(AmpError):
    code = grpc.StatusCode.INTERNAL


class Unavailable(AmpError):
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(AmpError):
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(AmpError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE = {cls.code: cls for cls in AmpError.__subclasses__()}


def error(code, message):
    """The AmpError subclass instance for code (a grpc.StatusCode)."""
    return _BY_CODE.get(code, AmpError)(message, code)


def from_rpc_error(e):
    """An AmpError for a grpc.RpcError (sync or asyncio)."""
    return error(e.code(), e.details() or "")


def from_status_name(name, message):
    """An AmpError for a status by its name ("RESOURCE_EXHAUSTED")."""
    code = getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)
    return error(code, message)
