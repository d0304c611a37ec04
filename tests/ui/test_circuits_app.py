"""The Circuits page through AppTest: it renders without a run, and on a finished tiny run it shows the head
table, the ablation and the logit lens, and refuses the live head switch for a run that is not training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.loop import run_training
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.circuits import circuits_keys
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import fonts

REPO = Path(__file__).resolve().parents[2]


def app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def test_the_page_renders_without_a_run(runs_dir):
    at = app()
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    assert "No run selected" in texts(at)
    assert any(b.label == "Start the experiment" for b in at.button)
    # Issue 23 finding 8: the corpus on which an induction head forms on real text, and why, under the choice
    at.selectbox(key=circuits_keys.W_CIRC_SOURCE).set_value("shakespeare:repeats").run()
    assert "passage of 4-16 characters twice" in texts(at) and not at.exception
    at.selectbox(key=circuits_keys.W_CIRC_SOURCE).set_value("shakespeare").run()
    assert "no induction head formed in 4,000 steps" in texts(at)


def circuits_of_a_trained_run(runs_dir, text: str, **settings) -> AppTest:
    """The Circuits page of a tiny run trained to its end (tiny_config with `settings`), the run in view."""
    store = RunStore(runs_dir)
    config = tiny_config(text, **settings)
    with store.create(config.to_dict(), owner="cli") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    at = app()
    at.query_params["run"] = run_dir.name
    at.run()
    at.switch_page("pages/circuits.py").run()
    return at


def test_the_page_shows_heads_ablation_and_lens_of_a_run(runs_dir, tiny_text):
    at = circuits_of_a_trained_run(runs_dir, tiny_text, max_steps=30)
    assert not at.exception, at.exception
    shown = texts(at)
    assert "Heads at step 30" in shown
    assert "held-out characters; every head ablated in turn" in shown
    assert "Top guess right, by where the stream is read" in shown
    assert "The switch needs a run that is training now." in shown
    [table] = [d for d in at.dataframe if "role" in d.value.columns]
    assert list(table.value["head"]) == ["L0H0", "L0H1", "L1H0", "L1H1"]
    at.selectbox(key=circuits_keys.W_CIRC_HEAD).set_value("L1H1").run()
    at.segmented_control(key=circuits_keys.W_CIRC_MODE).set_value("mean").run()
    assert not at.exception, at.exception
    # On a projector the lens draws the probe's last 16 characters (31 made 10 px letters), and says so; the counts
    # stay the whole probe's


def test_the_experiments_page_links_the_induction_runs_to_circuits_and_back(runs_dir, tiny_text):
    store = RunStore(runs_dir)
    ids = []
    for layers in (2, 1):  # stand-ins for the experiment's two runs (labels in circuits.INDUCTION_VARIANTS)
        config = tiny_config(tiny_text, max_steps=10, num_layers=layers)
        with store.create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        assert run_training(writer.run_dir, config) == "finished"
    at = app()
    at.switch_page("pages/experiments.py").run()
    assert not at.exception, at.exception
    [link] = [e for e in at.get("page_link") if "Run it on Circuits" in e.proto.label]
    assert link.proto.page.endswith("circuits")
    at.query_params[circuits_keys.URL_CIRC] = ",".join(ids)  # a session that started the experiment (or a link to it)
    at.run()
    assert not at.exception, at.exception
    [link] = [e for e in at.get("page_link") if "on Circuits" in e.proto.label]
    assert "See its phase change" in link.proto.label
    assert link.proto.query_string == f"{in_view.URL_RUN}={ids[0]}&{circuits_keys.URL_CIRC}={ids[0]}%2C{ids[1]}"
    assert "Did not reproduce." in texts(at)  # 10 steps: the verdict is computed, and honest
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    assert any("pitfall lab" in e.proto.label for e in at.get("page_link"))


def test_circuits_follows_the_experiment_it_starts_and_never_prints_none(runs_dir, tiny_text, monkeypatch):
    """Issue 24 finding 6: after "Start the experiment" the heads section still showed the previous run until
    the 2-layer run was clicked, and the head table printed None under "since step"."""
    from tinygpt.lab import induction
    from tinygpt.ui.people import admission

    store = RunStore(runs_dir)
    ids = []
    for layers in (1, 2, 1):  # an earlier run the page shows, then the experiment's two (stand-ins, trained here)
        config = tiny_config(tiny_text, max_steps=10, num_layers=layers)
        with store.create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        assert run_training(writer.run_dir, config) == "finished"
    earlier, two_layer, one_layer = ids
    labels = list(induction.INDUCTION_VARIANTS)
    monkeypatch.setattr(admission, "start", lambda *a, **k: {labels[0]: two_layer, labels[1]: one_layer})
    at = app()
    at.query_params["run"] = earlier
    at.run()
    at.switch_page("pages/circuits.py").run()
    assert at.session_state[state.RUN_ID] == earlier
    next(b for b in at.button if b.label == "Start the experiment").click().run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == two_layer  # the heads below are the experiment's 2-layer run
    from tinygpt.ui.host import runlist

    name = runlist.run_names(store)[two_layer]
    assert any(name in c.value and two_layer in c.value for c in at.caption)  # named as Runs names it
    [table] = [d for d in at.dataframe if "role" in d.value.columns]
    assert list(table.value["head"])[:4] == ["L0H0", "L0H1", "L1H0", "L1H1"]
    assert not any(v is None or str(v) in ("None", "nan") for v in table.value["since step"])


def test_a_phase_change_found_mid_run_is_provisional():
    """Issue 24 finding 6: the marked phase change moved from @1120 mid-run to @1260 at the end, unannounced."""
    from tinygpt.ui.circuits import circuits_view

    grid = lambda s: [[0.05, s], [0.05, 0.05]]  # noqa: E731 - (L, H) induction scores of one record
    records = [{"step": 100 * i, "roles": {"induction": grid(0.05 if i < 5 else 0.8)}} for i in range(10)]
    for r in records:
        r["copy_loss"] = {"first": 3.0, "second": 3.0 if r["step"] < 500 else 1.0}
    live = circuits_view.change_caption({"2 layers": records}, ended=False)
    done = circuits_view.change_caption({"2 layers": records}, ended=True)
    assert "provisional" in live and "provisional" not in done
    assert "provisional" in circuits_view.change_mark(records, live=True)["label"]
    assert "provisional" not in circuits_view.change_mark(records, live=False)["label"]


def test_the_head_table_and_its_sentences_name_the_phase_change_step_for_its_head():
    """Issue 33 finding 8: one screen named three steps (820/1300 in the check, 1260 in the caption, "since step
    1880" in the head table). The phase change's head is an induction head "since" the phase change itself."""
    from tinygpt.ui.circuits import circuits_view

    grid = lambda s: [[0.05, 0.05], [0.05, s]]  # noqa: E731 - (L, H) induction scores: L1H1 the copier
    records = [{"step": 100 * i, "roles": {"induction": grid(0.05 if i < 5 else 0.8)},
                "baselines": {"induction": 0.05}} for i in range(10)]  # fmt: skip
    for r in records:
        r["copy_loss"] = {"first": 3.0, "second": 3.0 if r["step"] < 500 else 1.0}
    change = circuits_view.heads.phase_change(records)
    assert change.head == "L1H1" and change.score is not None
    row = next(r for r in circuits_view.head_rows(records, None) if r["head"] == "L1H1")
    assert row["since step"] == f"{change.score.step} (phase change)"
    assert any(f"since the phase change at step {change.score.step}" in s
               for s in circuits_view.role_sentences(records, None))  # fmt: skip
    before = next(r for r in circuits_view.head_rows(records, 300) if r["head"] == "L1H1")  # before the jump
    assert "(phase change)" not in before["since step"]


def test_the_page_names_one_best_head_and_says_when_the_snapshots_rank_another(runs_dir, tiny_text, monkeypatch):
    """A browser run showed L1H2 as "best head" in the phase-change caption (the training-time snapshot scores) and
    L1H1 in the verdict (256 fresh probe rows) on one screen. Here the verdict's measurement is made to pick another
    head than the snapshots do: every caption that names a best head names the verdict's, saying where its number
    is from, and the snapshots' pick appears only as their own ranking, with both numbers."""
    from tinygpt.inside import heads
    from tinygpt.runs.files import read_scores

    store = RunStore(runs_dir)
    ids = induction_pair(store, tiny_text)
    snapshots = heads.best_series(read_scores(store.path(ids[0])))[-1]  # {"step", "score", "name"}
    fresh = "L0H0" if snapshots["name"] != "L0H0" else "L1H1"  # the verdict's measurement disagrees

    at = circuits_page_measuring(fresh, ids, monkeypatch)  # the verdict's measurement disagrees
    captions = [str(c.value) for c in at.caption]
    [red] = [c for c in captions if "Red rules" in c]  # the phase-change chart's caption
    assert f"2 layers: no phase change (best head {fresh}, 0.45 on 256 fresh probe rows at step 10)" in red
    ranked = (f"the training-time snapshot scores on 2 fixed probe rows rank {snapshots['name']} first at step "
              f"{snapshots['step']} ({snapshots['score']:.2f}; {fresh} ")  # fmt: skip
    assert f"2 layers: {ranked}" in red and f"picks {fresh} (0.45)" in red
    heads_caption = ("Best induction head of this run (2 layers), as the induction experiment's verdict measures "
                     f"it: {fresh}, 0.45 on 256 fresh probe rows at step 10")  # fmt: skip
    assert any(c.startswith(heads_caption) for c in captions)
    [roles] = [c for c in captions if c.startswith("Each head's role scores")]  # the role chart's own caption
    assert ranked[0].upper() + ranked[1:] in roles and f"picks {fresh} (0.45)" in roles
    shown = texts(at) + "\n".join(str(e.value) for e in (*at.error, *at.success))
    assert f"best head {snapshots['name']}" not in shown  # named only as the snapshots' own ranking


def test_a_newly_viewed_run_starts_at_its_last_snapshot_not_the_step_chosen_on_an_earlier_run(runs_dir, tiny_text):
    """Review defect 1: after a 3000-step induction pair the heads section said "Heads at step 300" and "From the
    checkpoint at step 300", the step Ada had chosen on her earlier Demo run, snapped to the nearest snapshot,
    directly below a verdict at step 3000. The chosen step belongs to the run it was chosen on."""
    store = RunStore(runs_dir)
    ids = []
    for steps in (30, 20):  # an earlier run, then the run the learner looks at next
        config = tiny_config(tiny_text, max_steps=steps)
        with store.create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        assert run_training(writer.run_dir, config) == "finished"
    earlier, later = ids
    at = app()
    at.query_params[in_view.URL_RUN] = earlier
    at.run()
    at.switch_page("pages/circuits.py").run()
    assert "Heads at step 30" in texts(at)
    at.select_slider(key=circuits_keys.W_CIRC_STEP).set_value(5).run()  # the learner looks at an early step
    assert not at.exception, at.exception
    assert "Heads at step 5" in texts(at)
    at.query_params[in_view.URL_RUN] = later  # the next run in view
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[state.RUN_ID] == later
    shown = texts(at)
    assert "Heads at step 20" in shown and "Heads at step 5" not in shown
    assert "From the checkpoint at step 20 (the same step)" in shown
    at.select_slider(key=circuits_keys.W_CIRC_STEP).set_value(10).run()  # a step chosen on this run stays
    assert "Heads at step 10" in texts(at)
    at.run()
    assert "Heads at step 10" in texts(at)


def test_the_head_picker_opens_on_the_induction_head_the_checks_are_about(runs_dir, tiny_text, monkeypatch):
    """The review's step 11: the Head picker opened on L0H0 (+0.023 when ablated), "Next-character probability
    with L0H0 ablated", beside a check about L1H1 (+0.671). It opens on the verdict's head, and a head chosen
    after that stays."""

    store = RunStore(runs_dir)
    ids = induction_pair(store, tiny_text)

    at = circuits_page_measuring("L1H1", ids, monkeypatch)  # the verdict's head, from its data: not the first one
    assert at.selectbox(key=circuits_keys.W_CIRC_HEAD).value == "L1H1"
    at.selectbox(key=circuits_keys.W_CIRC_HEAD).set_value("L0H1").run()  # the learner's own choice stays
    at.run()
    assert at.selectbox(key=circuits_keys.W_CIRC_HEAD).value == "L0H1"


def circuits_page_measuring(head: str, ids: list[str], monkeypatch):
    """The Circuits page on the induction runs `ids`, its final measurement stubbed to find `head` (0.45 on 256
    fresh probe rows at the run's step)."""
    from tinygpt.ui.circuits import circuits_view

    def measured(run_dir: str, step: int) -> dict:
        return {"head": head, "mean": 0.45, "std": 0.2, "low": 0.43, "high": 0.47, "rows": 256, "baseline": 0.05,
                "step": step, "length": 8}  # fmt: skip

    monkeypatch.setattr(circuits_view, "_final_at", measured)
    at = app()
    at.query_params[in_view.URL_RUN] = ids[0]
    at.query_params[circuits_keys.URL_CIRC] = ",".join(ids)
    at.run()
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    return at


def induction_pair(store, text: str) -> list[str]:
    """Stand-ins for the induction experiment's two runs (2 layers, 1 layer), trained to the end: their ids."""
    ids = []
    for layers in (2, 1):
        config = tiny_config(text, max_steps=10, num_layers=layers)
        with store.create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        assert run_training(writer.run_dir, config) == "finished"
    return ids


def test_on_a_projector_the_lens_draws_the_probes_last_16_characters_and_says_so(runs_dir, tiny_text):
    """A review's projector (1280x720, Large fonts) drew step 12's lens at 31 positions: 10 px letters and check
    marks that ran together ("w✓m✓w✓v✓"). The counts under it stay the whole probe's."""
    at = circuits_of_a_trained_run(runs_dir, tiny_text, max_steps=10, max_seq_len=32)
    at.text_input(key=circuits_keys.W_CIRC_PROBE).set_value("the cat sat on a mat. the dog ran to").run()
    assert "Top guess right" in texts(at) and "counts cover all" not in texts(at)  # every position drawn
    at.toggle(key=fonts.W_LARGE).set_value(True).run()
    assert not at.exception, at.exception
    assert "The chart shows the probe's last 16 characters at Large fonts; counts cover all 31." in texts(at)
    [lens] = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Logit lens" in c.proto.spec]
    assert len(lens["layout"]["xaxis"]["ticktext"]) == 16 and len(lens["data"][0]["x"]) == 16
