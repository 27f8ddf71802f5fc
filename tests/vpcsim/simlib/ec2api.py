"""EC2 Query API front end: SigV4 verification, dispatch, XML rendering."""
import calendar
import hashlib
import hmac
import re
import time
import urllib.parse
import uuid
from xml.sax.saxutils import escape

from . import httpbase
from .model import ACCEPTS, Ec2Error, NAMESPACE

MAX_SKEW_S = 15 * 60
AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*SignedHeaders=([^,\s]+)\s*,"
    r"\s*Signature=([0-9a-fA-F]+)\s*$")


# ------------------------------------------------------------------ XML

def render(value, out, tag):
    if value is None:
        return
    if isinstance(value, dict):
        out.append("<%s>" % tag)
        for k, v in value.items():
            render(v, out, k)
        out.append("</%s>" % tag)
    elif isinstance(value, list):
        out.append("<%s>" % tag)
        for v in value:
            render(v, out, "item")
        out.append("</%s>" % tag)
    elif isinstance(value, bool):
        out.append("<%s>%s</%s>" % (tag, "true" if value else "false", tag))
    else:
        out.append("<%s>%s</%s>" % (tag, escape(str(value)), tag))


def success_xml(action, request_id, result):
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n',
           '<%sResponse xmlns="%s">' % (action, NAMESPACE),
           "<requestId>%s</requestId>" % request_id]
    for k, v in result.items():
        render(v, out, k)
    out.append("</%sResponse>" % action)
    return "".join(out)


def error_xml(code, message, request_id):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            "<Response><Errors><Error><Code>%s</Code><Message>%s</Message>"
            "</Error></Errors><RequestID>%s</RequestID></Response>"
            % (escape(code), escape(message), request_id))


# ------------------------------------------------------------------ SigV4

def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _uri_encode(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def canonical_query(query):
    pairs = []
    for part in query.split("&"):
        if not part:
            continue
        k, _, v = part.partition("=")
        k = urllib.parse.unquote_plus(k)
        v = urllib.parse.unquote_plus(v)
        pairs.append((_uri_encode(k), _uri_encode(v)))
    return "&".join("%s=%s" % kv for kv in sorted(pairs))


def verify_sigv4(sim, method, path, headers, body, now=None):
    """Check the request's SigV4 signature.  Returns the access key id.
    Raises Ec2Error(AuthFailure / RequestExpired).  Caller holds sim.lock."""
    now = now or time.time()
    auth = headers.get("Authorization")
    if not auth:
        raise Ec2Error("AuthFailure", "AWS was not able to validate the provided "
                       "access credentials (no Authorization header)")
    m = AUTH_RE.match(auth.strip())
    if not m:
        raise Ec2Error("AuthFailure", "Authorization header is malformed; expected "
                       "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., "
                       "Signature=...")
    credential, signed, signature = m.group(1), m.group(2), m.group(3).lower()
    parts = credential.split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        raise Ec2Error("AuthFailure", "Credential scope is malformed: %s" % credential)
    akid, date, region, service = parts[:4]
    if region != sim.region:
        raise Ec2Error("AuthFailure", "Credential should be scoped to a valid "
                       "region, not '%s'. " % region)
    if service != "ec2":
        raise Ec2Error("AuthFailure", "Credential should be scoped to correct "
                       "service: 'ec2', not '%s'." % service)
    amz_date = headers.get("X-Amz-Date")
    if not amz_date:
        raise Ec2Error("AuthFailure", "X-Amz-Date header is required")
    try:
        stamp = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise Ec2Error("AuthFailure", "X-Amz-Date '%s' is malformed" % amz_date)
    if amz_date[:8] != date:
        raise Ec2Error("AuthFailure", "Credential date %s does not match X-Amz-Date "
                       "%s" % (date, amz_date))
    if abs(now - stamp) > MAX_SKEW_S:
        raise Ec2Error("RequestExpired", "Request has expired.")
    signed_list = signed.split(";")
    if "host" not in signed_list:
        raise Ec2Error("AuthFailure", "SignedHeaders must include host")
    if signed_list != sorted(signed_list) or any(h != h.lower() for h in signed_list):
        raise Ec2Error("AuthFailure", "SignedHeaders must be lower case and sorted")

    cred = sim.creds.get(akid)
    if cred is None or cred["revoked"]:
        raise Ec2Error("AuthFailure", "AWS was not able to validate the provided "
                       "access credentials")
    token = headers.get("X-Amz-Security-Token")
    if cred["token"] is not None:
        if token is None:
            raise Ec2Error("AuthFailure", "AWS was not able to validate the provided "
                           "access credentials (missing security token)")
        if not hmac.compare_digest(token, cred["token"]):
            raise Ec2Error("AuthFailure", "The security token included in the "
                           "request is invalid.")
    elif token is not None:
        raise Ec2Error("AuthFailure", "The security token included in the request "
                       "is invalid.")

    canon_headers = []
    for name in signed_list:
        values = headers.get_all(name)
        if values is None:
            raise Ec2Error("AuthFailure", "Signed header '%s' is not present" % name)
        canon_headers.append("%s:%s\n" % (name, ",".join(
            " ".join(v.strip().split()) for v in values)))
    body_hash = hashlib.sha256(body).hexdigest()
    claimed = headers.get("X-Amz-Content-Sha256")
    if claimed is not None and claimed != "UNSIGNED-PAYLOAD" and claimed != body_hash:
        raise Ec2Error("AuthFailure", "The provided x-amz-content-sha256 header does "
                       "not match what was computed.")
    raw_path, _, query = path.partition("?")
    canon_uri = _uri_encode(urllib.parse.unquote(raw_path) or "/", safe="/-_.~")
    creq = "\n".join([method, canon_uri, canonical_query(query),
                      "".join(canon_headers), signed, body_hash])
    scope = "/".join(parts[1:])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
    key = ("AWS4" + cred["secret"]).encode()
    for piece in (date, region, service, "aws4_request"):
        key = _hmac(key, piece)
    expect = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expect, signature):
        raise Ec2Error("AuthFailure", "AWS was not able to validate the provided "
                       "access credentials (signature mismatch)")
    # Checked after the signature, as EC2 does: a valid but expired token.
    if cred["expires"] is not None and now >= cred["expires"]:
        raise Ec2Error("RequestExpired", "Request has expired.")
    return akid


