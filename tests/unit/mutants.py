#!/usr/bin/python3
"""A small mutation check for the edge tests: each mutant is a one-line
change that the tests must catch (a bound loosened by one, a character
let through unencoded, a rate taken from the wrong field).

For a mutant, the changed source file is compiled from a copy in a
temporary directory and linked ahead of the build's libraries, so the
source tree and the build tree are never touched.  The unit tests named
for it then run, and must fail.  enidctl's mutants are checked by
tests/integration/test_enidctl.py against a mutated enidctl.

    tests/unit/mutants.py [--builddir DIR] [NAME-SUBSTRING...]
    make mutants                     (from the build directory)

Exit status 0 if every mutant was caught, 1 if one survived."""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SRCDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# (name, file, text, replacement, tests)
MUTANTS = [
    # common/conf.c
    ("conf: equal rule priorities accepted", "common/conf.c",
     "rule_priority_to >= cfg->routing.rule_priority_from",
     "rule_priority_to > cfg->routing.rule_priority_from", ["test_config"]),
    ("conf: a string filling its field accepted", "common/conf.c",
     "if (len >= size)", "if (len > size)", ["test_config"]),
    ("conf: integer minimum loosened", "common/conf.c",
     "n < (int64_t)k->min ||", "n < (int64_t)k->min - 1 ||",
     ["test_config"]),
    ("conf: integer maximum loosened", "common/conf.c",
     "n > (int64_t)k->max)", "n > (int64_t)k->max + 1)", ["test_config"]),
    ("conf: one range in the table off by one", "common/conf.c",
     "pool.add_timeout_s, 1, 600", "pool.add_timeout_s, 1, 601",
     ["test_config"]),
    ("conf: 17 subnets accepted", "common/conf.c",
     "if (n > CONF_MAX_SUBNETS)", "if (n > CONF_MAX_SUBNETS + 1)",
     ["test_config"]),
    ("conf: 8 security groups refused", "common/conf.c",
     "json_object_array_length(sgs) > CONF_MAX_SGS",
     "json_object_array_length(sgs) >= CONF_MAX_SGS", ["test_config"]),
    ("conf: minimum_ip_target equal to max_pods refused", "common/conf.c",
     "cfg->pool.minimum_ip_target > cfg->pool.max_pods",
     "cfg->pool.minimum_ip_target >= cfg->pool.max_pods", ["test_config"]),
    ("conf: a file of exactly the cap refused", "common/conf.c",
     "if (len > ENID_CONF_MAX_BYTES)", "if (len >= ENID_CONF_MAX_BYTES)",
     ["test_config"]),
    ("conf: a path ending in /.. taken", "common/conf.c",
     "!(n >= 3 && strcmp(p + n - 3, \"/..\") == 0)", "n > 0",
     ["test_config"]),
    ("conf: a bare id prefix taken", "common/conf.c",
     "strncmp(s, prefix, n) != 0 || s[n] == '\\0'",
     "strncmp(s, prefix, n) != 0", ["test_config"]),
    ("conf: the session token not wiped", "common/conf.c",
     "explicit_bzero(cfg->cloud.session_token,",
     "explicit_bzero(cfg->cloud.session_token, 0 *", ["test_config"]),
    # cloudd/ec2_xml.c
    ("xml: a field filling its buffer accepted", "cloudd/ec2_xml.c",
     "p->tlen >= size", "p->tlen > size", ["test_cloudd_xml"]),
    ("xml: one list entry over the cap", "cloudd/ec2_xml.c",
     "if (a->nitems >= max) {", "if (a->nitems > max) {",
     ["test_cloudd_xml"]),
    ("xml: 65 addresses on an ENI", "cloudd/ec2_xml.c",
     "if (e->naddrs == MSG_MAX_ENI_ADDRS)",
     "if (e->naddrs == MSG_MAX_ENI_ADDRS + 1)", ["test_cloudd_xml"]),
    ("xml: 9 security groups on an ENI", "cloudd/ec2_xml.c",
     "if (e->ngroups == MSG_MAX_SGS)", "if (e->ngroups == MSG_MAX_SGS + 1)",
     ["test_cloudd_xml"]),
    ("xml: 65 ENIs on an instance", "cloudd/ec2_xml.c",
     "in->nenis == EC2_MAX_INSTANCE_ENIS",
     "in->nenis == EC2_MAX_INSTANCE_ENIS + 1", ["test_cloudd_xml"]),
    ("xml: 65 assigned addresses", "cloudd/ec2_xml.c",
     "if (a->naddrs == MSG_MAX_ENI_ADDRS)",
     "if (a->naddrs == MSG_MAX_ENI_ADDRS + 1)", ["test_cloudd_xml"]),
    ("xml: one level deeper", "cloudd/ec2_xml.c",
     "if (p->depth == EC2_MAX_DEPTH) {",
     "if (p->depth == EC2_MAX_DEPTH + 1) {", ["test_cloudd_xml"]),
    ("xml: a body of exactly the cap refused", "cloudd/ec2_xml.c",
     "if (len > EC2_MAX_BODY) {", "if (len >= EC2_MAX_BODY) {",
     ["test_cloudd_xml"]),
    ("xml: the element path one byte shorter", "cloudd/ec2_xml.c",
     "len + 1 + n >= sizeof(p->path)", "len + 2 + n >= sizeof(p->path)",
     ["test_cloudd_xml"]),
    # cloudd/ec2_query.c
    ("query: '+' sent unencoded", "cloudd/ec2_query.c",
     "c == '.' || c == '~';", "c == '.' || c == '~' || c == '+';",
     ["test_cloudd_query"]),
    ("query: '-' encoded", "cloudd/ec2_query.c",
     "isalnum(c) || c == '-' ||", "isalnum(c) ||", ["test_cloudd_query"]),
    ("query: lower-case hex", "cloudd/ec2_query.c",
     "hex[] = \"0123456789ABCDEF\"", "hex[] = \"0123456789abcdef\"",
     ["test_cloudd_query"]),
    ("query: a 41-character id", "cloudd/ec2_query.c",
     "i - n <= 40", "i - n <= 41", ["test_cloudd_query"]),
    ("query: 50 secondary addresses", "cloudd/ec2_query.c",
     "if (m->nsecondary > 49)", "if (m->nsecondary > 50)",
     ["test_cloudd_query"]),
    ("query: device index 101", "cloudd/ec2_query.c",
     "m->device_index > 100", "m->device_index > 101",
     ["test_cloudd_query"]),
    ("query: assign count 50", "cloudd/ec2_query.c",
     "m->count > 49", "m->count > 50", ["test_cloudd_query"]),
    ("query: an 11-digit number", "cloudd/ec2_query.c",
     "|| i >= 10)", "|| i >= 11)", ["test_cloudd_query"]),
    ("query: DEL in a tag", "cloudd/ec2_query.c",
     "(unsigned char)s[i] < 0x20 || s[i] == 0x7f",
     "(unsigned char)s[i] < 0x20", ["test_cloudd_query"]),
    ("query: a 64-character code", "cloudd/ec2_query.c",
     "return i > 0 && i < MSG_CODE_LEN;", "return i > 0 && i <= MSG_CODE_LEN;",
     ["test_cloudd_query"]),
    ("query: HTTP 500 not transient", "cloudd/ec2_query.c",
     "http_status >= 500", "http_status > 500", ["test_cloudd_query"]),
    # cloudd/ratelimit.c
    ("ratelimit: refill at the base rate after a throttle",
     "cloudd/ratelimit.c", "b->tokens += dt * b->rate;",
     "b->tokens += dt * b->base_rate;", ["test_cloudd_ratelimit"]),
    ("ratelimit: the past refills", "cloudd/ratelimit.c",
     "if (now <= b->last_ms)\n\t\treturn;", "", ["test_cloudd_ratelimit"]),
    ("ratelimit: a lower floor", "cloudd/ratelimit.c",
     "b->base_rate * RL_MIN_FRACTION;", "b->base_rate * 0.2;",
     ["test_cloudd_ratelimit"]),
    ("ratelimit: wait one ms short", "cloudd/ratelimit.c",
     "return (uint64_t)need + 1;", "return (uint64_t)need;",
     ["test_cloudd_ratelimit"]),
    ("ratelimit: recovery not capped", "cloudd/ratelimit.c",
     "if (b->rate > b->base_rate)\n\t\tb->rate = b->base_rate;", "",
     ["test_cloudd_ratelimit"]),
    ("ratelimit: backoff never reaches its ceiling", "cloudd/ratelimit.c",
     "rnd % (ceiling + 1)", "rnd % ceiling", ["test_cloudd_ratelimit"]),
    # common/addr.c
    ("addr: a prefix with a leading zero", "common/addr.c",
     "(slash[1] == '0' && slash[2] != '\\0')", "0", ["test_addr"]),
    ("addr: prefix 33", "common/addr.c",
     "n < 0 || n > 32", "n < 0 || n > 33", ["test_addr"]),
    ("addr: mask one bit short", "common/addr.c",
     "0xffffffffu << (32 - prefix)", "0xffffffffu << (33 - prefix)",
     ["test_addr"]),
    ("addr: the last MAC separator unchecked", "common/addr.c",
     "if (i < 5 && s[i * 3 + 2] != ':')", "if (i < 4 && s[i * 3 + 2] != ':')",
     ["test_addr"]),
    ("addr: upper-case F refused", "common/addr.c",
     "c >= 'A' && c <= 'F'", "c >= 'A' && c < 'F'", ["test_addr"]),
    ("addr: containment ignores the address's host bits", "common/addr.c",
     "(net & m) == (addr & m)", "(net & m) == addr", ["test_addr"]),
]

