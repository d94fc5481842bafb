"""The bad-input contract of DESIGN.md, checked on generated input rather than remembered cases: any bad
profile, `--op` spec or argument gets exit status 2, exactly one stderr line starting `roofline: error:`, no
traceback, nothing on stdout, no file written or changed, and an answer within a time bound. The valid corpus
(every shipped profile, the README's commands) still exits 0.

Hypothesis generates the input with a fixed derandomized seed, so CI sees the same cases every run.
`cli.main` runs in-process (the imports are paid once); only the inputs that crashed or hung the process
before (deep nesting, alias bombs, huge files) run in a subprocess with a timeout. The larger run that counts
outcomes by category, before and after, is benchmarks/fuzz_contract.py.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cli
from roofline.errors import RooflineError
from roofline.hardware import load as hw_load
from roofline.hardware.load import SHIPPED_DIR, load_profile
from roofline.workload.opspec import MAX_DIMENSION, _op_classes, _parameters, parse_op

ROOT = Path(__file__).resolve().parents[1]
TIME_BOUND_S = 10.0
"""Longest a refusal may take in-process (it takes milliseconds; the bound is loose for a loaded CI machine)."""
SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=40,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
V100 = (SHIPPED_DIR / "gpu" / "v100-sxm2-16gb.yaml").read_bytes()
TEXTBOOK = (SHIPPED_DIR / "cpu" / "textbook-cpu.yaml").read_bytes()
KEEP = b"# a user's file that must survive\n"


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float
    changed: bool


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@contextlib.contextmanager
def _workspace(files: dict[str, bytes], profile_dir: str | None) -> Iterator[Path]:
    """A fresh directory as cwd, HOME and ROOFLINE_HOME, holding `files`; the profile caches cleared around it
    (they are keyed by path and by the search path the environment names)."""
    saved_env = {k: os.environ.get(k) for k in ("HOME", "ROOFLINE_HOME", hw_load.PROFILE_PATH_ENV)}
    saved_cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="contract-") as tmp:
        root = Path(tmp)
        for rel, content in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content)
        os.environ["HOME"] = str(root / "home")
        os.environ["ROOFLINE_HOME"] = str(root / "home" / "roofline")
        os.environ.pop(hw_load.PROFILE_PATH_ENV, None)
        if profile_dir is not None:
            os.environ[hw_load.PROFILE_PATH_ENV] = str(root / profile_dir)
        hw_load._entries.cache_clear()
        hw_load.load_profile.cache_clear()
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(saved_cwd)
            for key, value in saved_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            hw_load._entries.cache_clear()
            hw_load.load_profile.cache_clear()


def invoke(argv: list[str], files: dict[str, bytes] | None = None, profile_dir: str | None = None) -> Result:
    """`roofline argv` in-process in a fresh workspace; `{dir}` in argv stands for the workspace."""
    with _workspace(files or {}, profile_dir) as root:
        before = _snapshot(root)
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([a.replace("{dir}", str(root)) for a in argv])
        seconds = time.perf_counter() - started
        changed = _snapshot(root) != before
    return Result(code, out.getvalue(), err.getvalue(), seconds, changed)


def assert_refused(result: Result) -> str:
    """The contract for bad input; returns the error line."""
    lines = result.err.splitlines()
    assert result.code == 2, (result.code, result.err[-500:])
    assert len(lines) == 1 and lines[0].startswith("roofline: error:"), result.err[-500:]
    assert "Traceback" not in result.err
    assert result.out == ""
    assert not result.changed, "a refused command wrote or changed a file"
    assert result.seconds < TIME_BOUND_S, f"refusal took {result.seconds:.1f} s"
    return lines[0]


def assert_answered_or_refused(result: Result) -> None:
    """For input that may be good: exit 0, or the contract's refusal."""
    if result.code != 0:
        assert_refused(result)


# ------------------------------------------------------------------------------------------- profiles


def _figure_paths(doc: object, path: tuple = ()) -> list[tuple]:
    if isinstance(doc, dict):
        here = [path] if "value" in doc else []
        return here + [p for k, v in doc.items() for p in _figure_paths(v, (*path, k))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _figure_paths(v, (*path, i))]
    return []


def _with(doc: dict, path: tuple, value: object) -> bytes:
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return yaml.safe_dump(doc, sort_keys=False).encode()


