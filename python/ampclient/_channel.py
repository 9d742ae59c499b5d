# SPDX-License-Identifier: MIT
"""_channel.py: what both clients need before a call: the address as
ampctl takes it, TLS credentials, the token and the call metadata.

Addresses use gRPC's target syntax, as ampctl's --address: unix:PATH,
HOST:PORT, and tls:HOST:PORT for TCP over TLS. The default is ampctl's:
$AMP_ADDRESS, else unix:/run/ampd/ampd.sock; the token comes from token=,
else the first line of token_file= or $AMP_TOKEN_FILE ("TOKEN" or "NAME
TOKEN", a line of the daemon's own --token-file), as ampctl reads it.
"""
import os

import grpc

from ._jobs import RECEIVE_LIMIT
from .errors import InvalidArgument

DEFAULT_ADDRESS = "unix:/run/ampd/ampd.sock"  # ampctl's and libampclient's (amp.h)
ENV_ADDRESS = "AMP_ADDRESS"
ENV_TOKEN_FILE = "AMP_TOKEN_FILE"
TLS_PREFIX = "tls:"
# Call metadata ampd reads (proto/amp.proto).
PRIORITY_KEY = "amp-priority"
MAX_QUEUE_TIME_KEY = "amp-max-queue-time"
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", RECEIVE_LIMIT)]


def read_token_file(path):
    """The token of a token file: the last word of its first line that is
    neither blank nor a # comment."""
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                words = line.split()
                if not words or words[0].startswith("#"):
                    continue
                if len(words) > 2:
                    raise InvalidArgument("token_file %s:%d: want TOKEN or NAME TOKEN" %
                                          (path, lineno))
                return words[-1]
    except OSError as e:
        raise InvalidArgument("token_file %s: %s" % (path, e.strerror)) from None
    raise InvalidArgument("token_file %s: no token in it" % path)


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InvalidArgument("%s %s: %s" % (what, path, e.strerror)) from None


class Target:
    """A parsed address: the gRPC target, credentials (None: plaintext),
    the call metadata every call carries, and the address itself (the
    region socket is found from a unix: one)."""

    def __init__(self, address, token, token_file, tls_ca, tls_cert, tls_key, credentials,
                 priority, max_queue_time, metadata):
        self.address = address or os.environ.get(ENV_ADDRESS) or DEFAULT_ADDRESS
        if "," in self.address:
            raise InvalidArgument("address: one address, not a list (%r); put a load balancer "
                                  "in front of several daemons" % self.address)
        self.credentials = credentials
        self.target = self.address
        if self.address.startswith(TLS_PREFIX):
            self.target = self.address[len(TLS_PREFIX):]
            if self.credentials is None:
                self.credentials = grpc.ssl_channel_credentials(
                    _read(tls_ca, "tls_ca") if tls_ca else None,
                    _read(tls_key, "tls_key") if tls_key else None,
                    _read(tls_cert, "tls_cert") if tls_cert else None)
        elif tls_ca or tls_cert or tls_key:
            raise InvalidArgument("tls_ca, tls_cert, tls_key: the address %r is not tls:HOST:PORT"
                                  % self.address)
        token_file = token_file or (None if token else os.environ.get(ENV_TOKEN_FILE))
        if token is None and token_file:
            token = read_token_file(token_file)
        self.metadata = []
        if token:
            self.metadata.append(("authorization", "Bearer " + token))
        if priority:
            self.metadata.append((PRIORITY_KEY, priority))
        if max_queue_time:
            self.metadata.append((MAX_QUEUE_TIME_KEY, max_queue_time))
        self.metadata.extend(metadata)
        self.metadata = tuple(self.metadata)

    def call_metadata(self, priority):
        """Every call's metadata, with priority for this call if given."""
        if not priority:
            return self.metadata
        return tuple(m for m in self.metadata if m[0] != PRIORITY_KEY) + ((PRIORITY_KEY, priority),)
