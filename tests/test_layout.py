"""The shape of the house, checked: no import cycles inside tinygpt, no private name imported across modules,
pages and ui modules of a bounded size."""

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