# enidctl: checked by the integration test against a mutated binary.
CTL_MUTANTS = [
    ("enidctl: data after the line taken", "*linelen + 1 != len ||", ""),
    ("enidctl: blanks around the object taken",
     "answer[0] != '{' || answer[len - 1] != '}'", "0"),
    ("enidctl: C1 controls printed raw", "||\n\t    (c >= 0x80 && c <= 0x9f))",
     ")"),
    ("enidctl: strings not escaped", "\tescape_tree(ans);\n", ""),
    ("enidctl: a NUL in the line taken",
     "memchr(buf, '\\0', *linelen) != NULL", "0"),
]


def make_vars(builddir):
    """NAME = value lines of the build's Makefile."""
    out = {}
    with open(os.path.join(builddir, "Makefile")) as f:
        for line in f:
            m = re.match(r"^([A-Z_][A-Z0-9_]*) = ?(.*)$", line.rstrip("\n"))
            if m:
                out[m[1]] = m[2]
    return out


def mutate(path, old, new):
    with open(os.path.join(SRCDIR, path)) as f:
        text = f.read()
    if text.count(old) != 1:
        raise SystemExit(f"mutants: {path}: {old!r} found "
                         f"{text.count(old)} times, not once; update "
                         "the mutant")
    return text.replace(old, new)


