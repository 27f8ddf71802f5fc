"""Start-up refusal, SIGKILL leftovers and --cleanup, on a second small sim
with its own namespace prefix."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from conftest import VPCSIM, netns_list


def test_cleanup_after_crash(sim):
    prefix = sim.prefix + "c"
    state = tempfile.mkdtemp(prefix="vpcsim-crash-")
    p = subprocess.Popen([VPCSIM, "--nodes", "1", "--state", state, "--prefix", prefix],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(os.path.join(state, "endpoints.json")):
            assert p.poll() is None and time.monotonic() < deadline, "did not start"
            time.sleep(0.05)
        # a second sim with the same names refuses to start
        q = subprocess.run([VPCSIM, "--nodes", "1", "--state", state + "2", "--prefix",
                            prefix], capture_output=True, text=True, timeout=15)
        assert q.returncode == 2 and "--cleanup" in q.stderr
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(5)
    assert {prefix + "-vpc", prefix + "-out", prefix + "-peer",
            prefix + "-node-0"} <= set(netns_list())
    c = subprocess.run([VPCSIM, "--cleanup", "--prefix", prefix], capture_output=True,
                       text=True, timeout=30)
    assert c.returncode == 0, c.stderr
    assert not [n for n in netns_list() if n.startswith(prefix + "-")]
    shutil.rmtree(state, ignore_errors=True)