# ------------------------------------------------------------------ handler

class Ec2Handler(httpbase.Handler):
    def do_POST(self):
        self._serve()

    def do_GET(self):
        self._serve()

    def _serve(self):
        t0 = time.monotonic()
        self._outcome = "-"
        try:
            self._serve_one()
        finally:
            if self.server.sim.cfg.verbose:
                self.server.log("ec2 %s %s %.1fms" % (self.client_address[0],
                                                      self._outcome,
                                                      (time.monotonic() - t0) * 1000))

    def _serve_one(self):
        rid = str(uuid.uuid4())
        action = "-"
        sim = self.server.sim
        try:
            try:
                body = self.read_body()
            except httpbase.BodyError as e:
                raise Ec2Error("InvalidParameterValue" if e.status != 413 else
                               "RequestEntityTooLarge", str(e), e.status)
            parse_error = None
            try:
                params = self._params(body)
            except Ec2Error as e:
                params, parse_error = {}, e
            action = params.get("Action") or "-"
            if not re.match(r"^[A-Za-z0-9]{1,64}$", action):
                action = "-"
            with sim.lock:
                sim.count(sim.calls, action)
                # Authentication first, as EC2 does; then the body's meaning.
                verify_sigv4(sim, self.command, self.path, self.headers, body)
                if parse_error:
                    raise parse_error
                if action == "-":
                    need_action = params.get("Action")
                    if need_action:
                        raise Ec2Error("InvalidAction", "The action is not valid "
                                       "for this web service.")
                    raise Ec2Error("MissingParameter",
                                   "The request must contain the parameter Action")
                latency, fault = sim.fault_for(action, params)
            if latency:
                time.sleep(latency)
            with sim.lock:
                if fault is not None:
                    if fault.code == "RequestLimitExceeded":
                        sim.count(sim.throttles, action)
                    raise fault
                if action in ACCEPTS:
                    sim.check_rate(action, params)
                sim.caller = self.client_address[0]
                try:
                    result = sim.call(action, params)
                finally:
                    sim.caller = None
                # Done: a rule "after" makes its answer late or an error.
                latency, fault = sim.fault_for(action, params, after=True)
            if latency:
                time.sleep(latency)
            if fault is not None:
                with sim.lock:
                    if fault.code == "RequestLimitExceeded":
                        sim.count(sim.throttles, action)
                raise fault
            self._outcome = "%s 200" % action
            self.send(200, success_xml(action, rid, result), "text/xml;charset=UTF-8",
                      [("x-amzn-RequestId", rid)])
        except Ec2Error as e:
            with sim.lock:
                sim.count(sim.errors, action, e.code)
            self._outcome = "%s %d %s" % (action, e.status, e.code)
            self.send(e.status, error_xml(e.code, e.message, rid),
                      "text/xml;charset=UTF-8", [("x-amzn-RequestId", rid)])
        except Exception as e:   # never a traceback to the client
            self.server.log("ec2 %s: internal error: %r" % (action, e))
            with sim.lock:
                sim.count(sim.errors, action, "InternalError")
            self.send(500, error_xml("InternalError", "An internal error has "
                                     "occurred", rid), "text/xml;charset=UTF-8")

    def _params(self, body):
        raw = body
        if self.command == "GET" or not body:
            raw = self.path.partition("?")[2].encode("latin-1", "replace")
        ctype = self.headers.get("Content-Type", "")
        if self.command == "POST" and body and ctype and \
                "x-www-form-urlencoded" not in ctype.lower():
            raise Ec2Error("InvalidParameterValue",
                           "Unsupported Content-Type '%s'" % ctype[:100])
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Ec2Error("InvalidParameterValue", "Request body is not valid UTF-8")
        params = {}
        try:
            pairs = urllib.parse.parse_qsl(text, keep_blank_values=True,
                                           max_num_fields=5000)
        except ValueError as e:
            raise Ec2Error("InvalidParameterValue", "Malformed request body: %s" % e)
        for k, v in pairs:
            params[k] = v
        return params


