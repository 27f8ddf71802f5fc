"""Properties of the running broker that no answer shows: neither it nor
enid-netd keeps the static cloud credentials of its configuration in
memory (only enid-cloudd uses them).  Each test runs enid in a throwaway
namespace."""
import re

from conftest import write_config


def wait_ready(enid):
    assert enid.wait_log("all processes ready", 10), enid.text()
    kids = enid.children()
    assert set(kids) == {"enid-netd", "enid-cloudd"}, (kids, enid.text())
    return kids


SECRET_KEY_ID = "AKIDENIDTEST" + "7Q" * 4
SECRET = "enid-test-secret-" + "x9Z" * 10
TOKEN = "enid-test-token-" + "Fq8" * 300


def memory_hits(pid, needles):
    """Which needles occur in pid's writable memory (root reads any).
    Mappings over 1 GiB are a sanitizer's shadow, reserved but holding no
    data of the program's: skipped.  Read in chunks that overlap by the
    longest needle, so that none is missed at a boundary."""
    chunk, overlap = 64 << 20, max(len(n) for n in needles)
    found = set()
    with open(f"/proc/{pid}/maps") as maps, \
            open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
            lo, hi, perms = int(m[1], 16), int(m[2], 16), m[3]
            if not perms.startswith("rw") or "[vvar]" in line or \
                    hi - lo > 1 << 30:
                continue
            for start in range(lo, hi, chunk):
                try:
                    mem.seek(start)
                    data = mem.read(min(chunk + overlap, hi - start))
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
