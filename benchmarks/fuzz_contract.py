"""Throw thousands of generated bad invocations at `roofline` and count how each one ends.

The contract (DESIGN.md): bad input gets one line on stderr starting `roofline: error:`, exit status 2, no
traceback, no hang, nothing on stdout and no file written or changed. Each case runs `cli.main(argv)` in a
forked child of this process (imports paid once, a crash or a hang stays in the child), in a fresh directory
that is also its HOME and ROOFLINE_HOME, under a memory limit, and is sorted into one category:

  refused cleanly   exit 2, one stderr line starting `roofline: error:`, stdout empty, no file changed
  unclean refusal   the right intent in the wrong form: a usage block, two lines, another exit status, a file
                    written or changed
  traceback         an exception escaped (its traceback is on stderr)
  accepted          exit 0: the bad input was taken as good
  hang              still running after the time limit (killed)
  crash             killed by a signal (a segfault, or the memory limit)

The valid corpus (every shipped profile through `hw show`, `explain` and `predict`, and the README's
commands) is run the same way and must exit 0. Cases come from a seeded random generator, so a run is
repeatable: `python benchmarks/fuzz_contract.py --cases 2500 --seed 0 [--root CHECKOUT]`, where `--root`
points at another checkout (the code before a change, say) to measure it instead of this one.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CATEGORIES = ("refused cleanly", "unclean refusal", "traceback", "accepted", "hang", "crash")
TIMEOUT_S = 20.0
"""A non-torch case that has not finished in this long hangs (a clean refusal takes well under 1 s)."""
TORCH_TIMEOUT_S = 90.0
"""Cases that import torch (user modules, validate) get longer: importing torch alone takes seconds here."""
MEMORY_LIMIT_BYTES = 3 << 30
"""Address-space limit for non-torch children, so a YAML bomb cannot take the shared machine's memory."""


@dataclass
class Case:
    """One invocation: argv (with `{dir}` standing for the case's directory) and the files it finds there."""

    family: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    profile_path: str | None = None
    """ROOFLINE_PROFILE_PATH relative to the case directory (a directory holding one of `files`)."""
    torch: bool = False
    valid: bool = False
    """Part of the valid corpus: must exit 0."""

    def describe(self) -> str:
        text = " ".join(a if len(a) < 80 else a[:60] + f"...({len(a)} chars)" for a in self.argv)
        names = ", ".join(f"{k} ({len(v)} B)" for k, v in self.files.items())
        return f"[{self.family}] roofline {text}" + (f"  files: {names}" if names else "")


@dataclass
class Outcome:
    category: str
    exit: int | None
    stderr: str
    seconds: float


# ---------------------------------------------------------------------------------------------- running


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under root with a hash of its content: a refusal must leave this unchanged."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(root))] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def _child(case: Case, directory: Path, argv: list[str]) -> None:
    """Runs in the forked child: never returns."""
    code = 1
    try:
        os.chdir(directory)
        os.environ["HOME"] = str(directory / "home")
        os.environ["ROOFLINE_HOME"] = str(directory / "home" / "roofline")
        os.environ["MPLCONFIGDIR"] = str(directory / "home" / "mpl")
        os.environ.pop("ROOFLINE_PROFILE_PATH", None)
        if case.profile_path:
            os.environ["ROOFLINE_PROFILE_PATH"] = str(directory / case.profile_path)
        out = os.open(directory / ".stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(directory / ".stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        if not case.torch:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
        import cli

        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        code = int(code or 0)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def run_case(case: Case) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        directory = Path(tmp)
        (directory / "home").mkdir()
        for rel, content in case.files.items():
            target = directory / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith("/"):
                target.mkdir(exist_ok=True)
            else:
                target.write_bytes(content)
        argv = [a.replace("{dir}", tmp) for a in case.argv]
        before = _snapshot(directory)
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(case, directory, argv)
        limit = TORCH_TIMEOUT_S if case.torch else TIMEOUT_S
        status = None
        while time.perf_counter() - started < limit:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.005)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return Outcome("hang", None, "", time.perf_counter() - started)
        seconds = time.perf_counter() - started
        stdout = (directory / ".stdout").read_text(errors="replace")
        stderr = (directory / ".stderr").read_text(errors="replace")
        (directory / ".stdout").unlink()
        (directory / ".stderr").unlink()
        changed = _snapshot(directory) != before
    if os.WIFSIGNALED(status):
        return Outcome("crash", -os.WTERMSIG(status), stderr, seconds)
    code = os.WEXITSTATUS(status)
    if "Traceback (most recent call last)" in stderr:
        category = "traceback"
    elif code == 0:
        category = "accepted"
    elif code == 2 and not stdout and not changed and _one_error_line(stderr):
        category = "refused cleanly"
    else:
        category = "unclean refusal"
    return Outcome(category, code, stderr, seconds)


