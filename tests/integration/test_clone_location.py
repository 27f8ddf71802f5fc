"""The suite from a clone no unprivileged user can enter.

README.md says to run the tests as root from a clone of this repository,
and root's home (/root) is 0700, as is a `mktemp -d` directory.  enid's
user then cannot reach the clone, yet the tests have it run their build:
the broker execs enid-cloudd after dropping to it, a start without root
runs the broker as that user, a fake cni.sock is served as it.  conftest
copies what those users run to a place they can read (for_unprivileged);
here a copy of the tests and of the build, in a fresh 0700 directory,
runs one test of each kind as a newcomer's clone would.
"""
import os
import re
import shutil
import stat
import subprocess
import tempfile

from conftest import BUILDDIR, SRCDIR

# What the chosen tests run from a build, and the Makefile that tells a
# sanitizer build (conftest's _sanitized, for the time scale).
BUILT = ("Makefile", "broker/enid", "netd/enid-netd", "cloudd/enid-cloudd",
         "cni/enid-cni", "cni/enid-ipam", "ctl/enidctl",
         "tests/integration/netd_drive")

# One of each: the helpers exec'd by the dropped broker and the broker
# run as enid's user; a script served as another user (nobody).
TESTS = ("test_unprivileged.py::test_start_without_root",
         "test_cni_hostile.py::"
         "test_socket_served_by_another_user_gets_nothing[main]")


def copy_clone(top):
    """The source tree's tests (as they are now, not as last committed)
    and the build's programs, under top."""
    src = os.path.join(top, "enid")
    build = os.path.join(src, "build")
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for rel in ("tests/integration", "tests/vpcsim"):
        shutil.copytree(os.path.join(SRCDIR, rel), os.path.join(src, rel),
                        ignore=ignore, symlinks=True)
    for rel in BUILT:
        os.makedirs(os.path.join(build, os.path.dirname(rel)),
                    exist_ok=True)
        shutil.copy2(os.path.join(BUILDDIR, rel), os.path.join(build, rel))
    return src, build


def test_suite_runs_from_a_clone_under_a_0700_directory():
    top = tempfile.mkdtemp(prefix="enid-clone-")
    try:
        assert stat.S_IMODE(os.stat(top).st_mode) == 0o700
        src, build = copy_clone(top)
        assert subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "test", "-r", os.path.join(build, "broker/enid")]).returncode
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_", "ENID_"))}
        env["ENID_BUILDDIR"] = build
        here = os.path.join(src, "tests", "integration")
        r = subprocess.run(
            ["/usr/bin/python3", "-m", "pytest", "-q", "-p",
             "no:cacheprovider", "-o", "addopts=", *TESTS],
            cwd=here, env=env, capture_output=True, text=True, timeout=300)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-6000:]
        assert re.search(r"\b%d passed\b" % len(TESTS), out), out[-3000:]
        assert "Permission denied" not in out, out[-6000:]
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run_all_copy(top, tmpdir):
    """tests/run-all alone, copied under top, with TMPDIR set: nothing but
    its first checks can run there (no deps.sh beside it)."""
    os.makedirs(os.path.join(top, "enid", "tests"))
    script = os.path.join(top, "enid", "tests", "run-all")
    shutil.copy2(os.path.join(SRCDIR, "tests", "run-all"), script)
    env = dict(os.environ, TMPDIR=tmpdir)
    return subprocess.run(["sh", script], env=env, capture_output=True,
                          text=True, timeout=60)


def test_run_all_first_check_names_an_unreachable_tmpdir():
    top = tempfile.mkdtemp(prefix="enid-clone-")
    try:
        closed = tempfile.mkdtemp(prefix="enid-tmp-")     # 0700
        try:
            r = run_all_copy(top, closed)
        finally:
            os.rmdir(closed)
        assert r.returncode == 1, r
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert ("unprivileged users cannot enter the temporary directory "
                "%s" % closed) in lines[0], r.stderr
        assert "TMPDIR=/tmp" in lines[0], r.stderr

        # A clone out of their reach is said, and run-all goes on.
        shutil.rmtree(os.path.join(top, "enid"))
        r = run_all_copy(top, "/tmp")
        assert ("unprivileged users cannot enter %s/enid; the tests copy "
                "what they run to /tmp" % top) in r.stdout, r
        assert "dependencies" in r.stdout, r
    finally:
        shutil.rmtree(top, ignore_errors=True)
