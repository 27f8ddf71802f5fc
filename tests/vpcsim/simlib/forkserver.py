"""vpcsim's fork server: `vpcsim --fork-server`.

The integration tests start a sim a few hundred times a run, and each
fresh interpreter spends about 0.15 s of CPU importing http.server, ssl,
email and simlib before it does anything.  The fork server pays that
once: it is started with everything imported (vpcsim imports all of
simlib at the top), and forks a child per sim, which runs vpcsim's main()
as a fresh process would.

Protocol: one JSON object a line on stdin, one answer a line on stdout.

    {"argv": [...], "log": PATH, "cwd": DIR, "env": {...}, "setsid": false}
        -> {"pid": N} or {"error": "..."}
    A child with stdin /dev/null, stdout and stderr the log (truncated),
    no other descriptor, the signal dispositions the server started with,
    in cwd (default: the server's), with env as its environment (default:
    the server's), in a session of its own if setsid; it runs main(argv)
    and exits with its status.  "pid" is sent once the child is set up:
    an error in setting up is the answer instead.
    {"wait": N}
        -> {"pid": N, "returncode": R} (R as in subprocess: -SIG if killed),
        or {"error": "..."} if N is still running or not a child of ours.

The server exits at EOF on stdin (the test process went away); children
still running go on, as a sim started by a test that died would.

A child is the server's copy, and so differs from a fresh interpreter
only in what the server did after it started, which is nothing but
imports, reading requests and ignoring SIGINT (undone in the child); the
random module reseeds itself in a child.  What it cannot differ in: the
interpreter's start-up environment (PYTHON*, the locale), which the
client compares, and str hashes, which are seeded once per server rather
than per sim.  Its command line (/proc/PID/cmdline) stays the server's.

It is single-threaded and opens nothing before it forks (a thread or a
lock held by one would not survive the fork; an open descriptor would
leak into every sim).  It reaps its exited children at every request,
and keeps their status until asked.  It does not reap them between
requests: the client opens a pidfd on a pid it was given before it sends
the next request, so the pid cannot be reaped, and then reused by
another process, before the client holds the pidfd.
"""
import atexit
import json
import os
import signal
import sys
import traceback


class SetupError(Exception):
    """A child could not be set up; the message is the child's."""


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


class Server:
    def __init__(self, main):
        self.main = main
        self.sigint = signal.getsignal(signal.SIGINT)
        self.statuses = {}      # pid: returncode, reaped and not yet asked
        self.children = set()   # pids forked and not yet reaped
        self.pending = b""

    def read_request(self):
        """The next line of stdin, or None at EOF.  Read with os.read, so
        that no buffered bytes of it are left in sys.stdin for a child."""
        while b"\n" not in self.pending:
            more = os.read(0, 65536)
            if not more:
                return None
            self.pending += more
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def reap(self):
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                self.children.discard(pid)
                continue
            if done:
                self.children.discard(pid)
                self.statuses[pid] = os.waitstatus_to_exitcode(status)

    def run(self):
        # ^C at a terminal goes to the whole process group: the sims stop
        # on it, and the test process closes our stdin; the server itself
        # has nothing to stop early.  Its children get SIGINT back.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            line = self.read_request()
            self.reap()
            if line is None:
                return 0
            try:
                req = json.loads(line)
                if not isinstance(req, dict):
                    raise ValueError("not an object")
                if "wait" in req:
                    answer = self.wait(req["wait"])
                else:
                    answer = {"pid": self.spawn(req)}
            except SetupError as e:
                answer = {"error": str(e)}
            except Exception as e:
                answer = {"error": "%s: %s" % (type(e).__name__, e)}
            _write_all(1, json.dumps(answer).encode() + b"\n")

    def wait(self, pid):
        if pid in self.statuses:
            return {"pid": pid, "returncode": self.statuses.pop(pid)}
        return {"error": "pid %r is %s" % (pid, "running" if pid in
                                            self.children else "not ours")}

    def spawn(self, req):
        argv = req.get("argv")
        if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
            raise ValueError("argv must be a list of strings")
        if not isinstance(req.get("log"), str):
            raise ValueError("log must be a path")
        env = req.get("env")
        if env is not None and not (isinstance(env, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise ValueError("env must map strings to strings")
        # The child tells what went wrong in setting up on this pipe; it
        # closes it (with every other descriptor) when set up.
        rfd, wfd = os.pipe2(os.O_CLOEXEC)
        try:
            pid = os.fork()
        except BaseException:
            os.close(rfd)
            os.close(wfd)
            raise
        if pid == 0:
            try:
                os.close(rfd)
                self.child(req, wfd)        # never returns
            finally:
                os._exit(127)
        os.close(wfd)
        self.children.add(pid)
        err = b""
        try:
            while True:
                more = os.read(rfd, 4096)
                if not more:
                    break
                err += more
        finally:
            os.close(rfd)
        if err:
            os.waitpid(pid, 0)
            self.children.discard(pid)
            raise SetupError(err.decode(errors="replace"))
        return pid

    def child(self, req, errfd):
        """Become the process `/usr/bin/python3 vpcsim ARGV` would be, then
        run it: what a fresh interpreter would differ in is set here."""
        try:
            if req.get("setsid"):
                os.setsid()
            if req.get("cwd") is not None:
                os.chdir(req["cwd"])
            logfd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                            0o666)
            nullfd = os.open(os.devnull, os.O_RDONLY)
            os.dup2(nullfd, 0)
            os.dup2(logfd, 1)
            os.dup2(logfd, 2)
            if req.get("env") is not None:
                os.environ.clear()
                os.environ.update(req["env"])
            # sys.argv[0] is the script as the server was started with it.
            sys.argv[1:] = req["argv"]
            # What the interpreter set up at start (default_int_handler,
            # or SIG_IGN inherited), which run() changed.
            signal.signal(signal.SIGINT, self.sigint)
        except BaseException as e:
            try:
                _write_all(errfd, ("%s: %s" % (type(e).__name__, e)).encode())
            finally:
                os._exit(127)
        # The last step of setting up: this closes errfd too, which tells
        # the server the child is running.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os._exit(_run_main(self.main))


def _run_main(main):
    """Run main as `sys.exit(main(sys.argv[1:]))` at the end of the script
    runs in a fresh interpreter, and end as that interpreter would: the
    same exit status, an uncaught exception's traceback on stderr, atexit
    handlers run and stdout and stderr flushed.  The status to _exit
    with."""
    try:
        try:
            status = main(sys.argv[1:])
        except SystemExit as e:
            status = e.code
        if status is None:
            status = 0
        elif not isinstance(status, int):
            print(status, file=sys.stderr)
            status = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        status = 128 + signal.SIGINT
        # Python ends on an uncaught ^C by killing itself with SIGINT.
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return status
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    _finish()
    return status & 0xff


def _finish():
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


def serve(main):
    return Server(main).run()
