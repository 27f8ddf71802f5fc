"""A stand-in for enid's cni.sock that answers as a compromised broker
would, for test_cni_hostile.py.  Run as the user the test names (it
listens as that user, so SO_PEERCRED shows it):

    fake_cnisock.py SOCKET SCRIPT LOG

Each connection: read the request line (or nothing: the client may close
first), append {"op", "request", "bytes"} to LOG as one JSON line, then
answer.  An "add" is answered as SCRIPT (a JSON file, read anew each
time) says:
    {"answer": TEXT}         the bytes of TEXT (latin-1) as they are
    {"drip_ms": N}           one byte every N ms
    {"close_after": N}       only the first N bytes, then close
Every other op gets {"ok":true} (or SCRIPT's "other" text).
"""
import json
import os
import socket
import sys
import time


def main():
    path, script, log = sys.argv[1:4]
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o666)
    srv.listen(64)
    print("ready", flush=True)
    while True:
        c, _ = srv.accept()
        c.settimeout(10)
        data = b""
        try:
            while not data.endswith(b"\n"):
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        try:
            req = json.loads(data)
            op = req.get("op")
        except ValueError:
            req, op = None, None
        with open(log, "a") as f:
            f.write(json.dumps({"op": op, "request": req,
                                "bytes": len(data)}) + "\n")
        if op is None:
            c.close()
            continue
        with open(script) as f:
            s = json.load(f)
        if op != "add":
            text = s.get("other", '{"ok":true}\n').encode("latin-1")
            s = {}
        else:
            text = s["answer"].encode("latin-1")
        try:
            if "drip_ms" in s:
                for i in range(len(text)):
                    c.sendall(text[i:i + 1])
                    time.sleep(s["drip_ms"] / 1000.0)
            elif "close_after" in s:
                c.sendall(text[:s["close_after"]])
            else:
                c.sendall(text)
        except OSError:
            pass
        c.close()


if __name__ == "__main__":
    main()
