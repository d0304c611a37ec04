"""Shared fixtures for the whole test suite.

Tests must run offline on a 2-core CPU machine: nothing here downloads anything; the real corpus is the copy
embedded in the package (see `shakespeare_path`), so no test skips for want of it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

try:  # Engine tests use tiny models: one thread is faster than several contending on a 2-core CI machine.
    import torch
except ImportError:  # pragma: no cover - torch is a hard requirement, but the browser tests don't need it here
    torch = None
else:
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_text() -> str:
    """A small deterministic corpus: ~3,000 characters over 16 distinct characters, with learnable structure."""
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "to", "hat"]
    rng = random.Random(1234)
    lines = []
    while sum(len(line) + 1 for line in lines) < 3000:
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + ".")
    text = "\n".join(lines) + "\n"
    assert len(text) > 2000
    return text


@pytest.fixture
def tmp_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty runs root for this test; TINYGPT_RUNS_DIR points at it for code that reads the environment."""
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(runs))
    return runs


@pytest.fixture(scope="session")
def shakespeare_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path to a plain-text Tiny Shakespeare: $TINYGPT_SHAKESPEARE (an override), else the package's embedded
    copy written out once per session (load_shakespeare checks its sha256)."""
    env = os.environ.get("TINYGPT_SHAKESPEARE")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            pytest.fail(f"TINYGPT_SHAKESPEARE={env!r} is not a file")
        return path.resolve()
    from tinygpt.data import load_shakespeare

    saved = os.environ.pop("TINYGPT_SHAKESPEARE", None)
    try:
        text = load_shakespeare()
    finally:
        if saved is not None:
            os.environ["TINYGPT_SHAKESPEARE"] = saved
    path = tmp_path_factory.mktemp("corpus") / "tinyshakespeare.txt"
    path.write_text(text, encoding="utf-8", newline="")
    return path


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A fresh runs folder for an app test (TINYGPT_RUNS_DIR); its RunManager, cached per folder, is shut down
    after the test so no worker outlives it. Imported lazily: engine tests must not load the app."""
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(tmp_path / "runs"))
    yield tmp_path / "runs"
    try:
        from tinygpt.ui.host import resources

        resources.manager_at(str((tmp_path / "runs").resolve())).shutdown()
    except Exception:
        pass
    try:  # the learners' lesson positions are the server's, not the folder's: one test's anna was another's
        from tinygpt.ui.host import resources

        resources.positions.clear()
    except Exception:
        pass


# The quick tier, `bash tests/run.sh -m "not slow and not browser" -n 2` (README, Tests): every module's unit tests in a
# few minutes on 2 cores. These train real runs, start worker processes or walk every page, for 2 s to a minute
# each (measured with `pytest --durations=0` on 2 cores); the full command runs them. Listed by name here, in one
# place, so the tier is one list to keep true rather than a decorator scattered over twenty files.
SLOW_TESTS = frozenset(
    {
        "tests/cli/test_cli.py::test_readme_first_command_trains_shakespeare_offline",
        "tests/cli/test_cli.py::test_resume_of_a_run_without_a_checkpoint_starts_it_over",
        "tests/cli/test_cli.py::test_train_then_sample_end_to_end",
        "tests/cli/test_cli_in_app.py::test_app_lists_and_charts_a_run_the_cli_is_still_writing",
        "tests/cli/test_cli_properties.py::test_every_flag_value_exits_2_with_one_line_or_runs_never_a_traceback",
        "tests/lab/test_circuits.py::test_a_two_layer_model_forms_an_induction_head_and_a_one_layer_model_cannot",
        "tests/lab/test_experiments.py::test_a_lab_experiment_runs_and_is_probed_on_the_users_own_text",
        "tests/lab/test_experiments.py::test_every_pitfall_reproduces_on_three_seeds",
        "tests/runs/test_distributed.py::test_two_gloo_ranks_match_one_process_with_twice_the_batch",
        "tests/runs/test_loop.py::test_resume_follows_the_uninterrupted_curve_exactly",
        "tests/runs/test_store.py::test_reader_memory_stays_bounded",
        "tests/runs/test_worker.py::test_killing_the_server_leaves_no_worker",
        "tests/runs/test_worker.py::test_resume_during_a_release_restarts_and_stop_after_it_stops",
        "tests/runs/test_worker.py::test_start_and_stop_50_runs_leaves_no_process_or_thread",
        "tests/runs/test_worker.py::test_the_rooms_time_budget_stops_a_run_with_a_checkpoint_and_says_why",
        "tests/test_reliability.py::test_4_ctrl_c_of_the_cli_then_resume_follows_the_uninterrupted_curve",
        "tests/test_reliability.py::test_4_sigkill_of_a_worker_then_resume_follows_the_uninterrupted_curve_step_by_step",
        "tests/test_tampered_runs.py::test_every_page_survives_a_tampered_run_file",
        "tests/ui/charts/test_charts.py::test_a_100k_step_run_sends_a_bounded_payload",
        "tests/ui/people/test_admission.py::test_an_experiment_is_one_slot_within_the_rooms_budget",
        "tests/ui/people/test_admission.py::test_the_instructor_prepares_several_runs_without_a_question",
        "tests/ui/test_app.py::test_pages_on_a_saved_run_and_the_bundle",
        "tests/ui/test_app.py::test_the_browsers_stale_copy_of_a_widget_the_page_set_does_not_undo_a_knob_move",
        "tests/ui/test_app.py::test_train_then_steps_update_status_and_every_page_renders",
        "tests/ui/test_circuits_app.py::test_circuits_follows_the_experiment_it_starts_and_never_prints_none",
        "tests/ui/test_circuits_app.py::test_the_page_shows_heads_ablation_and_lens_of_a_run",
        "tests/ui/train/test_knob_widgets.py::test_a_burst_on_warmup_changes_warmup_only_though_a_stale_exact_box_rides_along",
        "tests/ui/train/test_knob_widgets.py::test_bring_to_the_projector_shows_none_of_the_last_runs_knob_notes",
        "tests/ui/test_lab_app.py::test_an_experiment_runs_on_the_learners_own_text_and_an_empty_box_says_so",
        "tests/ui/test_lab_app.py::test_running_an_experiment_trains_both_variants_and_colours_the_verdict",
        "tests/ui/people/test_room.py::test_the_rooms_time_budget_goes_with_a_learners_run_and_stops_it_with_the_reason",
        "tests/ui/people/test_room_controls.py::test_an_instructors_pause_is_a_hold_the_learner_cannot_undo",
        "tests/ui/people/test_room_controls.py::test_large_fonts_stays_on_per_browser_across_refreshes",
        "tests/ui/people/test_room_controls.py::test_the_room_pauses_every_learners_run_as_a_hold_and_lets_go_at_once",
        "tests/ui/people/test_room_controls.py::test_the_room_holds_one_learners_run_and_lets_it_go",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