BASES = {"v100": V100, "textbook": TEXTBOOK}
NEVER_A_FIGURE = (-1, -1e-9, math.nan, math.inf, -math.inf, "1e999", "abc", "", None, [1])
"""Values no figure may hold; 0 is added for every figure but the CPU overheads (launch and sync) that are 0."""
CPU_ZERO_OVERHEADS = ("kernel_launch_s", "sync_s", "framework_dispatch_s")


@st.composite
def bad_figure_profiles(draw) -> bytes:
    doc = yaml.safe_load(BASES[draw(st.sampled_from(sorted(BASES)))])
    path = draw(st.sampled_from(_figure_paths(doc)))
    values = list(NEVER_A_FIGURE) + ([] if path[-1] in CPU_ZERO_OVERHEADS else [0, 0.0])
    return _with(doc, (*path, "value"), draw(st.sampled_from(values)))


@st.composite
def bad_structure_profiles(draw) -> bytes:
    """Counts that are not whole or positive, unknown dtypes, broken measured sections, oversized lists."""
    doc = yaml.safe_load(TEXTBOOK)
    measured = {"peak_flops": {"fp32": 1e12}, "memory_bandwidth": 5e10, "environment": {"cpu": "x"},
                "gemm_curves": {"fp32": [{"n": 64, "flops_per_s": 1e11}]}}
    what = draw(st.sampled_from(("count", "sockets", "dtype", "peak", "bandwidth", "gemm", "no fp32",
                                 "aliases", "name", "line")))
    if what == "count":
        key = draw(st.sampled_from(("cores", "threads", "simd_width_bits", "fma_units_per_core")))
        return _with(doc, ("compute", key, "value"), draw(st.sampled_from((0, 2.5, -4, 1e-3))))
    if what == "sockets":
        return _with(doc, ("compute", "sockets"), draw(st.sampled_from((0, -1, 1.5, "two"))))
    if what == "dtype":
        return _with(doc, ("compute", "matrix_flops_per_cycle_per_core"),
                     {draw(st.sampled_from(("fp128", "FP32", "", "int4"))): {"value": 64, "source": "x"}})
    if what == "peak":
        measured["peak_flops"]["fp32"] = draw(st.sampled_from((-1e12, 0.0, math.nan, math.inf)))
    elif what == "bandwidth":
        measured["memory_bandwidth"] = draw(st.sampled_from((math.nan, -5.0, 0.0, math.inf)))
    elif what == "gemm":
        measured["gemm_curves"]["fp32"][0]["n"] = draw(st.sampled_from((0, -64, 1.5)))
    elif what == "no fp32":
        measured["peak_flops"] = {"bf16": 1e12}
    elif what == "aliases":
        return _with(doc, ("aliases",), [f"a{i}" for i in range(draw(st.integers(17, 5000)))])
    elif what == "name":
        return _with(doc, ("name",), draw(st.sampled_from(("", "   ", "n" * 129, None))))
    else:
        return _with(doc, ("caches", 0, "line_bytes"), draw(st.sampled_from((0, -64, 3.5))))
    return _with(doc, ("measured",), measured)


