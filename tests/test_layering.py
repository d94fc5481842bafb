"""Imports go down the data flow only: a lower stage never imports a higher one, and no module imports itself
back through others. Read from the source with `ast` (nothing is imported, so torch never loads), counting
imports inside functions and under TYPE_CHECKING too: a deferred import is still a dependency.

The stages, lowest first; a package may import its own modules and any package on a lower line, never one on
its own line or above (README's architecture section explains each):
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "units"),
    ("files",),
    ("hardware", "workload"),
    ("model",),
    ("measure",),
    ("advise", "validate", "lessons"),
    ("report",),
    ("api",),
    ("commands",),
    ("cli", "roofline"),  # "roofline": the package root, which re-exports the API lazily
    ("__main__",),
)
RANK = {stage: rank for rank, stages in enumerate(LAYERS) for stage in stages}
BENEATH = {"roofline.model.cpu_runtime": ("roofline.model.costmodel", "roofline.model.step")}
"""Within a stage: the CPU runtime lies beneath the cost model, which reads what it says (never the reverse)."""

Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported_modules(path: Path) -> set[str]:
    """The roofline modules (and `cli`) a file imports, anywhere in it. `from package import name` counts
    as importing the submodule `package.name` when there is one, else the package."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _is_module(sub) else base)
    return {name for name in found if name == "cli" or name.startswith("roofline.") or name == "roofline"}


def project_graph() -> Graph:
    files = [ROOT / "cli.py", *sorted((ROOT / "roofline").rglob("*.py"))]
    return {module_name(f): imported_modules(f) for f in files}


def stage(module: str) -> str:
    """'cli', or the package (or top-level module) under roofline: roofline.model.step -> 'model'."""
    parts = module.split(".")
    return parts[0] if parts[0] == "cli" or len(parts) == 1 else parts[1]


def layer_violations(graph: Graph) -> list[str]:
    """Each import that goes sideways or up the stages, or touches a stage not in LAYERS."""
    out = []
    for importer, imported in sorted(graph.items()):
        for target in sorted(imported):
            if target == "roofline":
                continue
            low, high = stage(target), stage(importer)
            if low == high:
                continue
            if low not in RANK or high not in RANK:
                out.append(f"{importer} -> {target}: stage {low if low not in RANK else high!r} is in no layer")
            elif RANK[low] >= RANK[high]:
                out.append(f"{importer} ({high}) imports {target} ({low}), which is not below it")
        for lower, above in BENEATH.items():
            if importer.startswith(lower + "."):
                out += [f"{importer} imports {t}, which lies above it" for t in sorted(imported)
                        if t.startswith(above)]
    return out


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm), i.e. import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_reads_every_kind_of_import(tmp_path):
    graph = project_graph()
    assert "roofline.model.step" in graph["roofline.advise.advisor"]  # from roofline.model.step import ...
    assert "roofline.workload.ops" in graph["roofline.workload.zoo._graph"]  # from roofline.workload import ops
    assert "roofline.measure.probes.gemm" in graph["roofline.measure.calibrate"]  # deferred, inside a function
    assert "roofline.commands" in graph["roofline.cli"]
    assert "roofline.cli" in graph["cli"]


def test_the_checker_fails_when_a_lower_stage_imports_a_higher_one():
    synthetic = {
        "roofline.model.step": {"roofline.workload.ops", "roofline.advise.advisor"},  # up: advise is above model
        "roofline.hardware.load": {"roofline.workload.zoo"},  # sideways: peers on one line
        "roofline.advise.advisor": {"roofline.model.step", "roofline.errors"},  # down: fine
        "roofline.model.costmodel": {"roofline.model.ceilings"},  # within a stage: fine
        "roofline.llm.phases": {"roofline.model.step"},  # a package nobody placed
        "roofline.model.cpu_runtime.heap": {"roofline.model.costmodel"},  # beneath the cost model it feeds
    }
    found = layer_violations(synthetic)
    assert len(found) == 4
    assert "roofline.model.cpu_runtime.heap imports roofline.model.costmodel, which lies above it" in found
    assert any(v.startswith("roofline.model.step (model) imports roofline.advise.advisor") for v in found)
    assert any(v.startswith("roofline.hardware.load (hardware) imports roofline.workload.zoo") for v in found)
    assert any("'llm' is in no layer" in v for v in found)


def test_the_cycle_finder_finds_a_circle_and_only_that():
    synthetic = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(synthetic) == [["a", "b", "c"]]


def test_imports_go_down_the_stages_only():
    assert layer_violations(project_graph()) == []


def test_no_import_circles():
    assert cycles(project_graph()) == []
