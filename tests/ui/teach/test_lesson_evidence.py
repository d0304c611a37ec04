"""Whose runs a lesson check judged: the pane's check and a learner's own Experiments verdict carry the same title,
so each names its runs, corpus and seed, read from the runs' configs (tinygpt/ui/teach/lesson_evidence.py,
tinygpt/ui/words/run_words.runs_about)."""

from __future__ import annotations

from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.runs.owners import Actor
from tinygpt.runs.store import RunStore
from tinygpt.ui.teach import lesson, lesson_evidence
from tinygpt.ui.words import run_words

TEACHER = Actor("t" * 16, "teacher", instructor=True)
ADA = Actor("a" * 16, "Ada")
TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog.\n" for i in range(200))


def start(store: RunStore, owner: Actor, seed: int, source: str) -> dict[str, str]:
    """The scaling pitfall's two runs, as admission.start writes them (the learner in config.json), not trained."""
    ids = {}
    for label, config in EXPERIMENTS["scaling"].configs(seed=seed, source=source,
                                                         text=TEXT if source == "text" else "").items():  # fmt: skip
        learner = {"id": owner.id, "name": owner.name, "instructor": owner.instructor}
        with store.create(config.to_dict() | {"learner": learner}, owner="app") as w:
            ids[label] = w.run_dir.name
    return ids


def test_the_panes_check_names_the_rooms_runs_and_a_learners_own_names_hers(tmp_path, monkeypatch):
    """Review defect 2: at step 3 the pane showed the room's "Unscaled attention logits: ... max weight 0.99 ..." and
    Ada's own Experiments verdict (her text, seed 4242) "max weight 0.97", under the same title, neither saying whose
    runs, which corpus or which seed."""
    store = RunStore(tmp_path)
    monkeypatch.setattr(lesson_evidence, "reader_of", lambda run_id: store.reader(run_id))
    step = next(s for s in lesson.STEPS if s.key == "scaling")
    room_runs = {"exp:scaling": start(store, TEACHER, 1337, "shakespeare")}
    ev = lesson_evidence.evidence(step, room_runs, {}, ADA, room_runs)
    assert ev.verdicts["scaling"]["about"] == "the room's runs (Tiny Shakespeare, seed 1337)"
    check = step.check(ev)
    assert "on the room's runs (Tiny Shakespeare, seed 1337)" in check.text, check.text
    own = {"exp:scaling": start(store, ADA, 4242, "text")}  # Ada set up her own runs on her text
    ev = lesson_evidence.evidence(step, {**room_runs, **own}, {}, ADA, room_runs)
    assert ev.verdicts["scaling"]["about"] == "your runs (your text, seed 4242)"
    assert "on your runs (your text, seed 4242)" in step.check(ev).text
    ev = lesson_evidence.evidence(step, {**room_runs, **own}, {}, TEACHER, room_runs)  # another viewer of hers
    assert ev.verdicts["scaling"]["about"] == "Ada's runs (Ada's text, seed 4242)"


def test_a_judged_verdicts_text_and_headline_name_its_runs():
    verdict = {"reproduced": True, "sentence": "Unscaled attention is near one-hot.", "observed": {},
               "about": "the room's runs (Tiny Shakespeare, seed 1337)"}  # fmt: skip
    check = next(s for s in lesson.STEPS if s.key == "scaling").check(lesson.Evidence(verdicts={"scaling": verdict}))
    assert check.text == ("Unscaled attention logits, on the room's runs (Tiny Shakespeare, seed 1337): Unscaled "
                          "attention is near one-hot.")  # fmt: skip
    assert check.short == "Unscaled attention logits reproduced, on the room's runs (Tiny Shakespeare, seed 1337)"


def test_runs_about_reads_corpus_and_seed_from_the_configs():
    def config(source: str, seed: int, owner: Actor | None = None) -> dict:
        learner = {"learner": {"id": owner.id, "name": owner.name}} if owner else {}
        return {"data": {"source": source}, "train": {"seed": seed}, **learner}

    assert run_words.runs_about([config("synthetic:copy", 7, ADA)] * 2, ADA) == (
        "your runs (the synthetic copy task, seed 7)")  # fmt: skip
    assert run_words.runs_about([config("shakespeare", 1, ADA), config("shakespeare", 2, ADA)], ADA) == (
        "your runs (Tiny Shakespeare, seed 1 / 2)")  # fmt: skip
    assert run_words.runs_about([config("shakespeare", 1)], ADA) == "the instructor's runs (Tiny Shakespeare, seed 1)"
    assert run_words.runs_about([], ADA) == ""