@st.composite
def bad_encoding_profiles(draw) -> bytes:
    text = draw(st.sampled_from(sorted(BASES.values())))
    what = draw(st.sampled_from(("utf16", "latin1", "nul", "byte", "control")))
    if what == "utf16":
        return text.decode().encode(draw(st.sampled_from(("utf-16", "utf-16-le", "utf-32"))))
    if what == "latin1":
        return text.replace(b"vendor: ", "vendor: Soci\u00e9t\u00e9 ".encode("latin-1"), 1)
    at = draw(st.integers(0, len(text)))
    if what == "nul":
        return text[:at] + b"\x00" + text[at:]
    if what == "byte":
        return text[:at] + draw(st.sampled_from((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"))) + text[at:]
    return text[:at] + draw(st.sampled_from((b"\x1b", b"\x07", b"\x0b", b"\x7f"))) + text[at:]


def _profile_command(draw_kind: int) -> tuple[list[str], str, str | None]:
    """(argv, the file's name in the workspace, ROOFLINE_PROFILE_PATH): a profile reached every way there is."""
    return [(["hw", "show", "{dir}/mine.yaml", "--json"], "mine.yaml", None),
            (["explain", "--hw", "{dir}/mine.yaml"], "mine.yaml", None),
            (["predict", "--hw", "{dir}/mine.yaml", "--op", "gemm(m=64,n=64,k=64)"], "mine.yaml", None),
            (["hw", "list"], "profiles/mine.yaml", "profiles"),
            (["predict", "--model", "mlp", "--gpu", "v100"], "profiles/mine.yaml", "profiles")][draw_kind]


@SETTINGS
@given(st.one_of(bad_figure_profiles(), bad_structure_profiles(), bad_encoding_profiles()), st.integers(0, 4))
def test_a_bad_profile_is_refused_by_every_command(content, how):
    argv, name, profile_dir = _profile_command(how)
    line = assert_refused(invoke(argv, {name: content}, profile_dir))
    assert "mine.yaml" in line


@SETTINGS
@given(st.binary(max_size=3000))
def test_the_reader_takes_any_bytes_without_an_exception_of_its_own(content):
    """Whatever the bytes, loading gives a profile or a ProfileError: never a UnicodeDecodeError, a KeyError,
    a RecursionError or any other exception."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "any.yaml"
        path.write_bytes(content)
        with contextlib.suppress(RooflineError):
            load_profile(path)


@SETTINGS
@given(st.text(max_size=400))
def test_the_reader_takes_any_text_without_an_exception_of_its_own(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "any.yaml"
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        with contextlib.suppress(RooflineError):
            load_profile(path)


def _run_isolated(argv: list[str], files: dict[str, bytes], profile_dir: str | None = None) -> Result:
    """A subprocess for input that crashed or hung the process before the reader's bounds."""
    with tempfile.TemporaryDirectory(prefix="contract-") as tmp:
        root = Path(tmp)
        for rel, content in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(root), "ROOFLINE_HOME": str(root / "rh")}
        env.pop(hw_load.PROFILE_PATH_ENV, None)
        if profile_dir:
            env[hw_load.PROFILE_PATH_ENV] = str(root / profile_dir)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(ROOT / "cli.py"), *[a.replace("{dir}", tmp) for a in argv]],
                              capture_output=True, text=True, timeout=60, cwd=root, env=env, check=False)
        return Result(done.returncode, done.stdout, done.stderr, time.perf_counter() - started, False)


