"""The broker's layers (doc/design.md, "The broker's layers") and the
check that holds the code to them, tests/layers: it passes on the build,
and fails on each thing it is there to catch, shown on objects compiled
here and on the build's own objects with a map that places a file
wrongly."""
import os
import re
import shutil
import subprocess


from conftest import BUILDDIR, SRCDIR

LAYERS = os.path.join(SRCDIR, "tests", "layers")
DESIGN = os.path.join(SRCDIR, "doc", "design.md")
MARKER = "The broker's files, in their layers from the top"


def run(build, src=SRCDIR, design=None):
    args = ["/usr/bin/python3", LAYERS, "--src", src]
    if design:
        args += ["--design", design]
    r = subprocess.run(args + [build], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout + r.stderr


def the_map():
    """The design's block: [(layer, [files])], the top first."""
    with open(DESIGN) as f:
        text = f.read()
    block = text[text.index(MARKER):].split("```")[1]
    return [(w[0], w[1:]) for w in
            (line.split() for line in block.splitlines()) if w]


def design_with(tmp_path, layers):
    """A design of its own whose block is layers."""
    path = tmp_path / "design.md"
    path.write_text(MARKER + ":\n\n```\n" + "".join(
        "%s %s\n" % (name, " ".join(files)) for name, files in layers) +
        "```\n")
    return str(path)


def test_the_broker_holds_to_its_layers():
    rc, out = run(BUILDDIR)
    assert rc == 0, out
    assert re.search(r"\d+ broker files in 4 layers \(handlers, engine, "
                     r"store, base\), \d+ references between files, none "
                     r"upward", out), out


def tree(tmp_path, sources):
    """A source tree of broker files and a build of them: {name: code}."""
    src, build = tmp_path / "src", tmp_path / "build"
    (src / "broker").mkdir(parents=True)
    (build / "broker").mkdir(parents=True)
    cc = os.environ.get("CC", "cc")
    for name, code in sources.items():
        (src / "broker" / name).write_text(code)
        # named as automake names a per-target object
        subprocess.run([cc, "-c", "-o",
                        str(build / "broker" / ("enid-" + name[:-2] + ".o")),
                        str(src / "broker" / name)], check=True, timeout=60)
    return str(src), str(build)


HIGH = "int low(void);\nint high(void) { return low() + 1; }\n"
LOW = "int low(void) { return 1; }\n"
LOW_CALLING_UP = ("int high(void);\n"
                  "int low(void) { return 1; }\n"
                  "int low_more(void) { return high(); }\n")


def test_a_call_down_passes_and_one_up_fails(tmp_path):
    top_down = [("top", ["high.c"]), ("bottom", ["low.c"])]
    src, build = tree(tmp_path / "down", {"high.c": HIGH, "low.c": LOW})
    rc, out = run(build, src, design_with(tmp_path, top_down))
    assert rc == 0, out
    assert "2 broker files in 2 layers (top, bottom), 1 reference " \
        "between files, none upward" in out, out

    # the same files with the layers the other way round
    rc, out = run(build, src, design_with(
        tmp_path, [("top", ["low.c"]), ("bottom", ["high.c"])]))
    assert rc == 1, out
    assert "broker/high.c (bottom) calls up into broker/low.c (top): " \
        "low" in out, out

    # an upward call injected into the lower file
    src, build = tree(tmp_path / "up", {"high.c": HIGH,
                                        "low.c": LOW_CALLING_UP})
    rc, out = run(build, src, design_with(tmp_path, top_down))
    assert rc == 1, out
    assert "broker/low.c (bottom) calls up into broker/high.c (top): " \
        "high" in out, out
    assert "none upward" not in out, out


def test_an_unplaced_or_unknown_file_fails(tmp_path):
    src, build = tree(tmp_path, {"high.c": HIGH, "low.c": LOW,
                                 "new.c": "int new_one(void) { return 0; }\n"})
    rc, out = run(build, src, design_with(
        tmp_path, [("top", ["high.c"]), ("bottom", ["low.c", "gone.c"])]))
    assert rc == 1, out
    assert "broker/new.c is in no layer" in out, out
    assert "lists gone.c, which is no broker file" in out, out


def test_the_build_with_a_file_misplaced_fails(tmp_path):
    layers = the_map()
    names = [name for name, _ in layers]
    assert names == ["handlers", "engine", "store", "base"], layers
    # The store's interface put among the base: store.c then calls up
    # into the store's own files.
    moved = [(name, [f for f in files if f != "store.c"] +
              (["store.c"] if name == "base" else []))
             for name, files in layers]
    rc, out = run(BUILDDIR, design=design_with(tmp_path, moved))
    assert rc == 1, out
    assert re.search(r"broker/store\.c \(base\) calls up into "
                     r"broker/journal\.c \(store\): .*ckpt_store_prepare",
                     out), out
    # The pods among the handlers: the engine then calls up into them.
    moved = [(name, [f for f in files if f != "pods.c"] +
              (["pods.c"] if name == "handlers" else []))
             for name, files in layers]
    rc, out = run(BUILDDIR, design=design_with(tmp_path, moved))
    assert rc == 1, out
    assert re.search(r"broker/eni\.c \(engine\) calls up into "
                     r"broker/pods\.c \(handlers\): .*pods_bind_restored",
                     out), out
    # A file left out of the map.
    left_out = [(name, [f for f in files if f != "trim.c"])
                for name, files in layers]
    rc, out = run(BUILDDIR, design=design_with(tmp_path, left_out))
    assert rc == 1, out
    assert "broker/trim.c is in no layer" in out, out


def test_a_map_that_is_not_one_fails(tmp_path):
    for block, why in [
            ("top high.c\ntop low.c\n", "layer top listed twice"),
            ("top high.c low.c\nbottom low.c\n", "low.c is in top already"),
            ("top high.c\nbottom\n", "not \"LAYER FILE.c ...\""),
            ("top high.c low.c\n", "fewer than two layers")]:
        path = tmp_path / "design.md"
        path.write_text(MARKER + ":\n\n```\n" + block + "```\n")
        rc, out = run(BUILDDIR, design=str(path))
        assert rc == 1 and why in out, (block, out)
    path.write_text("no map here\n")
    rc, out = run(BUILDDIR, design=str(path))
    assert rc == 1 and "no line with" in out, out


def test_the_check_runs_in_make_check():
    """The layers are checked by every `make check` (both tiers of
    tests/run-all run it), not only here."""
    with open(os.path.join(SRCDIR, "broker", "local.mk")) as f:
        mk = f.read()
    assert "check-local: check-layers" in mk
    assert re.search(r"check-layers:.*\n\t@/usr/bin/python3 "
                     r"\$\(srcdir\)/tests/layers ", mk), mk
    assert shutil.which("nm"), "nm(1) is needed by tests/layers"
