# SPDX-License-Identifier: MIT
"""tls_daemon.py: an ampd with a tls: listener for the Python TLS tests,
with certificates made fresh by tls_certs.sh (the C tests' tls_fixture.c
does the same)."""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile

from daemon_proc import Daemon, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
PORT_TRIES = 5


def serves_cert(port, cert_path):
    """True when TLS on 127.0.0.1:port shows the certificate in cert_path:
    this test's ampd, not another test's that took the same free port."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    want = ssl.PEM_cert_to_DER_cert(open(cert_path).read())
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            with ctx.wrap_socket(s) as t:
                return t.getpeercert(binary_form=True) == want
    except OSError:
        return False


class TlsDaemon:
    """certs: the directory of tls_certs.sh's files; port: the tls: port."""

    def __init__(self, extra_args=(), client_ca=False, stderr=None, token=None):
        """client_ca: ask for client certificates signed by these files' CA;
        stderr: as Daemon's; token: calls must carry this bearer token
        (None: no token needed)."""
        self.certs = tempfile.mkdtemp(prefix="ampd-tls-")
        subprocess.run(["sh", os.path.join(HERE, "tls_certs.sh"), self.certs], check=True)
        if client_ca:
            extra_args = (*extra_args, "--tls-client-ca", self.file("ca.pem"))
        if token:
            with open(self.file("tokens"), "w") as f:
                f.write("tls-client %s\n" % token)
            os.chmod(self.file("tokens"), 0o600)
            extra_args = ("--token-file", self.file("tokens"), *extra_args)
        else:   # first, so that extra_args may turn it on again
            extra_args = ("--tcp-require-token", "off", *extra_args)
        # A free port can be taken by another test's connection before ampd
        # binds it (ampd then exits just after its Unix socket looked ready).
        for _ in range(PORT_TRIES):
            self.port = free_port()
            try:
                self.daemon = Daemon(("--listen", "tls:127.0.0.1:%d" % self.port,
                                      "--tls-cert", self.file("server.pem"),
                                      "--tls-key", self.file("server.key"), *extra_args),
                                     stderr=stderr)
            except RuntimeError:
                continue
            if serves_cert(self.port, self.file("server.pem")) and self.daemon.proc.poll() is None:
                return
            self.daemon.stop()
        raise RuntimeError("ampd did not listen on a TLS port in %d tries" % PORT_TRIES)

    def file(self, name):
        return os.path.join(self.certs, name)

    def stop(self):
        status = self.daemon.stop()
        shutil.rmtree(self.certs, ignore_errors=True)
        return status