BOMBS = {
    # 100,000 nested flow sequences: composing it recursed in C until the stack overflowed (SIGSEGV).
    "deep nesting": V100 + b"notes: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    # nine levels of nine aliases: 9^9 = 387 million strings once expanded.
    "billion laughs": b"\n".join([b"l0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
        f"l{i}: &a{i} [".encode() + b", ".join([f"*a{i - 1}".encode()] * 9) + b"]" for i in range(1, 10)])
    + b"\n" + V100.replace(b"aliases:", b"aliases: *a9\nx_:", 1),
    "200,000 aliases": yaml.safe_dump({**yaml.safe_load(V100), "aliases": [f"a{i}" for i in range(200_000)]})
    .encode(),
    "30 MB file": V100 + b"# padding\n" * 3_000_000,
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
@pytest.mark.parametrize("argv,name,profile_dir", [(["hw", "show", "{dir}/bomb.yaml"], "bomb.yaml", None),
                                                   (["hw", "list"], "p/bomb.yaml", "p")])
def test_bombs_are_refused_in_a_subprocess_without_crash_or_hang(bomb, argv, name, profile_dir):
    result = _run_isolated(argv, {name: BOMBS[bomb]}, profile_dir)
    assert result.code == 2, (result.code, result.err[-300:])
    assert_refused(result)


def test_shipped_profiles_are_far_inside_the_reader_bounds():
    """The bounds refuse hostile files, not real ones: the largest shipped profile is under 1% of the size
    limit, and its nesting (5 levels in a calibrated profile) is a third of the limit."""
    sizes = [p.stat().st_size for p in SHIPPED_DIR.rglob("*.yaml")]
    assert max(sizes) < hw_load.MAX_PROFILE_BYTES / 100
    assert hw_load.MAX_NESTING >= 3 * 5


# ------------------------------------------------------------------------------------------- --op specs

OPS = _op_classes()
VALID_VALUES = {"gemm": {"m": "64", "n": "32", "k": "16"},
                "conv2d": {"n": "1", "c": "8", "h": "16", "w": "16", "k": "8", "r": "3", "s": "3", "pad": "1"},
                "attention": {"batch": "1", "heads": "2", "seq_q": "16", "seq_kv": "16", "head_dim": "8"},
                "activation": {"numel": "1024", "fn": "relu"}, "dropout": {"numel": "1024", "p": "0.1"},
                "linear": {"batch": "4", "in_features": "16", "out_features": "8"}}
NOT_A_SIZE = ("abc", "", "0x10", "2**10", "1.5", "-5", "inf", "nan", "1e3", " ", "True", "'5'", "+-3", "\u0661",
              "0b11", "1_000", "None")


def _spec(name: str, params: dict[str, str]) -> str:
    return f"{name}({','.join(f'{k}={v}' for k, v in params.items())})"


@st.composite
def bad_specs(draw) -> str:
    name = draw(st.sampled_from(sorted(VALID_VALUES)))
    params = dict(VALID_VALUES[name])
    what = draw(st.sampled_from(("size", "range", "paren", "key", "duplicate", "missing", "bool", "junk")))
    sizes = [k for k in params if k not in ("fn", "p")]
    if what == "size":
        params[draw(st.sampled_from(sizes))] = draw(st.one_of(st.sampled_from(NOT_A_SIZE),
                                                             st.floats(allow_nan=True).map(repr)))
    elif what == "range":
        key = draw(st.sampled_from([k for k in sizes if k != "pad"]))
        params[key] = str(draw(st.one_of(st.integers(max_value=0), st.integers(min_value=MAX_DIMENSION + 1))))
    elif what == "paren":
        return draw(st.sampled_from((_spec(name, params) + ")", "(" + _spec(name, params),
                                     _spec(name, params).replace("(", "((", 1), _spec(name, params)[:-1], name)))
    elif what == "key":
        params[draw(st.sampled_from(("zz", "M", "name", "kind", "__class__")))] = "4"
    elif what == "duplicate":
        return _spec(name, params)[:-1] + f",{next(iter(params))}=8)"
    elif what == "missing":
        params.pop(next(iter(params)))
    elif what == "bool":
        return _spec("attention", {**VALID_VALUES["attention"], "causal": draw(st.sampled_from(("maybe", "2", "")))})
    else:
        params[draw(st.sampled_from(sorted(params)))] = draw(st.text(alphabet="()=,'\" \t0123456789.-e", min_size=1,
                                                                     max_size=12).filter(
            lambda v: not re.fullmatch(r"\s*[0-9]+\s*", v) or int(v) == 0))
    return _spec(name, params)


@SETTINGS
@given(bad_specs(), st.sampled_from((["predict", "--gpu", "v100"], ["analyze"], ["predict", "--cpu", "textbook"])))
def test_a_bad_op_spec_is_refused(spec, command):
    line = assert_refused(invoke([*command, "--op", spec]))
    assert "--op" in line or "op" in line


@SETTINGS
@given(st.sampled_from(sorted(OPS)), st.dictionaries(
    st.one_of(st.sampled_from(("m", "n", "k", "c", "h", "w", "r", "s", "batch", "numel", "fn", "p", "causal")),
              st.text(max_size=6)),
    st.one_of(st.integers(-3, 300).map(str), st.text(max_size=8), st.floats().map(repr)), max_size=8))
def test_the_op_parser_gives_an_op_with_typed_fields_or_a_refusal(name, params):
    """Any spec gives a RooflineError or an op whose sizes are whole numbers in range: no float, text or
    negative size gets into the IR, and no other exception escapes."""
    try:
        op = parse_op(_spec(name, params))
    except RooflineError:
        return
    for key, field in _parameters(type(op)).items():
        given_value = params.get(key)
        if given_value is None or str(field.type) in ("bool", "str", "float"):
            continue
        assert re.fullmatch(r"\s*[0-9]+\s*", given_value), given_value
        assert 0 <= int(given_value) <= MAX_DIMENSION


def test_valid_specs_parse_to_their_literal_sizes():
    """The round trip the parser exists for: m=64,n=32,k=16 is 2*64*32*16 = 65,536 FLOPs forward."""
    assert parse_op("gemm(m=64,n=32,k=16)").flops("forward") == 65_536
    assert parse_op(" conv2d( n=1, c=8, h=16, w=16, k=8, r=3, s=3, pad=1 ) ").p == 16
    assert parse_op("attention(batch=1,heads=2,seq_q=16,seq_kv=16,head_dim=8,causal=TRUE)").causal is True


# ------------------------------------------------------------------------------------------- arguments

NOT_WHOLE = st.one_of(st.sampled_from(("abc", "", " ", "1.5", "nan", "inf", "1e3", "0x10", "-", "1,2")),
                      st.text(max_size=6).filter(lambda v: not re.fullmatch(r"\s*[+-]?[0-9]+\s*", v)))
NOT_FINITE = st.one_of(st.sampled_from(("nan", "inf", "-inf", "", "abc", "1e999", "NaN")),
                       st.text(max_size=6).filter(lambda v: _not_a_float(v)))
BLANK_OR_BROKEN = st.one_of(st.sampled_from(("", " ", "\t", "x" * 5000)),
                            st.text(min_size=1, max_size=5).map(lambda v: v + "\n" + v))
NOT_A_NAME = st.one_of(BLANK_OR_BROKEN, st.sampled_from(("nosuch", "x" * 300, "/nonexistent/x.yaml",
                                                          "x" * 300 + ".yaml", "{dir}")))


def _not_a_float(value: str) -> bool:
    try:
        return not math.isfinite(float(value))
    except ValueError:
        return True


def _below(least: int) -> st.SearchStrategy[str]:
    return st.integers(max_value=least - 1).map(str)


COMMANDS: dict[str, tuple[list[str], dict[str, st.SearchStrategy[str]]]] = {
    "predict": (["predict", "--model", "mlp", "--gpu", "v100"], {
        "--batch": st.one_of(NOT_WHOLE, _below(1), st.sampled_from(("1:0", "8:1", "1,,x", ",".join(["1"] * 65)))),
        "--sync": st.one_of(NOT_WHOLE, _below(0)), "--reserve-bytes": st.one_of(NOT_FINITE, st.just("-1")),
        "--precision": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("fp128", "fp 16"))),
        "--input-size": st.one_of(NOT_WHOLE, _below(1)), "--seq-len": st.one_of(NOT_WHOLE, _below(1)),
        "--num-classes": st.one_of(NOT_WHOLE, _below(1)), "--gpu": NOT_A_NAME, "--model": NOT_A_NAME}),
    "advise": (["advise", "--model", "mlp", "--gpu", "t4"], {
        "--sync": st.one_of(NOT_WHOLE, _below(0)), "--reserve-bytes": NOT_FINITE,
        "--plot": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("/nonexistent/x.png", "x.txt", "{dir}/keep.png"))),
        "--precision": st.one_of(BLANK_OR_BROKEN, st.just("fp128"))}),
    "analyze": (["analyze", "--model", "mlp"], {
        "--batch": st.one_of(NOT_WHOLE, _below(1)), "--cpu": NOT_A_NAME, "--hw": NOT_A_NAME,
        "--precision": BLANK_OR_BROKEN}),
    "explain": (["explain", "--gpu", "v100"], {"--gpu": NOT_A_NAME, "--cpu": NOT_A_NAME, "--hw": NOT_A_NAME,
                                               "--precision": st.one_of(BLANK_OR_BROKEN, st.just("fp128"))}),
    "hw show": (["hw", "show"], {"": NOT_A_NAME}),
    "hw detect": (["hw", "detect", "--no-gpu"], {
        "--save": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("{dir}/keep.yaml", "{dir}", "/nonexistent/x.yaml"))),
        "--calibration": st.one_of(NOT_A_NAME, st.just("{dir}/keep.yaml"))}),
    "calibrate": (["calibrate", "--quick"], {
        "--out": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("{dir}/keep.yaml", "{dir}", "/nonexistent/d/x.yaml"))),
        "--device": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("tpu", "CPU"))),
        "--dtypes": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("fp128", ",", "fp32,,fp99"))),
        "--hw": NOT_A_NAME}),
    "validate": (["validate", "--model", "mlp", "--no-calibrate", "--budget", "0.05", "--repeats", "1"], {
        "--budget": st.one_of(NOT_FINITE, st.sampled_from(("0", "-1", "1e9"))),
        "--repeats": st.one_of(NOT_WHOLE, _below(1)), "--kind-steps": st.one_of(NOT_WHOLE, _below(0)),
        "--batch": st.one_of(NOT_WHOLE, _below(1)), "--device": st.one_of(BLANK_OR_BROKEN, st.just("tpu"))}),
    "bench gemm-strategies": (["bench", "gemm-strategies"], {"--n": st.one_of(NOT_WHOLE, _below(8),
                                                                               st.integers(1025).map(str))}),
    "bench transfer": (["bench", "transfer"], {"--n": st.one_of(BLANK_OR_BROKEN, st.sampled_from(("0", "9999", ","))),
                                               "--gpu": NOT_A_NAME}),
}


