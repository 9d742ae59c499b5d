# SPDX-License-Identifier: MIT
"""test_install.py: libampclient as an installed package.

Installs the build tree into a temporary prefix (`cmake --install
--prefix`), checks what the library shows (only amp_* symbols, in the
archive and the shared library), that the .proto files, ampctl's bash
completion and the systemd units are there, that ampd.conf is installed
once and an edited one survives a second install (the shipped one lands
beside it as ampd.conf.default), then
builds tests/install/consumer.c twice against the prefix alone: with
`pkg-config --cflags --libs ampclient` (the shared library), and with
CMake's find_package(ampclient) (ampclient::ampclient_static, which must
link with nothing of the build tree). Both run against the installed ampd.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from daemon_proc import Daemon  # noqa: E402

SRC = os.environ.get("AMP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.dirname(os.path.abspath(os.environ["AMPD_BIN"]))
TIMEOUT_S = 600


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, **kw)
    if p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                     p.stderr))
    return p.stdout


def sanitizer_flags():
    """An ASan build's library needs the sanitizer runtime linked in too."""
    with open(os.path.join(BUILD, "CMakeCache.txt"), encoding="utf-8") as f:
        on = re.search(r"^AMP_SANITIZE:BOOL=ON$", f.read(), re.M)
    return ["-fsanitize=address,undefined"] if on else []


def find(prefix, name):
    for root, _, files in os.walk(prefix):
        if name in files:
            return os.path.join(root, name)
    raise AssertionError("%s is not installed under %s" % (name, prefix))


def check_exports(lib, dynamic):
    args = ["nm", "-g", "--defined-only"] + (["-D"] if dynamic else []) + [lib]
    names = [line.split()[-1] for line in run(args).splitlines() if len(line.split()) == 3]
    others = [n for n in names if not n.startswith("amp_")]
    assert names, "%s defines no symbols" % lib
    assert not others, "%s exports non-amp_ names: %s" % (lib, others[:10])


def build_with_pkg_config(prefix, out, flags):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(find(prefix, "ampclient.pc")))
    pc = run(["pkg-config", "--cflags", "--libs", "ampclient"], env=env).split()
    libdir = next(a[2:] for a in pc if a.startswith("-L"))
    run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", *flags,
         os.path.join(SRC, "tests", "install", "consumer.c"), "-o", out, *pc,
         "-Wl,-rpath," + libdir])
    ldd = run(["ldd", out])
    assert os.path.realpath(libdir) in ldd or libdir in ldd, "not linked to %s:\n%s" % (libdir, ldd)


def build_with_cmake(prefix, work, flags):
    bdir = os.path.join(work, "cmake-build")
    run(["cmake", "-S", os.path.join(SRC, "tests", "install"), "-B", bdir,
         "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_C_FLAGS=" + " ".join(flags),
         "-DCMAKE_EXE_LINKER_FLAGS=" + " ".join(flags)])
    run(["cmake", "--build", bdir])
    exe = os.path.join(bdir, "consumer")
    assert "libampclient" not in run(["ldd", exe]), "the static target linked the shared library"
    return exe


def check_service_files(prefix):
    for unit in ("ampd.service", "ampd.socket"):
        assert os.path.exists(os.path.join(prefix, "lib", "systemd", "system", unit)), unit
    assert os.path.exists(os.path.join(prefix, "lib", "sysusers.d", "ampd.conf"))
    conf = os.path.join(prefix, "etc", "ampd", "ampd.conf")
    with open(os.path.join(SRC, "etc", "ampd.conf"), encoding="utf-8") as f:
        shipped = f.read()
    for path in (conf, conf + ".default"):
        with open(path, encoding="utf-8") as f:
            assert f.read() == shipped, "%s is not the shipped ampd.conf" % path
    edited = shipped + "max-jobs = 7\n"
    with open(conf, "w", encoding="utf-8") as f:
        f.write(edited)
    out = run(["cmake", "--install", BUILD, "--prefix", prefix])
    assert "Keeping: " + conf in out, out
    with open(conf, encoding="utf-8") as f:
        assert f.read() == edited, "a second install overwrote the edited ampd.conf"
    with open(conf + ".default", encoding="utf-8") as f:
        assert f.read() == shipped, "ampd.conf.default is not the shipped one"


def main():
    work = tempfile.mkdtemp(prefix="amp-install-")
    prefix = os.path.join(work, "prefix")
    try:
        run(["cmake", "--install", BUILD, "--prefix", prefix])
        check_exports(find(prefix, "libampclient.a"), dynamic=False)
        check_exports(find(prefix, "libampclient.so"), dynamic=True)
        for proto in ("amp.proto", "health.proto"):
            assert "/share/ampd/proto/" in find(prefix, proto), proto
        completion = os.path.join(prefix, "share", "bash-completion", "completions", "ampctl")
        with open(completion, encoding="utf-8") as f:
            assert "complete -o default -F _ampctl ampctl" in f.read(), completion
        find(prefix, "amp_version.h")
        for page in ("libampclient.3", "amp_process.3"):
            assert "/share/man/man3/" in find(prefix, page), page
        check_service_files(prefix)
        flags = sanitizer_flags()
        pc_exe = os.path.join(work, "consumer-pc")
        build_with_pkg_config(prefix, pc_exe, flags)
        cmake_exe = build_with_cmake(prefix, work, flags)
        os.environ["AMPD_BIN"] = find(prefix, "ampd")
        d = Daemon()
        try:
            for exe in (pc_exe, cmake_exe):
                print(run([exe, d.address]), end="")
        finally:
            assert d.stop() == 0, "the installed ampd did not exit cleanly"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("test_install: ok")


if __name__ == "__main__":
    main()
