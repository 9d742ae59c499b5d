"""tls_daemon.py: an ampd with a tls: listener for the Python TLS tests,
with certificates made fresh by tls_certs.sh (the C tests' tls_fixture.c
does the same)."""
import os
import shutil
import socket
import subprocess
import tempfile

from daemon_proc import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
PORT_TRIES = 5


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return True
    except OSError:
        return False


class TlsDaemon:
    """certs: the directory of tls_certs.sh's files; port: the tls: port."""

    def __init__(self, extra_args=(), client_ca=False):
        """client_ca: ask for client certificates signed by these files' CA."""
        self.certs = tempfile.mkdtemp(prefix="ampd-tls-")
        subprocess.run(["sh", os.path.join(HERE, "tls_certs.sh"), self.certs], check=True)
        if client_ca:
            extra_args = (*extra_args, "--tls-client-ca", self.file("ca.pem"))
        # A free port can be taken by another test's connection before ampd
        # binds it (ampd then exits just after its Unix socket looked ready).
        for _ in range(PORT_TRIES):
            self.port = free_port()
            try:
                self.daemon = Daemon(("--listen", "tls:127.0.0.1:%d" % self.port,
                                      "--tls-cert", self.file("server.pem"),
                                      "--tls-key", self.file("server.key"), *extra_args))
            except RuntimeError:
                continue
            if self.daemon.proc.poll() is None and port_open(self.port):
                return
            self.daemon.stop()
        raise RuntimeError("ampd did not listen on a TLS port in %d tries" % PORT_TRIES)

    def file(self, name):
        return os.path.join(self.certs, name)

    def stop(self):
        status = self.daemon.stop()
        shutil.rmtree(self.certs, ignore_errors=True)
        return status