@st.composite
def bad_invocations(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    base, options = COMMANDS[command]
    option = draw(st.sampled_from(sorted(options)))
    value = draw(options[option])
    if not option:
        return [*base, value]
    argv = list(base)
    for group in (("--gpu", "--cpu", "--hw"),):
        if option in group:
            for other in group:
                if other in argv:
                    at = argv.index(other)
                    del argv[at:at + 2]
    if option in argv:
        argv[argv.index(option) + 1] = value
        return argv
    return [*argv, f"{option}={value}"]


@SETTINGS
@given(bad_invocations())
def test_every_command_refuses_bad_arguments(argv):
    assert_refused(invoke(argv, {"keep.yaml": KEEP, "keep.png": KEEP}))


@pytest.mark.parametrize("argv", [["hw", "show", "x" * 300 + ".yaml"],
                                  ["predict", "--model", "x" * 300 + ".json", "--gpu", "h100"],
                                  ["predict", "--model", "x" * 300 + "/config.json", "--gpu", "h100"]])
def test_a_name_longer_than_the_file_system_allows_is_refused(argv):
    # a .yaml / .json name over 255 bytes makes the OS refuse the lookup itself (ENAMETOOLONG), found by
    # benchmarks/fuzz_contract.py: the refusal is the contract's one line
    assert "too long" in assert_refused(invoke(argv))


def test_an_op_with_no_work_in_inference_prints_its_step():
    # a dropout is the identity in inference: nothing runs, the step is 0 s and has no rate; the human view
    # says so instead of formatting the JSON's null
    result = invoke(["predict", "--op", "dropout(numel=4096)", "--gpu", "v100"])
    assert result.code == 0 and "nothing runs" in result.out and "Traceback" not in result.err


@pytest.mark.parametrize("argv", [[], ["nosuch"], ["hw"], ["predict", "--model", "mlp"], ["predict", "--frob"],
                                  ["predict", "--model", "mlp", "--gpu", "v100", "--cpu", "textbook"],
                                  ["advise", "--model", "mlp", "--gpu", "v100", "--train", "--infer"],
                                  ["analyze", "--model", "mlp", "extra"], ["predict", "--model"]])
def test_argparse_errors_are_the_one_line(argv):
    line = assert_refused(invoke(argv))
    assert "usage:" not in line and "--help" in line


# ------------------------------------------------------------------------------------------- user code

USER_MODULES = {
    "import raises": "raise ValueError('broken at import')\n",
    "import exits": "import sys\nsys.exit(3)\n",
    "import exits 0": "raise SystemExit(0)\n",
    "constructor raises": "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                          "        super().__init__()\n        raise KeyError('no config')\n",
    "constructor exits": "import sys, torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                         "        super().__init__()\n        sys.exit(0)\n",
    "forward raises": "import torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                      "        self.fc = torch.nn.Linear(8, 4)\n    def forward(self, x):\n        return {}['key']\n",
    "forward exits": "import sys, torch\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.fc = torch.nn.Linear(8, 4)\n"
                     "    def forward(self, x):\n        sys.exit(1)\n",
}


@pytest.mark.torch
@pytest.mark.parametrize("what", sorted(USER_MODULES))
@pytest.mark.parametrize("command", [["analyze"], ["predict", "--gpu", "v100"],
                                     ["validate", "--no-calibrate", "--budget", "0.05", "--repeats", "1",
                                      "--kind-steps", "0", "--json"]])
def test_user_code_that_raises_or_exits_is_one_line_naming_the_module(what, command):
    pytest.importorskip("torch")
    module = "user_" + re.sub(r"\W", "_", what) + "_" + command[0]
    result = invoke([*command, "--model", f"{module}:Net", "--input-shape", "1,8"],
                    {f"{module}.py": USER_MODULES[what].encode()})
    sys.modules.pop(module, None)
    assert module in assert_refused(result)


# ------------------------------------------------------------------------------------------- user files


@pytest.mark.parametrize("argv,name", [
    (["hw", "detect", "--no-gpu", "--save", "{dir}/keep.yaml"], "keep.yaml"),
    (["advise", "--model", "mlp", "--gpu", "t4", "--plot", "{dir}/keep.png"], "keep.png"),
    (["calibrate", "--quick", "--out", "{dir}/keep.yaml"], "keep.yaml"),
])
def test_a_named_file_is_never_replaced_without_force(argv, name):
    assert "--force" in assert_refused(invoke(argv, {name: KEEP}))


def test_force_replaces_the_file_whole(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("ROOFLINE_HOME", str(tmp_path / "home"))
    target = tmp_path / "keep.png"
    target.write_bytes(KEEP)
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["advise", "--model", "mlp", "--gpu", "t4", "--plot", str(target), "--force", "--json"]) == 0
    assert target.read_bytes().startswith(b"\x89PNG")
    assert [p.name for p in tmp_path.iterdir() if p.name != "home"] == ["keep.png"]


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_file_and_no_partial_one(tmp_path, failure):
    from roofline.files import write_atomically

    target = tmp_path / "profile.yaml"
    target.write_bytes(KEEP)

    def half_then_fail(f):
        f.write(b"half of a new profile")
        raise failure

    with pytest.raises((RooflineError, KeyboardInterrupt)):
        write_atomically(target, half_then_fail, "--out", force=True)
    assert target.read_bytes() == KEEP
    assert [p.name for p in tmp_path.iterdir()] == ["profile.yaml"]


# ------------------------------------------------------------------------------------------- valid corpus


DEVICE_PROFILES = sorted([*(SHIPPED_DIR / "cpu").glob("*.yaml"), *(SHIPPED_DIR / "gpu").glob("*.yaml")])
FABRIC_AND_RUNTIME_PROFILES = sorted(set(SHIPPED_DIR.rglob("*.yaml")) - set(DEVICE_PROFILES))


@pytest.mark.parametrize("path", FABRIC_AND_RUNTIME_PROFILES, ids=lambda p: p.stem)
def test_every_shipped_link_node_and_runtime_profile_shows(path):
    result = invoke(["hw", "show", str(path), "--json"])
    assert result.code == 0, result.err


@pytest.mark.parametrize("path", DEVICE_PROFILES, ids=lambda p: p.stem)
def test_every_shipped_profile_still_loads_and_answers(path):
    for argv in (["hw", "show", str(path), "--json"], ["explain", "--hw", str(path), "--json"],
                 ["predict", "--hw", str(path), "--op", "gemm(m=1024,n=1024,k=1024)", "--json"]):
        result = invoke(argv)
        assert result.code == 0, result.err


README_SKIPPED = ("calibrate", "validate", "bench")
"""Commands that measure this machine for tens of seconds; their own tests run them (test_calibrate,
test_validate, test_bench_cli)."""


def readme_commands() -> list[tuple[list[str], int]]:
    """Each complete `roofline ...` command in README.md with the exit status the README shows for it (2 where
    the next line is a `roofline: error:`), placeholders (NAME, FILE, [..]) and measuring commands left out."""
    lines = (ROOT / "README.md").read_text().splitlines()
    found: list[tuple[list[str], int]] = []
    for i, line in enumerate(lines):
        commands = [line[2:]] if line.startswith("$ roofline ") else re.findall(r"`(roofline [^`]+)`", line)
        for command in commands:
            argv = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)][1:]
            if len(argv) < 2 or argv[0] in README_SKIPPED or re.search(r"NAME|FILE|\[|mypackage", command):
                continue
            following = lines[i + 1] if line.startswith("$ ") and i + 1 < len(lines) else ""
            entry = (argv, 2 if following.startswith("roofline: error:") else 0)
            if entry not in found:
                found.append(entry)
    return found


def test_the_readme_has_commands_to_check():
    assert len(readme_commands()) >= 7


@pytest.mark.parametrize("argv,code", readme_commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_readme_commands_answer_as_the_readme_shows(argv, code):
    # the README's commands run from the repository root: paths in them (a committed calibrated profile) are
    # relative to it
    root = Path(__file__).resolve().parents[1]
    result = invoke([str(root / a) if a.startswith("benchmarks/") else a for a in argv])
    if code == 2:
        assert_refused(result)
    else:
        assert result.code == 0, result.err
