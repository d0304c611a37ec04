"""What *Prepare the long runs* starts (tinygpt/lab/prepare.py): the lesson's roles, in its order, each with the
runs its step judges, every config valid and as the lesson's steps build it."""

from __future__ import annotations

from tinygpt.config import RunConfig
from tinygpt.lab import induction
from tinygpt.lab.prepare import HEADS, HEADS_STEPS, INDUCTION, PREPARE_ORDER, SEED, prepared_runs, role_configs
from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.presets import preset
from tinygpt.runs.jobs import PREPARED
from tinygpt.ui.teach import lesson


def test_prepared_runs_cover_the_lessons_roles_in_its_order():
    runs = prepared_runs()
    roles = list(dict.fromkeys(r.role for r in runs))
    assert roles == list(PREPARE_ORDER) == list(lesson.PREPARE_ORDER)
    assert {r.priority for r in runs} == {PREPARED}
    for role in PREPARE_ORDER:
        labels = [r.label for r in runs if r.role == role]
        if role == HEADS:
            assert labels == ["run"]
        elif role == INDUCTION:
            assert labels == list(induction.INDUCTION_VARIANTS)
        else:
            assert labels == list(EXPERIMENTS[role.removeprefix("exp:")].variants)


def test_every_config_is_valid_seeded_and_what_the_steps_start():
    for run in prepared_runs(seed=7):
        again = RunConfig.from_dict(run.config.to_dict())  # validates every field (ConfigError otherwise)
        assert again.to_dict() == run.config.to_dict()
        assert run.config.train.seed == 7 and run.config.train.max_steps > 0
    same = {  # what the lesson's own steps start when the class reaches them without Prepare
        HEADS: {"run": preset("demo", source="shakespeare", max_steps=HEADS_STEPS)},
        INDUCTION: induction.induction_configs("synthetic:copyvar", SEED),
        **{f"exp:{k}": e.configs(seed=SEED, source="shakespeare") for k, e in EXPERIMENTS.items() if k != "memory"},
    }
    for role in PREPARE_ORDER:
        got = {label: c.to_dict() for label, c in role_configs(role).items()}
        assert got == {label: c.to_dict() for label, c in same[role].items()}, role