def _one_error_line(stderr: str) -> bool:
    lines = stderr.splitlines()
    return len(lines) == 1 and lines[0].startswith("roofline: error:")


# ---------------------------------------------------------------------------------------------- generators

BAD_NUMBERS: tuple[object, ...] = (-1, -1e9, -0.5, float("nan"), float("inf"), float("-inf"), "1e999", "-1e999",
                                   "abc", "", None, [1], {"a": 1})
"""Values no figure may hold."""
BAD_COUNTS: tuple[object, ...] = (0, -4, 2.5, "x", float("nan"), None)
"""Values no count (cores, SMs, lanes, links, line sizes...) may hold."""
COUNT_FIGURES = ("cores", "threads", "sm_count", "fp32_lanes_per_sm", "fp64_lanes_per_sm", "simd_width_bits",
                 "fma_units_per_core", "bus_width_bits")
INT_FIELDS = ("sockets", "shared_by", "line_bytes", "lanes", "links", "generation", "alignment_elements")
MAY_BE_NULL = ("links", "lanes", "generation")
"""Counts a profile may leave unknown (`interconnect.links`, `host_link.lanes` and `.generation: null`): None is
valid there, every other bad count not."""
MAY_BE_ZERO = ("kernel_launch_s", "framework_dispatch_s", "sync_s")
"""Overheads a CPU profile sets to 0 (no device launch, no host-device sync): every other figure is > 0."""
BAD_DTYPES = ("fp128", "FP32", "", "float", "int4x")


