"""Two properties of the running broker that no answer shows: it does not
burn CPU while it waits for a child to exit, and neither it nor enid-netd
keeps the static cloud credentials of its configuration in memory (only
enid-cloudd uses them).  Each test runs enid in a throwaway namespace."""
import os
import re
import signal
import struct
import time

from conftest import write_config

CLK_TCK = os.sysconf("SC_CLK_TCK")


def wait_ready(enid):
    assert enid.wait_log("all processes ready", 10), enid.text()
    kids = enid.children()
    assert set(kids) == {"enid-netd", "enid-cloudd"}, (kids, enid.text())
    return kids


def cpu_ticks(pid):
    """utime + stime of pid itself (a zombie's still readable)."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])      # fields 14 and 15


def wait_exit_unreaped(pid, timeout):
    """Block until pid has exited, leaving it a zombie so that its final
    CPU times can still be read."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG):
            return True
        time.sleep(0.005)
    return False


def test_shutdown_waits_without_spinning(start_enid):
    """A stopped child can't exit on SIGTERM, so the broker waits for its
    kill timer.  Meanwhile it must sleep: its end of the child's channel is
    shut down, readable at EOF, and must not keep waking the loop."""
    enid = start_enid()
    kids = wait_ready(enid)
    os.kill(kids["enid-netd"], signal.SIGSTOP)
    try:
        before = cpu_ticks(enid.pid)
        t0 = time.monotonic()
        enid.proc.send_signal(signal.SIGTERM)
        assert wait_exit_unreaped(enid.pid, 10), enid.text()
        wall = time.monotonic() - t0
        spent = (cpu_ticks(enid.pid) - before) / CLK_TCK
        rc = enid.proc.wait(timeout=5)
    finally:
        try:
            os.kill(kids["enid-netd"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    log = enid.text()
    assert f"enid-netd (pid {kids['enid-netd']}) did not exit; killing it" \
        in log, log
    assert rc == 0, log
    # The broker waited its grace period (400 ms); spinning, it would spend
    # most of it on the CPU.  A tenth of a second is a generous allowance
    # for the shutdown work itself on a loaded machine.
    assert wall >= 0.35, wall
    assert spent < 0.1, f"{spent:.2f}s of CPU in {wall:.2f}s of shutdown"


SECRET_KEY_ID = "AKIDENIDTEST" + "7Q" * 4
SECRET = "enid-test-secret-" + "x9Z" * 10
TOKEN = "enid-test-token-" + "Fq8" * 300


PAGE = os.sysconf("SC_PAGE_SIZE")


def held_runs(pagemap, lo, hi):
    """[(start, end)]: the runs of pages in lo..hi that hold data (present
    or swapped, pagemap(5)); a page never touched holds nothing."""
    runs = []
    pagemap.seek(lo // PAGE * 8)
    entries = pagemap.read((hi - lo) // PAGE * 8)
    for i, (e,) in enumerate(struct.iter_unpack("<Q", entries)):
        if not e & (3 << 62):
            continue
        at = lo + i * PAGE
        if runs and runs[-1][1] == at:
            runs[-1] = (runs[-1][0], at + PAGE)
        else:
            runs.append((at, at + PAGE))
    return runs


def memory_hits(pid, needles):
    """Which needles occur in pid's writable memory (root reads any).
    Mappings over 1 GiB are a sanitizer's shadow, reserved but holding no
    data of the program's: skipped; so are pages never touched, which
    reading would only fill with zeros.  Read in chunks that overlap by
    the longest needle, so that none is missed at a boundary."""
    chunk, overlap = 64 << 20, max(len(n) for n in needles)
    found = set()
    with open(f"/proc/{pid}/maps") as maps, \
            open(f"/proc/{pid}/mem", "rb", buffering=0) as mem, \
            open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pagemap:
        for line in maps:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
            lo, hi, perms = int(m[1], 16), int(m[2], 16), m[3]
            if not perms.startswith("rw") or "[vvar]" in line or \
                    hi - lo > 1 << 30:
                continue
            for rlo, rhi in held_runs(pagemap, lo, hi):
                for start in range(rlo, rhi, chunk):
                    try:
                        mem.seek(start)
                        data = mem.read(min(chunk + overlap, rhi - start))
                    except OSError:
                        continue
                    found.update(n for n in needles if n.encode() in data)
    return found


def test_static_credentials_only_in_cloudd(start_enid, workdir, enid_user):
    conf = write_config(workdir, enid_user, cloud={
        "access_key_id": SECRET_KEY_ID, "secret_access_key": SECRET,
        "session_token": TOKEN})
    enid = start_enid(conf=conf)
    kids = wait_ready(enid)
    needles = [SECRET_KEY_ID, SECRET, TOKEN]
    # cloudd keeps them: the scan can see a secret where there is one.
    assert memory_hits(kids["enid-cloudd"], needles) == set(needles)
    for name, pid in (("enid", enid.pid), ("enid-netd", kids["enid-netd"])):
        assert memory_hits(pid, needles) == set(), name
