"""The shape of the house, checked: no import cycles inside tinygpt, no private name imported across modules, no
file of the package over 500 lines, pages under 200, and its parts layered (the engine at the bottom, then the
instruments, the run machinery, the lab, and the CLI, the benchmarks and the app on top), so `tinygpt/` reads top to
bottom as the engine with each other concern in a folder of its own; tests/ mirrors it, each test file named after
the module it tests (or listed, with why, as cutting across modules).

    tinygpt/*.py      the engine: config, tokenizer, data, shapes, attention, model, optim, trainer, sampling, ...
    tinygpt/inside/   instruments that look inside a model (attention maps, the lens, head roles)
    tinygpt/runs/     the run folder, the training loop, the worker processes and their scheduler
    tinygpt/lab/      the pitfalls (one module each), their verdicts, health checks, the induction experiment
    tinygpt/cli/      python -m tinygpt
    tinygpt/bench/    benchmark scripts
    tinygpt/ui/       the app's side, in folders layered the same way (UI_LAYERS below): words and charts at the
                      bottom (no Streamlit), then the session, the screen, the server's shared things, the room, the
                      run in view, one folder a page, the lesson, and the frame on top
"""

from __future__ import annotations

import ast
from fnmatch import fnmatch
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
    ui = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in (PACKAGE / "ui").rglob("*.py")}
    assert max(pages.values()) <= 200, pages
    assert max(ui.values()) <= 500, ui


def test_no_file_in_the_package_is_over_500_lines():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 500} == {}


# Each part may import only from the parts listed before it (and itself): an import of a later part runs back up.
LAYERS = ("engine", "inside", "runs", "lab", "cli", "bench", "ui")


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in LAYERS else "engine"


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
    """The engine modules (the top of tinygpt/) read alone: nothing from the run machinery, the lab, the
    instruments, the CLI, the benchmarks or the app."""
    engine = {
        m: deps for m, deps in graph().items() if part_of(m) == "engine" and m not in ("tinygpt", "tinygpt.__main__")
    }
    assert set(engine) >= {"tinygpt.config", "tinygpt.model", "tinygpt.attention", "tinygpt.trainer"}, sorted(engine)
    outside = {m: sorted(d for d in deps if part_of(d) != "engine") for m, deps in engine.items()}
    assert {m: d for m, d in outside.items() if d} == {}


# tinygpt/ui/ is layered the same way, folder by folder (a top-level module, state.py or frame.py, is a part of
# its own): each part may import only the parts listed before it (and itself).
UI_LAYERS = (
    "words",  # what a run's records say, as text and tables: no Streamlit, no files
    "charts",  # pure data -> figures: no Streamlit, no file IO
    "state",  # the session's get/put
    "screen",  # what every page's screen shares: Large fonts, flashes, the figure cache, chart help, a slow browser
    "host",  # what the one server shares: the run store and manager, readers, run lists, live watchers, positions
    "people",  # identity and admission: learners, the instructor, the room's budget, workshop flags
    "run",  # the run in view: its id in the URL, its reader, the handle a page opens
    "train",  # one folder a page from here: its keys and its view together
    "runs",
    "attention",
    "gradients",
    "sample",
    "circuits",
    "experiments",
    "teach",  # the lesson and the classroom around it: it sets up every page's steps
    "frame",  # what every page runs inside
)
PAGE_PARTS = UI_LAYERS[UI_LAYERS.index("train") :]  # the folders a page (or the lesson, or the frame) owns
NO_STREAMLIT = ("words", "charts")


def ui_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[:2] == ["tinygpt", "ui"] else None


def test_every_ui_module_sits_in_a_ui_layer():
    """A new folder (or top-level module) of tinygpt/ui takes a place in UI_LAYERS before its first import."""
    parts = {ui_part(m) for m in graph()} - {None}
    assert parts - set(UI_LAYERS) == set(), sorted(parts - set(UI_LAYERS))


def test_the_ui_folders_are_layered_words_at_the_bottom_the_frame_on_top():
    upward = []
    for module, deps in sorted(graph().items()):
        here = ui_part(module)
        for dep in sorted(deps):
            there = ui_part(dep)
            if here and there and UI_LAYERS.index(there) > UI_LAYERS.index(here):
                upward.append(f"{module} ({here}) imports {dep} ({there})")
    assert upward == [], upward


def test_no_shared_ui_folder_imports_a_page_folder():
    """What pages share (the words, the charts, the session, the screen, the server's things, the room, the run in
    view) never reaches into one page's folder: a page's keys and view are its own."""
    shared = set(UI_LAYERS) - set(PAGE_PARTS)
    reaching = [
        f"{m} imports {d}"
        for m, deps in sorted(graph().items())
        if ui_part(m) in shared
        for d in sorted(deps)
        if ui_part(d) in PAGE_PARTS
    ]
    assert reaching == [], reaching