def _walk(node: object, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def _set(doc: dict, path: tuple, value: object) -> None:
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _dump(doc: object) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


def _measured() -> dict:
    """A measured section the schema accepts, for mutations to break one figure of."""
    return {"peak_flops": {"fp32": 1.0e12, "bf16": 2.0e12}, "memory_bandwidth": 5.0e10,
            "caches": [{"level": "L1", "bandwidth_bytes_per_s": 1.0e11, "working_set_bytes": 16384}],
            "gemm_curves": {"fp32": [{"n": 64, "flops_per_s": 1.0e11}, {"n": 1024, "flops_per_s": 9.0e11}]},
            "conv_efficiency": {"3x3": 0.8}, "kernel_bytes_per_s": {"pool:max": 1.0e10},
            "environment": {"cpu": "fuzz", "torch_version": "0"}}


def _break_measured(rng: random.Random) -> tuple[str, dict]:
    m = _measured()
    choice = rng.randrange(11)
    if choice == 0:
        m["peak_flops"]["fp32"] = rng.choice((-1.0e12, 0.0, float("nan"), float("inf")))
        return "measured peak_flops bad", m
    if choice == 1:
        m["memory_bandwidth"] = rng.choice((float("nan"), -5.0, 0.0, float("inf"), "fast"))
        return "measured bandwidth bad", m
    if choice == 2:
        m["gemm_curves"]["fp32"][0]["n"] = rng.choice((0, -64, 1.5))
        return "measured GEMM size bad", m
    if choice == 3:
        del m["peak_flops"]["fp32"]
        return "measured peak_flops without fp32", m
    if choice == 4:
        m["peak_flops"][rng.choice(BAD_DTYPES)] = 1.0e12
        return "measured unknown dtype", m
    if choice == 5:
        m["caches"][0]["working_set_bytes"] = rng.choice((0, -1, 2.5))
        return "measured cache bad", m
    if choice == 6:
        del m["environment"]
        return "measured without environment", m
    if choice == 7:
        m["conv_efficiency"]["3x3"] = rng.choice((-0.5, 0.0, float("nan"), float("inf")))
        return "measured conv efficiency bad", m
    if choice == 8:
        m["kernel_bytes_per_s"]["pool:max"] = rng.choice((0.0, -1.0, float("inf")))
        return "measured kernel rate bad", m
    if choice == 9:
        m["gemm_curves"][rng.choice(BAD_DTYPES)] = m["gemm_curves"]["fp32"]
        return "measured curve of unknown dtype", m
    m["sync_s"] = rng.choice((-1.0, float("nan"), float("inf")))
    return "measured sync bad", m


def _profile_mutation(rng: random.Random, base: dict, text: bytes) -> tuple[str, bytes]:
    """A profile that no reader should accept, and the name of what is wrong with it."""
    doc = yaml.safe_load(text)
    kind = rng.randrange(100)
    figures = [p for p, n in _walk(doc) if isinstance(n, dict) and "value" in n]
    if kind < 22:
        path = rng.choice(figures)
        bad = [v for v in BAD_NUMBERS if not (path[-1] in MAY_BE_ZERO and v == 0)]
        if path[-1] not in MAY_BE_ZERO:
            bad.append(0)
        _set(doc, (*path, "value"), rng.choice(bad))
        return "figure bad", _dump(doc)
    if kind < 32:
        counts = [p for p in figures if p[-1] in COUNT_FIGURES]
        ints = [p for p, _ in _walk(doc) if p and p[-1] in INT_FIELDS]
        path = rng.choice(counts + ints)
        bad = [v for v in BAD_COUNTS if not (v is None and path[-1] in MAY_BE_NULL)]
        if path in counts:
            _set(doc, (*path, "value"), rng.choice(bad))
        else:
            _set(doc, path, rng.choice(bad))
        return "count bad", _dump(doc)
    if kind < 40:
        tables = [p for p, n in _walk(doc) if isinstance(n, dict) and p and p[-1] in
                  ("tensor_cores", "peak_flops_per_s", "matrix_flops_per_cycle_per_core") and n]
        if tables and rng.random() < 0.7:
            path = rng.choice(tables)
            node = doc
            for p in path:
                node = node[p]
            node[rng.choice(BAD_DTYPES)] = node.pop(next(iter(node)))
        else:
            doc["compute"]["vector_dtypes" if doc["kind"] == "gpu" else "matrix_extensions"] = ["fp32", "fp128"]
            if doc["kind"] == "cpu":
                doc["compute"]["matrix_flops_per_cycle_per_core"] = {"fp128": {"value": 64, "source": "x"}}
        return "dtype unknown", _dump(doc)
    if kind < 54:
        name, doc["measured"] = _break_measured(rng)
        return name, _dump(doc)
    if kind < 62:
        choice = rng.randrange(6)
        if choice == 0:
            doc["aliases"] = [f"alias{i}" for i in range(rng.choice((5000, 50000, 200000)))]
            return "huge alias list", _dump(doc)
        if choice == 1:
            doc["name"] = "n" * rng.choice((300, 5000, 100000))
            return "name too long", _dump(doc)
        if choice == 2:
            doc["aliases"] = "a" * rng.choice((1, 50, 5000))
            return "aliases not a list", _dump(doc)
        if choice == 3:
            doc["aliases"] = ["x" * rng.choice((300, 10000))]
            return "alias too long", _dump(doc)
        if choice == 4:
            doc["name"] = rng.choice(("", " ", None, 5, ["a"]))
            return "name empty or not text", _dump(doc)
        doc["caches"] = doc["caches"] * rng.choice((40, 500))
        return "cache list too long", _dump(doc)
    if kind < 72:
        choice = rng.randrange(8)
        if choice == 0:
            doc.pop(rng.choice(("memory", "compute", "caches", "overheads", "name", "vendor")))
            return "field missing", _dump(doc)
        if choice == 1:
            doc["kind"] = rng.choice(("tpu", "", None, 3, "GPU"))
            return "kind unknown", _dump(doc)
        if choice == 2:
            return "not a mapping", rng.choice((b"- 1\n- 2\n", b"42\n", b"", b"~\n", b"just text\n", b"[]"))
        if choice == 3:
            doc["frobnication"] = 3
            return "unknown field", _dump(doc)
        if choice == 4:
            # a figure whose only provenance is its source: one that says how it is `derived` keeps its provenance
            sourced = [p for p, n in _walk(doc) if isinstance(n, dict) and "value" in n and "derived" not in n]
            path = rng.choice(sourced)
            _set(doc, (*path, "source"), None)
            return "figure without source", _dump(doc)
        if choice == 5:
            return "invalid YAML", text[: rng.randrange(10, len(text))] + b"\n  - ]: {\n"
        if choice == 6:
            doc["caches"] = []
            doc["memory"] = "lots"
            return "section of the wrong type", _dump(doc)
        return "mapping key not text", text.replace(b"vendor:", b"? [a, b]\n: 1\nvendor:", 1)
    if kind < 84:
        choice = rng.randrange(7)
        if choice == 0:
            return "UTF-16", text.decode().encode(rng.choice(("utf-16", "utf-16-le", "utf-16-be", "utf-32")))
        if choice == 1:
            return "latin-1", text.replace(b"vendor: ", "vendor: Soci\u00e9t\u00e9 ".encode("latin-1"), 1)
        if choice == 2:
            return "random bytes", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000)))
        if choice == 3:
            at = rng.randrange(len(text))
            return "NUL byte", text[:at] + b"\x00" + text[at:]
        if choice == 4:
            at = rng.randrange(len(text))
            return "invalid UTF-8", text[:at] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf")) + text[at:]
        if choice == 5:
            return "control characters", text.replace(b"vendor: ", b"vendor: \x1b[31m\x07", 1)
        return "UTF-16 with BOM and NUL", b"\xff\xfe" + text.decode().encode("utf-16-le")
    if kind < 94:
        choice = rng.randrange(5)
        depth = rng.choice((1000, 20000, 100000))
        if choice == 0:
            return "deep flow sequence", text + b"notes: " + b"[" * depth + b"]" * depth + b"\n"
        if choice == 1:
            return "deep flow mapping", text + b"notes: " + b"{a: " * depth + b"1" + b"}" * depth + b"\n"
        if choice == 2:
            return "deep block sequence", text + b"notes:\n  " + b"- " * depth + b"x\n"
        if choice == 3:
            lines = [b"lol0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
            for i in range(1, 10):
                lines.append(f"lol{i}: &a{i} [" .encode() + b", ".join([f"*a{i - 1}".encode()] * 9) + b"]")
            return "billion laughs", b"\n".join(lines) + b"\n" + text.replace(b"aliases:", b"aliases: *a9\nx_:", 1)
        anchors = b"base: &b [" + b", ".join([b"x"] * 100) + b"]\n"
        refs = b"many: [" + b", ".join([b"*b"] * rng.choice((1000, 20000))) + b"]\n"
        return "alias expansion", anchors + refs + text
    choice = rng.randrange(2)
    if choice == 0:
        return "file too large", text + b"# padding\n" * (rng.choice((2, 8, 30)) * 110000)
    return "long comment line", text + b"# " + b"x" * rng.choice((2_000_000, 10_000_000)) + b"\n"


def profile_cases(rng: random.Random, root: Path, n: int) -> list[Case]:
    bases = [root / "hardware_profiles" / p for p in
             ("gpu/v100-sxm2-16gb.yaml", "gpu/a100-sxm4-80gb.yaml", "cpu/textbook-cpu.yaml", "cpu/epyc-9654.yaml")]
    texts = [(b.read_bytes(), yaml.safe_load(b.read_bytes())) for b in bases]
    out = []
    for _ in range(n):
        text, base = rng.choice(texts)
        what, content = _profile_mutation(rng, base, text)
        family = f"profile: {what}"
        how = rng.randrange(8)
        path = "{dir}/fuzzdev.yaml"
        files = {"fuzzdev.yaml": content}
        if how == 0:
            out.append(Case(family, ["hw", "list", "--json"], {"profiles/fuzzdev.yaml": content}, "profiles"))
        elif how == 1:
            out.append(Case(family, ["hw", "show", "fuzzdev"], {"profiles/fuzzdev.yaml": content}, "profiles"))
        elif how == 2:
            out.append(Case(family, ["explain", "--hw", path], files))
        elif how == 3:
            out.append(Case(family, ["predict", "--hw", path, "--op", "gemm(m=512,n=512,k=512)"], files))
        elif how == 4:
            out.append(Case(family, ["advise", "--model", "mlp", "--hw", path, "--json"], files))
        elif how == 5:
            out.append(Case(family, ["analyze", "--model", "mlp", "--hw", path], files))
        elif how == 6:
            out.append(Case(family, ["predict", "--model", "mlp", "--gpu", "v100"],
                            {"profiles/fuzzdev.yaml": content}, "profiles"))
        else:
            out.append(Case(family, ["hw", "show", path, "--json"], files))
    return out


OP_TEMPLATES: dict[str, dict[str, str]] = {
    "gemm": {"m": "512", "n": "256", "k": "128"},
    "linear": {"batch": "8", "in_features": "64", "out_features": "32"},
    "conv2d": {"n": "2", "c": "16", "h": "28", "w": "28", "k": "32", "r": "3", "s": "3", "stride": "1", "pad": "1"},
    "softmax": {"rows": "64", "cols": "128"},
    "attention": {"batch": "2", "heads": "4", "seq_q": "128", "seq_kv": "128", "head_dim": "64"},
    "activation": {"numel": "4096", "fn": "relu"},
    "elementwise": {"numel": "4096"},
    "pool2d": {"n": "2", "c": "8", "h": "16", "w": "16", "r": "2", "s": "2"},
    "layernorm": {"rows": "64", "features": "256"},
    "batchnorm": {"n": "4", "c": "16", "spatial": "196"},
    "embedding": {"num_embeddings": "1000", "dim": "64", "tokens": "32"},
    "dropout": {"numel": "4096", "p": "0.1"},
}
BAD_OP_NUMBERS = ("abc", "", "0x10", "2**10", "1.5", "-5", "0", "inf", "nan", "-inf", "1e999", "1e3", "9" * 40,
                  " ", "True", "'5'", "5)", "(5", "5 5", "+-3", "\u0661\u0662", "1e-3", "None", "[1]")
BAD_OP_OTHER = {"fn": ("bogus", "", "5", "relu)"), "p": ("1.5", "-0.1", "nan", "1", "abc"),
                "causal": ("maybe", "2", "")}


def _spec(name: str, params: dict[str, str]) -> str:
    return f"{name}({','.join(f'{k}={v}' for k, v in params.items())})"


def _bad_op(rng: random.Random) -> tuple[str, str]:
    name = rng.choice(list(OP_TEMPLATES))
    params = dict(OP_TEMPLATES[name])
    choice = rng.randrange(100)
    if choice < 55:
        key = rng.choice(list(params))
        params[key] = rng.choice(BAD_OP_OTHER.get(key, BAD_OP_NUMBERS))
        return "value bad", _spec(name, params)
    if choice < 62:
        return "extra parenthesis", rng.choice((_spec(name, params) + ")", "(" + _spec(name, params),
                                                _spec(name, params).replace("(", "((", 1)))
    if choice < 68:
        return "no parentheses", rng.choice((name, _spec(name, params).rstrip(")"), _spec(name, params)[:-1] + "]"))
    if choice < 74:
        params[rng.choice(("zz", "M", "name", "kind", "p_", "__class__"))] = "4"
        return "unknown parameter", _spec(name, params)
    if choice < 79:
        optional = ("stride", "pad", "p")
        params.pop(rng.choice([k for k in params if k not in optional]))
        for key in optional:
            params.pop(key, None)
        return "missing parameter", _spec(name, params) if params else f"{name}()"
    if choice < 84:
        return "unknown op", _spec(rng.choice(("matmul2", "op", "gemmm", "__init__", "Op", "workload")), params)
    if choice < 89:
        text = _spec(name, params)
        key = next(iter(params))
        return "duplicate key", text[:-1] + f",{key}=7)"
    if choice < 93:
        return "not key=value", _spec(name, params)[:-1] + rng.choice((",5)", ",=5)", ",m)", ",m==5)"))
    if choice < 97:
        return "too long", name + "(" + ",".join(f"m{i}=1" for i in range(rng.choice((5000, 50000)))) + ")"
    return "empty or blank", rng.choice(("", " ", "()", "(m=1)"))


def op_cases(rng: random.Random, n: int) -> list[Case]:
    out = []
    for _ in range(n):
        what, spec = _bad_op(rng)
        how = rng.randrange(3)
        if how == 0:
            argv = ["predict", "--op", spec, "--gpu", "v100"]
        elif how == 1:
            argv = ["analyze", "--op", spec, "--json"]
        else:
            argv = ["predict", "--op", spec, "--cpu", "textbook", "--json"]
        out.append(Case(f"--op: {what}", argv))
    return out


LONG = "x" * 300
BAD_TEXT = ("", " ", LONG, "nosuch", "-", "\t")
BAD_INT = ("0", "-1", "abc", "", "1.5", "nan", "inf", "1e3", "0x10", "99999999999999999999999")
BAD_FLOAT = ("-1", "nan", "inf", "-inf", "", "abc", "1e999", "-1e-9")
COMMAND_OPTIONS: dict[str, tuple[list[str], dict[str, tuple[str, ...]]]] = {
    "predict": (["predict", "--model", "mlp", "--gpu", "v100"], {
        "--batch": (*BAD_INT, "1:0", "1,,x", "0:4", "1:" + "9" * 30, ",".join(["1"] * 5000), "8:1"),
        "--precision": ("fp128", "", "FP 32", LONG), "--sync": ("-1", "abc", "1.5", "nan", "", "99999999999999"),
        "--reserve-bytes": (*BAD_FLOAT, "1e30"), "--optimizer": ("lbfgs", ""),
        "--input-size": BAD_INT, "--seq-len": BAD_INT, "--num-classes": BAD_INT,
        "--model": (*BAD_TEXT, ":", "a:", ":b", "nonexistent_mod:Net", "os:path", "os.path:join", "mlp\n"),
        "--gpu": (*BAD_TEXT, "textbook", "/nonexistent/x.yaml", LONG + ".yaml"),
        "--hw": (*BAD_TEXT, "/nonexistent/x.yaml", LONG + ".yaml", "/", ".", "{dir}"),
        "--cpu": (*BAD_TEXT, "v100"),
        "--input-shape": ("", "1,x", "0,3", "1,-3", ",", "1,3," + "9" * 30)}),
    "advise": (["advise", "--model", "mlp", "--gpu", "t4", "--json"], {
        "--precision": ("fp128", "", "fp 16"), "--sync": ("-1", "nan", ""), "--reserve-bytes": BAD_FLOAT,
        "--plot": ("", "/nonexistent-dir/x.png", "x.txt", " "), "--model": BAD_TEXT, "--gpu": BAD_TEXT,
        "--optimizer": ("",), "--input-size": BAD_INT}),
    "analyze": (["analyze", "--model", "mlp", "--json"], {
        "--batch": BAD_INT, "--precision": ("fp128", ""), "--hw": (*BAD_TEXT, "/nonexistent.yaml"),
        "--cpu": BAD_TEXT, "--gpu": BAD_TEXT, "--model": BAD_TEXT, "--seq-len": BAD_INT,
        "--input-size": BAD_INT, "--num-classes": BAD_INT}),
    "explain": (["explain", "--gpu", "v100", "--json"], {
        "--precision": ("fp128", "", LONG), "--gpu": BAD_TEXT, "--cpu": BAD_TEXT, "--hw": BAD_TEXT}),
    "hw show": (["hw", "show", "v100", "--json"], {}),
    "hw detect": (["hw", "detect", "--no-gpu", "--json"], {
        "--save": ("", " ", "/nonexistent/dir/x.yaml", "{dir}", "{dir}/existing.yaml", LONG + ".yaml"),
        "--calibration": ("", "/nonexistent.yaml", "{dir}/existing.yaml", "{dir}", LONG)}),
    "calibrate": (["calibrate", "--quick", "--json"], {
        "--out": ("", " ", "{dir}/existing.yaml", "{dir}", "/nonexistent/dir/x.yaml", LONG + "/x.yaml"),
        "--device": ("tpu", "", "CPU"), "--dtypes": ("", "fp128", ",", "fp32,,fp99"), "--hw": BAD_TEXT}),
    "bench gemm-strategies": (["bench", "gemm-strategies", "--json"], {"--n": (*BAD_INT, "5000", "4"),
                                                                       "--hw": BAD_TEXT}),
    "bench transfer": (["bench", "transfer", "--json"], {"--n": ("", "abc", "0", "99999", ",", "-5"),
                                                         "--gpu": BAD_TEXT}),
    "validate": (["validate", "--model", "mlp", "--no-calibrate", "--json", "--budget", "0.05", "--repeats", "1",
                  "--kind-steps", "0"], {
        "--device": ("tpu", "", "cuda:99", "CPU"), "--batch": BAD_INT, "--budget": (*BAD_FLOAT, "0"),
        "--repeats": BAD_INT, "--kind-steps": ("-1", "abc", "nan", ""), "--precision": ("fp128", ""),
        "--model": (*BAD_TEXT, "nonexistent_mod:Net"), "--hw": BAD_TEXT}),
}
STRUCTURAL = (["predict", "--model", "mlp"], ["predict", "--model", "mlp", "--gpu", "v100", "--cpu", "textbook"],
              ["predict", "--model", "mlp", "--op", "gemm(m=1,n=1,k=1)", "--gpu", "v100"], [], ["nosuchcommand"],
              ["hw"], ["hw", "show"], ["hw", "frob"], ["predict", "--frobnicate"], ["advise", "--gpu", "v100"],
              ["bench"], ["explain"], ["predict", "--model"], ["analyze", "--model", "mlp", "extra"],
              ["predict", "--model", "mlp", "--gpu", "v100", "--batch", "8", "--op", "gemm(m=1,n=1,k=1)"],
              ["--json"], ["predict", "--model", "mlp", "--gpu", "v100", "--train", "--infer"],
              ["advise", "--model", "mlp", "--gpu", "v100", "--train", "--infer"])


def argument_cases(rng: random.Random, n: int) -> list[Case]:
    commands = list(COMMAND_OPTIONS)
    existing = {"existing.yaml": b"# a user's file that must survive\n"}
    out = []
    for _ in range(n):
        if rng.random() < 0.08:
            out.append(Case("args: structure", list(rng.choice(STRUCTURAL))))
            continue
        command = rng.choice(commands)
        base, options = COMMAND_OPTIONS[command]
        argv = list(base)
        if command == "hw show":
            argv[2] = rng.choice((*BAD_TEXT, "/nonexistent.yaml", "{dir}", "{dir}/existing.yaml", LONG + ".yaml"))
            out.append(Case(f"args: {command} NAME", argv, dict(existing)))
            continue
        option = rng.choice(list(options))
        value = rng.choice(options[option])
        if option in argv:
            at = argv.index(option)
            argv[at + 1] = value
        else:
            for group in (("--gpu", "--cpu", "--hw"), ("--model", "--op")):
                if option in group:
                    for other in group:
                        if other in argv:
                            at = argv.index(other)
                            del argv[at:at + 2]
            argv += [f"{option}={value}"] if value.startswith("-") else [option, value]
        if command == "predict" and option == "--input-shape":
            argv[argv.index("--model") + 1] = "fuzz_user:Net"
        out.append(Case(f"args: {command} {option}", argv, dict(existing), torch=command == "validate"))
    return out


USER_MODULES = {
    "import raises": "raise ValueError('broken at import')\n",
    "import exits": "import sys\nsys.exit(3)\n",
    "import exits with text": "import sys\nsys.exit('bye from the user module')\n",
    "import exits 0": "raise SystemExit(0)\n",
    "syntax error": "def broken(:\n",
    "constructor raises": "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                          "        super().__init__()\n        raise KeyError('no config')\n",
    "constructor exits": "import sys, torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                         "        super().__init__()\n        sys.exit(0)\n",
    "forward raises": "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                      "        self.fc = torch.nn.Linear(8, 4)\n    def forward(self, x):\n"
                      "        raise ZeroDivisionError('in forward')\n",
    "forward exits": "import sys, torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.fc = torch.nn.Linear(8, 4)\n"
                     "    def forward(self, x):\n        sys.exit(1)\n",
    "forward raises KeyError": "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                               "        super().__init__()\n        self.fc = torch.nn.Linear(8, 4)\n"
                               "    def forward(self, x):\n        return {}['missing']\n",
    "not a module": "Net = 5\n",
    "factory returns text": "def Net():\n    return 'not a module'\n",
}


def user_code_cases(n: int) -> list[Case]:
    commands = (["analyze", "--model", "fuzz_user:Net", "--input-shape", "1,8", "--json"],
                ["predict", "--model", "fuzz_user:Net", "--input-shape", "1,8", "--gpu", "v100", "--json"],
                ["validate", "--model", "fuzz_user:Net", "--input-shape", "1,8", "--no-calibrate", "--json",
                 "--budget", "0.05", "--repeats", "1", "--kind-steps", "0"])
    out = []
    for what, source in USER_MODULES.items():
        for argv in commands:
            out.append(Case(f"user code: {what}", list(argv), {"fuzz_user.py": source.encode()}, torch=True))
    return out[:n]


def overwrite_cases() -> list[Case]:
    """User files named by an output option, without --force: each must survive unchanged."""
    keep = b"# a user's file that must survive\n"
    return [
        Case("overwrite: hw detect --save", ["hw", "detect", "--no-gpu", "--save", "{dir}/mine.yaml"],
             {"mine.yaml": keep}),
        Case("overwrite: advise --plot", ["advise", "--model", "mlp", "--gpu", "t4", "--plot", "{dir}/mine.png"],
             {"mine.png": keep}),
        Case("overwrite: advise --plot DIR", ["advise", "--model", "mlp", "--gpu", "t4", "--plot", "{dir}"],
             {"mlp-tesla-t4-advise.png": keep, "mlp-nvidia-t4-advise.png": keep, "mlp-t4-advise.png": keep}),
        Case("overwrite: calibrate --out", ["calibrate", "--quick", "--out", "{dir}/mine.yaml"],
             {"mine.yaml": keep}),
    ]


def valid_cases(root: Path) -> list[Case]:
    """What must keep working: every shipped device profile (cpu/ and gpu/: links, nodes and runtime profiles are
    not devices `--hw` takes), and the README's commands (cheap ones)."""
    out = []
    devices = [path for kind in ("cpu", "gpu") for path in (root / "hardware_profiles" / kind).glob("*.yaml")]
    for path in sorted(devices):
        out.append(Case("valid: hw show", ["hw", "show", str(path), "--json"], valid=True))
        out.append(Case("valid: explain", ["explain", "--hw", str(path), "--json"], valid=True))
        out.append(Case("valid: predict", ["predict", "--hw", str(path), "--op", "gemm(m=1024,n=1024,k=1024)",
                                           "--json"], valid=True))
    readme = [["advise", "--model", "mobilenetv3", "--gpu", "v100"], ["hw", "list"], ["hw", "show", "v100"],
              ["explain", "--cpu", "textbook"],
              ["analyze", "--model", "mlp", "--batch", "64", "--gpu", "v100", "--precision", "fp16", "--symbolic"],
              ["predict", "--op", "gemm(m=8192,n=8192,k=8191)", "--gpu", "v100", "--precision", "fp16"],
              ["predict", "--model", "resnet50", "--gpu", "a100", "--batch", "256", "--precision", "amp", "--train"],
              ["hw", "schema"], ["hw", "detect", "--no-gpu"]]
    out += [Case("valid: README", argv, valid=True) for argv in readme]
    return out


def all_cases(root: Path, total: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    users = user_code_cases(36)
    fixed = overwrite_cases()
    rest = total - len(users) - len(fixed)
    cases = (profile_cases(rng, root, rest * 4 // 10) + op_cases(rng, rest * 3 // 10)
             + argument_cases(rng, rest - rest * 4 // 10 - rest * 3 // 10) + users + fixed)
    return cases


def _table(rows: dict[str, Counter], title: str) -> list[str]:
    lines = [f"| {title} | cases | " + " | ".join(CATEGORIES) + " |", "|---|---:|" + "---:|" * len(CATEGORIES)]
    total: Counter = Counter()
    for name in sorted(rows):
        c = rows[name]
        total.update(c)
        lines.append(f"| {name} | {sum(c.values())} | " + " | ".join(str(c[k]) for k in CATEGORIES) + " |")
    lines.append(f"| **all** | **{sum(total.values())}** | " + " | ".join(f"**{total[k]}**" for k in CATEGORIES)
                 + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2500, help="bad invocations to generate (default 2500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout to test (default: this one)")
    parser.add_argument("--examples", type=int, default=2, help="examples shown per family and bad category")
    parser.add_argument("--only", help="run only families whose name contains this text")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    import cli  # noqa: F401  (imported once here, so each forked child starts with it loaded)

    cases = all_cases(root, args.cases, args.seed) + valid_cases(root)
    if args.only:
        cases = [c for c in cases if args.only in c.family]
    by_family: dict[str, Counter] = defaultdict(Counter)
    by_group: dict[str, Counter] = defaultdict(Counter)
    valid: Counter = Counter()
    examples: dict[tuple[str, str], list[str]] = defaultdict(list)
    started = time.perf_counter()
    slowest = 0.0
    for i, case in enumerate(cases):
        outcome = run_case(case)
        if case.valid:
            valid["ok" if outcome.category == "accepted" else "failed"] += 1
            ok = outcome.category == "accepted"
            if not ok and len(examples[(case.family, "failed")]) < args.examples:
                examples[(case.family, "failed")].append(f"{case.describe()} -> {outcome.category}: "
                                                         f"{outcome.stderr.strip()[-300:]}")
            continue
        slowest = max(slowest, outcome.seconds) if outcome.category == "refused cleanly" else slowest
        by_family[case.family][outcome.category] += 1
        by_group[case.family.split(":")[0]][outcome.category] += 1
        if outcome.category != "refused cleanly" and len(examples[(case.family, outcome.category)]) < args.examples:
            tail = outcome.stderr.strip().splitlines()[-3:] if outcome.stderr.strip() else ["(no stderr)"]
            examples[(case.family, outcome.category)].append(
                f"{case.describe()} -> exit {outcome.exit}, {outcome.seconds:.1f} s: {' / '.join(tail)[:300]}")
        if (i + 1) % 250 == 0:
            print(f"... {i + 1}/{len(cases)} cases, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    elapsed = time.perf_counter() - started
    n_bad = sum(sum(c.values()) for c in by_family.values())
    print(f"roofline contract fuzz: root {root}, seed {args.seed}, {n_bad}"
          f" bad cases + {sum(valid.values())} valid, {elapsed:.0f} s (slowest clean refusal {slowest:.2f} s)\n")
    print("\n".join(_table(by_group, "group")))
    print()
    print("\n".join(_table(by_family, "family")))
    print(f"\nvalid corpus: {valid['ok']} exit 0, {valid['failed']} failed")
    if examples:
        print("\nexamples of cases not refused cleanly:")
        for (_family, category), items in sorted(examples.items()):
            for item in items:
                print(f"- {category}: {item}")
    bad = sum(c[k] for c in by_family.values() for k in CATEGORIES if k != "refused cleanly")
    return 0 if bad == 0 and valid["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