class Builder:
    def __init__(self, builddir, tmp):
        v = make_vars(builddir)
        self.builddir = builddir
        self.tmp = tmp
        self.cc = shlex.split(v["CC"])
        self.cflags = shlex.split(" ".join(v.get(k, "") for k in (
            "CFLAGS", "WARN_CFLAGS", "SAN_CFLAGS", "CMOCKA_CFLAGS",
            "JSONC_CFLAGS", "EXPAT_CFLAGS")))
        # a mutant may well draw a warning; it is not the point
        self.cflags = [f for f in self.cflags if f != "-Werror"]
        self.cflags += ["-include", os.path.join(builddir, "config.h"),
                        "-I" + os.path.join(SRCDIR, "common"),
                        "-I" + os.path.join(SRCDIR, "cloudd")]
        self.ldflags = shlex.split(v.get("SAN_LDFLAGS", ""))
        self.libs = [os.path.join(builddir, "cloudd", "libcloudd.a"),
                     os.path.join(builddir, "common", "libenidcommon.a")]
        self.libs += shlex.split(" ".join(v.get(k, "") for k in (
            "CMOCKA_LIBS", "EXPAT_LIBS", "JSONC_LIBS", "SECCOMP_LIBS",
            "CAP_LIBS", "CURL_LIBS")))

    def program(self, out, sources):
        """Compile and link sources (paths) ahead of the build's libraries."""
        r = subprocess.run(self.cc + self.cflags + ["-o", out] + sources +
                           self.ldflags + self.libs,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("mutants: compiling %s failed:\n%s" %
                             (out, r.stderr))

    def unit(self, test, mutated=None):
        """Build tests/unit/<test>, with one source file replaced."""
        sources = [os.path.join(SRCDIR, "tests", "unit", test + ".c")]
        if mutated is not None:
            path, text = mutated
            copy = os.path.join(self.tmp, os.path.basename(path))
            with open(copy, "w") as f:
                f.write(text)
            sources.append(copy)
        out = os.path.join(self.tmp, test)
        self.program(out, sources)
        return out


def run_unit(binary):
    r = subprocess.run([binary], capture_output=True, text=True,
                       timeout=300)
    return r.returncode == 0


def run_enidctl_test(tmp):
    env = dict(os.environ, ENID_BUILDDIR=tmp)
    r = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-x",
                        "-p", "no:cacheprovider",
                        os.path.join(SRCDIR, "tests", "integration",
                                     "test_enidctl.py")],
                       cwd=os.path.join(SRCDIR, "tests", "integration"),
                       env=env, capture_output=True, text=True, timeout=300)
    return r.returncode == 0, r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builddir", default=os.path.join(SRCDIR, "build"))
    ap.add_argument("only", nargs="*")
    args = ap.parse_args()
    builddir = os.path.abspath(args.builddir)
    tmp = tempfile.mkdtemp(prefix="enid-mutants-")
    survived = 0
    try:
        b = Builder(builddir, tmp)
        pick = [m for m in MUTANTS
                if not args.only or any(o in m[0] for o in args.only)]
        for test in sorted({t for m in pick for t in m[4]}):
            if not run_unit(b.unit(test)):
                raise SystemExit(f"mutants: {test} fails unmutated")
        for name, path, old, new, tests in pick:
            text = mutate(path, old, new)
            caught = [t for t in tests
                      if not run_unit(b.unit(t, (path, text)))]
            print(("caught   " if caught else "SURVIVED ") + name)
            survived += not caught

        ctl = [m for m in CTL_MUTANTS
               if not args.only or any(o in m[0] for o in args.only)]
        if ctl:
            if os.geteuid() != 0:
                print("(enidctl mutants skipped: the integration tests "
                      "need root)")
                ctl = []
            os.makedirs(os.path.join(tmp, "ctl"), exist_ok=True)
            binary = os.path.join(tmp, "ctl", "enidctl")
        if ctl:
            b.program(binary, [os.path.join(SRCDIR, "ctl", "enidctl.c")])
            ok, out = run_enidctl_test(tmp)
            if not ok:
                raise SystemExit("mutants: test_enidctl fails unmutated:\n"
                                 + out)
        for name, old, new in ctl:
            copy = os.path.join(tmp, "enidctl.c")
            with open(copy, "w") as f:
                f.write(mutate("ctl/enidctl.c", old, new))
            b.program(binary, [copy])
            ok, _ = run_enidctl_test(tmp)
            print(("SURVIVED " if ok else "caught   ") + name)
            survived += ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    total = len(pick) + len(ctl)
    print(f"{total - survived} of {total} mutants caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