def test_words_and_charts_never_import_streamlit():
    """They read alone, so their tests need no app (and a chart or a sentence can be checked without a server)."""
    offenders = []
    for part in NO_STREAMLIT:
        for path in sorted((PACKAGE / "ui" / part).rglob("*.py")):
            for module, _, node in imports_of(path):
                if module.split(".")[0] == "streamlit":
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == [], offenders


# Test folders that are not a part of the package: real-browser tests and the GPU checks (run where there is one).
TEST_ONLY_FOLDERS = {"browser", "gpu"}


# Test files named after no module of their folder's part of the package, each for a reason: what they test cuts
# across modules (or lives outside the package: app.py and pages/). Patterns, relative to tests/ (fnmatch).
CROSS_CUTTING_TESTS = {
    "test_bench_levers.py": "tinygpt/bench/levers.py stays runnable; the benchmarks have no tests/ folder of their own",
    "test_engine_imports.py": "the whole package imports without the app's stack (streamlit, plotly, pandas)",
    "test_layout.py": "the shape of the house: this file",
    "test_limits.py": "the one table of limits (config.LIMITS) at every door: config, CLI, workshop link, form",
    "test_precision.py": "the training step's precision across device.py and trainer.py",
    "test_readme.py": "the README as a contract",
    "test_reliability.py": "RELIABILITY.md's table, one case at a time, across the engine, the CLI and the app",
    "test_tampered_runs.py": "hostile run files through the readers and every page",
    "cli/test_cli*.py": "`python -m tinygpt` as a whole, through main() (the package's face, cli/__init__.py)",
    "inside/test_circuits_lens.py": "head ablation and the logit lens against the model's own head switch and probes",
    "inside/test_inside.py": "the attention maps (inside/maps.py) against the model's forward pass",
    "lab/test_circuits.py": "head roles (inside/heads.py), the induction experiment and the scores the loop stores",
    "lab/test_experiments.py": "every pitfall experiment, its verdict and the health checks (experiment.py, pitfalls/)",
    "runs/test_priority.py": "the queue's priority classes across jobs.py, slots.py and scheduler.py (issue 35)",
    "ui/charts/test_charts.py": "the charts package's rules, its shared style and one run's curves",
    "ui/charts/test_chart_*.py": "one chart topic read back through to_dict() (compare, heatmaps, a branch point)",
    "ui/test_app*.py": "the app (app.py and pages/, outside the package) through AppTest, and its hostile inputs",
    "ui/test_*_app.py": "a page or feature through AppTest: the pages live outside the package",
    "ui/test_captions.py": "captions that follow their data, across runinfo, the charts and their help",
    "ui/test_first_minutes.py": "what a newcomer reads in the first five minutes, across pages (issue 36)",
    "ui/test_readers.py": "the server's shared run readers (run/in_view.ReaderPool) with the engine's RunReader",
    "ui/test_small_untruths.py": "small untruths on screen across views (issue 20)",
}


def names_a_module(name: str, package: Path) -> bool:
    """`name` (of test_<name>.py) is a module or sub-package of `package`, or one topic of one (<module>_<topic>)."""
    if not package.is_dir():
        return False
    modules = {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    return any(name == m or name.startswith(f"{m}_") for m in modules)


def test_the_tests_mirror_the_package():
    """tests/ has the package's shape: tests/runs/ tests tinygpt/runs/, tests/ui/charts/ tinygpt/ui/charts/, the
    engine's tests sit at the top as the engine does; only the browser and GPU suites stand apart. And each test file
    is named after a module of its folder's part (tests/runs/test_store.py tests tinygpt/runs/store.py): one named
    after a module that is gone (it was test_runstore.py) sends its reader looking; one that tests several modules
    says why in CROSS_CUTTING_TESTS."""
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
    unnamed = []
    for test in sorted(tests.rglob("test_*.py")):
        where = test.relative_to(tests)
        if where.parts[0] in TEST_ONLY_FOLDERS or any(fnmatch(str(where), p) for p in CROSS_CUTTING_TESTS):
            continue
        if not names_a_module(test.stem.removeprefix("test_"), PACKAGE / where.parent):
            unnamed.append(str(where))
    assert unnamed == [], f"name these after their module, or add them to CROSS_CUTTING_TESTS with why: {unnamed}"


def test_every_cross_cutting_entry_still_names_a_test_file():
    tests = [str(t.relative_to(REPO / "tests")) for t in (REPO / "tests").rglob("test_*.py")]
    assert [p for p in CROSS_CUTTING_TESTS if not any(fnmatch(t, p) for t in tests)] == []
