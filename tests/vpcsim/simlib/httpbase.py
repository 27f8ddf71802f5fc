"""Shared HTTP plumbing: a threaded HTTP/1.1 server that never lets an
exception reach a client, with bounded body reading."""
import http.server
import socket
import socketserver
import sys

MAX_BODY = 1 << 20


class BodyError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, addr, handler, sim, log, **extra):
        self.sim = sim
        self.log = log
        self.extra = extra
        super().__init__(addr, handler)

    def server_bind(self):
        # HTTPServer's own asks DNS for the address's name (getfqdn): a
        # query from inside the router would go out of the VPC.
        socketserver.TCPServer.server_bind(self)
        self.server_name = self.server_address[0]
        self.server_port = self.server_address[1]

    def handle_error(self, request, client_address):
        # Default prints a traceback to stderr; keep one line instead.
        self.log("http %s: %r" % (client_address, sys.exc_info()[1]))


class Server6(Server):
    """The same on an IPv6 address ((addr, port) as for IPv4)."""
    address_family = socket.AF_INET6


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "vpcsim"
    sys_version = ""
    timeout = 120            # idle keep-alive connections close after this
    # Headers and body go out in separate writes; with Nagle on, the body
    # waits for the client's delayed ACK (~40 ms a call on keep-alive).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if te.lower() == "chunked":
            return self._read_chunked()
        if te:
            raise BodyError(501, "unsupported Transfer-Encoding")
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b""
        try:
            n = int(cl)
        except ValueError:
            self.close_connection = True
            raise BodyError(400, "bad Content-Length")
        if n < 0 or n > MAX_BODY:
            self.close_connection = True
            raise BodyError(413, "body too large")
        data = self.rfile.read(n)
        if len(data) != n:
            self.close_connection = True
            raise BodyError(400, "short body")
        return data

    def _read_chunked(self):
        out = bytearray()
        for _ in range(100000):
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise BodyError(400, "bad chunk")
            if size == 0:
                for _ in range(100):                # trailers
                    if self.rfile.readline(1024) in (b"\r\n", b"\n", b""):
                        break
                return bytes(out)
            if len(out) + size > MAX_BODY:
                self.close_connection = True
                raise BodyError(413, "body too large")
            out += self.rfile.read(size)
            self.rfile.readline(8)
        self.close_connection = True
        raise BodyError(400, "too many chunks")

    def send(self, status, body, ctype, headers=()):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_error(self, code, message=None, explain=None):
        # Replaces the stdlib HTML error page (parse errors, bad methods).
        try:
            self.close_connection = True
            if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
                self.request_version = "HTTP/1.0"     # so a status line is sent
            if not hasattr(self, "command") or self.command is None:
                self.command = "GET"
            self.send(code, (message or "error") + "\n", "text/plain")
        except Exception:
            pass
