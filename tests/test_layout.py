"""The shape of the house, checked: no import cycles inside tinygpt, no private name imported across modules, no
file of the package over 500 lines, pages under 200, and its parts layered (the lesson at the bottom, then the
instruments, the run machinery, the lab, and the CLI, the benchmarks and the app on top), so `tinygpt/` reads top to
bottom as the lesson with each other concern in a folder of its own.

    tinygpt/*.py      the lesson: config, tokenizer, data, shapes, attention, model, optim, trainer, sampling, ...
    tinygpt/inside/   instruments that look inside a model (attention maps, the lens, head roles)
    tinygpt/runs/     the run folder, the training loop, the worker processes and their scheduler
    tinygpt/lab/      the pitfalls (one module each), their verdicts, health checks, the induction experiment
    tinygpt/cli/      python -m tinygpt
    tinygpt/bench/    benchmark scripts
    tinygpt/ui/       the app's side (state, charts, views)
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tinygpt"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path) -> list[tuple[str, str, ast.AST]]:
    """(imported module, imported name or "", node) for every import in a file, lazy ones included."""
    module, tree = module_name(path), ast.parse(path.read_text())
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, "", node) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(module, node, path.name == "__init__.py")
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                out.append((submodule, "", node) if submodule in modules else (target, alias.name, node))
    return out


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        deps = {m for m, _, _ in imports_of(path) if m.startswith("tinygpt")}
        edges[module_name(path)] = {d for d in deps if d != module_name(path)}
    return edges


def test_no_import_cycles_in_the_package():
    edges, cycles = graph(), []

    def visit(node: str, trail: list[str]) -> None:
        for dep in sorted(edges.get(node, ())):
            if dep in trail:
                cycles.append(trail[trail.index(dep) :] + [dep])
            elif dep not in done:
                visit(dep, trail + [dep])
        done.add(node)

    done: set[str] = set()
    for start in sorted(edges):
        if start not in done:
            visit(start, [start])
    assert not cycles, cycles


def test_no_private_name_is_imported_across_modules():
    offenders = []
    for path in [*PACKAGE.rglob("*.py"), *(REPO / "pages").glob("*.py"), REPO / "app.py"]:
        for module, name, node in imports_of(path):
            if module.startswith("tinygpt") and name.startswith("_"):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno} imports {module}.{name}")
    assert not offenders, offenders


def test_pages_are_thin_and_ui_modules_stay_small():
    pages = {p.name: len(p.read_text().splitlines()) for p in (REPO / "pages").glob("*.py")}
    ui = {p.name: len(p.read_text().splitlines()) for p in (PACKAGE / "ui").rglob("*.py")}
    assert max(pages.values()) <= 200, pages
    assert max(ui.values()) <= 500, ui


def test_no_file_in_the_package_is_over_500_lines():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 500} == {}


# Each part may import only from the parts listed before it (and itself): an import of a later part runs back up.
LAYERS = ("lesson", "inside", "runs", "lab", "cli", "bench", "ui")


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in LAYERS else "lesson"


def test_the_parts_are_layered_the_lesson_at_the_bottom():
    upward = []
    for module, deps in sorted(graph().items()):
        if module in ("tinygpt", "tinygpt.__main__"):  # the package's face and `python -m tinygpt` (the CLI)
            continue
        here = LAYERS.index(part_of(module))
        for dep in sorted(deps):
            if dep != "tinygpt" and LAYERS.index(part_of(dep)) > here:
                upward.append(f"{module} ({part_of(module)}) imports {dep} ({part_of(dep)})")
    assert upward == [], upward


def test_the_lesson_imports_only_the_lesson():
    """The lesson modules (the top of tinygpt/) read alone: nothing from the run machinery, the lab, the
    instruments, the CLI, the benchmarks or the app."""
    lesson = {
        m: deps for m, deps in graph().items() if part_of(m) == "lesson" and m not in ("tinygpt", "tinygpt.__main__")
    }
    assert set(lesson) >= {"tinygpt.config", "tinygpt.model", "tinygpt.attention", "tinygpt.trainer"}, sorted(lesson)
    outside = {m: sorted(d for d in deps if part_of(d) != "lesson") for m, deps in lesson.items()}
    assert {m: d for m, d in outside.items() if d} == {}


# Test folders that are not a part of the package: real-browser tests and the GPU checks (run where there is one).
TEST_ONLY_FOLDERS = {"browser", "gpu"}


def test_the_tests_mirror_the_package():
    """tests/ has the package's shape: tests/runs/ tests tinygpt/runs/, tests/ui/charts/ tinygpt/ui/charts/, the
    lesson's tests sit at the top as the lesson does; only the browser and GPU suites stand apart."""
    tests = REPO / "tests"
    folders = [
        d.relative_to(tests)
        for d in tests.rglob("*")
        if d.is_dir()
        and d.name != "__pycache__"
        and not any(p in TEST_ONLY_FOLDERS for p in d.relative_to(tests).parts)
    ]
    assert folders, "tests/ has no sub-folders: the package's parts are not mirrored"
    assert [str(f) for f in folders if not (PACKAGE / f).is_dir()] == []
    for folder in folders:
        assert list((tests / folder).glob("test_*.py")), f"tests/{folder} holds no tests"
