"""What a process costs while it waits: CPU time and wakeups, read from
/proc for every thread of it.

    before = procstat.sample(pids)
    time.sleep(60)
    cost = procstat.cost(before, procstat.sample(pids))
    cost["enid"]["cpu_pct"], cost["enid"]["wakeups_per_s"]

CPU time is the first field of /proc/PID/task/TID/schedstat: nanoseconds
on a CPU, exact, for each thread alive at the second sample (a thread
born in between counts from nothing).  A thread that ended in between is
missed; "threads_ended" counts them, so a reader knows.  (utime+stime
in /proc/PID/stat keeps them, but in clock ticks charged to whoever runs
at the tick: no use for a process that runs a few microseconds a
second.)  A wakeup is a context switch of one of its threads,
voluntary (it slept and was woken) or not.  Used by the idle test
(test_idle.py) and the idle benchmark (tests/bench/bench_idle).
"""
import os
import time


def _task(pid, tid):
    base = "/proc/%d/task/%d/" % (pid, tid)
    with open(base + "schedstat") as f:
        ns = int(f.read().split()[0])
    switches = 0
    with open(base + "status") as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches",
                                "nonvoluntary_ctxt_switches")):
                switches += int(line.split()[1])
    return ns, switches


def sample(pids):
    """{name: (monotonic s, {tid: (cpu ns, switches)})}
    for each name -> pid of pids."""
    out = {}
    for name, pid in pids.items():
        tasks = {}
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                tasks[int(t)] = _task(pid, int(t))
            except (FileNotFoundError, ProcessLookupError):
                pass            # a thread that ended just now
        out[name] = (time.monotonic(), tasks)
    return out


def cost(before, after):
    """{name: {"seconds", "cpu_s", "cpu_pct", "wakeups",
    "wakeups_per_s", "threads", "threads_ended"}} between two samples of
    the same pids."""
    out = {}
    for name, (t0, tasks0) in before.items():
        t1, tasks1 = after[name]
        ns = sum(tasks1[t][0] - tasks0[t][0] for t in tasks1 if t in tasks0)
        sw = sum(tasks1[t][1] - tasks0[t][1] for t in tasks1 if t in tasks0)
        # Threads born in between count from nothing.
        ns += sum(v[0] for t, v in tasks1.items() if t not in tasks0)
        sw += sum(v[1] for t, v in tasks1.items() if t not in tasks0)
        cpu = ns / 1e9
        secs = t1 - t0
        out[name] = {"seconds": secs, "cpu_s": cpu,
                     "cpu_pct": 100.0 * cpu / secs, "wakeups": sw,
                     "wakeups_per_s": sw / secs, "threads": len(tasks1),
                     "threads_ended": len(set(tasks0) - set(tasks1))}
    return out


def total(costs):
    """The sum over the processes of a cost() answer."""
    secs = max(c["seconds"] for c in costs.values())
    cpu = sum(c["cpu_s"] for c in costs.values())
    sw = sum(c["wakeups"] for c in costs.values())
    return {"seconds": secs, "cpu_s": cpu, "cpu_pct": 100.0 * cpu / secs,
            "wakeups": sw, "wakeups_per_s": sw / secs}
