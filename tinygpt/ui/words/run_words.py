"""A run's words as one viewer reads them (pure: no Streamlit, no files).

The worker writes its status in the words of whoever gave the command ("paused by you at step 3631": the run
manager says "you" for the run's owner, "the instructor" for a hold). Every other viewer reads who that was
instead: the rehearsal's learners watching the instructor's run all read "paused by you"."""

from __future__ import annotations

import re

from tinygpt.runs.owners import INSTRUCTOR, Actor, run_learner


def is_owner(config: dict, viewer: Actor | None) -> bool:
    """Whether `viewer` owns the run: its learner, or the instructor for a run no learner started. None (no
    room: the server, a test) is everybody's own session."""
    if viewer is None:
        return True
    owner = run_learner(config)
    return owner["id"] == viewer.id if owner else viewer.instructor


def owner_word(config: dict) -> str:
    """Who owns the run, as others name them: "the instructor" for the instructor's runs (none started by a
    learner, or started by the instructor: config's learner.instructor), else the learner's name."""
    owner = run_learner(config)
    if not owner or owner.get("instructor"):
        return INSTRUCTOR
    return str(owner.get("name") or "its owner")


def watching(config: dict) -> str:
    """Whose run a viewer who may not control it is watching: "anna's run", "the instructor's run", or a run no
    learner started (the CLI's, or one written before runs had owners): it was called "another learner's run"."""
    if not run_learner(config):
        return "a run no learner started (the command line's, or an older one)"
    return f"{owner_word(config)}'s run"


def reason_for(reason: str, config: dict, viewer: Actor | None) -> str:
    """A status reason in `viewer`'s words: "by you" (the owner's own command) stays for the owner and names the
    owner for everyone else, and so does "resume it" (a learner watching the instructor's run read "resume it to
    continue" over a Resume button they may not press: the owner may). "By the instructor" is a hold, the
    instructor's role: an instructor reads it as "paused by you". Each "by ..." is read once, as written: a second
    instructor's browser read the lecture run's own pause ("by you", its owner's) as "by you" too, once named "by
    the instructor" and then taken for a hold; it names the owner's browser ("another instructor (clever-koala)")."""
    if not reason or is_owner(config, viewer):
        return reason
    owner, instructor = owner_word(config), viewer is not None and viewer.instructor
    if instructor and owner == INSTRUCTOR:  # a run of another instructor's browser (a co-instructor reading it)
        name = run_learner(config).get("name")
        owner = f"another instructor ({name})" if name else "another instructor"

    def who(match: re.Match) -> str:
        if match.group(1) == "you":  # the owner's own command
            return f"by {owner}"
        return "by you" if instructor else match.group(0)  # a hold: the instructor's, this viewer's role

    said = re.sub(r"by (you|the instructor)", who, reason)
    if instructor:
        return said.replace(f"{INSTRUCTOR} can resume it", "you can resume it")
    return said.replace("; resume it to", f"; {owner} can resume it to")


def corpus_word(config: dict, viewer: Actor | None) -> str:
    """The corpus a run trained on, from its config: "Tiny Shakespeare", "the synthetic copy task", "your text" (the
    viewer's own upload or paste), "Anna's text"."""
    source = str((config.get("data") or {}).get("source") or "")
    if source == "shakespeare":
        return "Tiny Shakespeare"
    if source.startswith("synthetic:"):
        return f"the synthetic {source.removeprefix('synthetic:')} task"
    if source == "text":
        return "your text" if is_owner(config, viewer) else f"{owner_word(config)}'s text"
    return source or "an unnamed corpus"


def runs_about(configs: list[dict], viewer: Actor | None, room: bool = False) -> str:
    """Whose runs a verdict judged, on which corpus and seed, from their configs: "the room's runs (Tiny
    Shakespeare, seed 1337)" (`room`: the lesson's runs, which every pane reads), "your runs (your text, seed
    4242)", "Anna's runs (...)". Two runs that differ name both values ("seed 1 / 2"). "" for no configs."""
    if not configs:
        return ""
    if room:
        whose = "the room's runs"
    elif all(is_owner(c, viewer) for c in configs):
        whose = "your runs"
    else:
        whose = " / ".join(dict.fromkeys(f"{owner_word(c)}'s" for c in configs)) + " runs"
    corpora = " / ".join(dict.fromkeys(corpus_word(c, viewer) for c in configs))
    seeds = " / ".join(dict.fromkeys(str((c.get("train") or {}).get("seed", "?")) for c in configs))
    return f"{whose} ({corpora}, seed {seeds})"


def val_note(config: dict) -> str | None:
    """What a run's val curve scores, where it is not the trained weights themselves: a run with a running average of
    its weights (train.weight_average, the Fast preset's) is scored on the average, and says so under its loss chart."""
    decay = float((config.get("train") or {}).get("weight_average") or 0.0)
    if decay <= 0:
        return None
    return (
        f"val: the held-out loss of a running average of the weights (each step moves it {1 - decay:.0%} of the way "
        "to the new weights), the weights every eval of this run scores. The training loss, the samples and the "
        "attention maps come from the trained weights themselves."
    )


def texts_apart(configs: dict[str, dict]) -> str | None:
    """Runs on one axis that trained on different texts, said where they do (Runs → Compare), from their configs:
    a loss is nats per character of its own text, so two texts' curves are not on one scale and the gap between them
    is not the settings' effect alone. None where every run read the same text (same corpus; for an upload or a
    paste, the same sha256; for a synthetic task, the same task, size and digits)."""

    def text_of(config: dict) -> str:
        data = config.get("data") or {}
        source = str(data.get("source") or "shakespeare")  # DataConfig's default
        if source == "text":
            return f"a text with sha256 {str(data.get('text_sha256') or '?')[:8]}…"
        if source.startswith("synthetic:"):
            size = f"{data.get('synthetic_examples', '?')} problems of {data.get('synthetic_digits', '?')} digits"
            return f"the synthetic {source.removeprefix('synthetic:')} task ({size})"
        return "Tiny Shakespeare" if source == "shakespeare" else source

    groups: dict[str, list[str]] = {}
    for name, config in configs.items():
        groups.setdefault(text_of(config or {}), []).append(str(name))
    if len(groups) < 2:
        return None
    said = "; ".join(f"{', '.join(names)} on {text}" for text, names in groups.items())
    return (
        f"These runs trained on different texts ({said}). A loss is nats per character of its own text, so their "
        "curves are not on one scale: the gap between them is not the settings' effect alone."
    )


def seeds_apart(configs: dict[str, dict]) -> str | None:
    """Runs on one axis with different seeds, said where they are (Runs → Compare): a seed draws other first weights
    and other batches, so it moves a curve by itself, and a gap between two such runs is partly chance (a review: the
    caption called every gap "the effect of what differs", the seed among them). None where every run has one seed."""
    seeds: dict[str, list[str]] = {}
    for name, config in configs.items():
        seed = ((config or {}).get("train") or {}).get("seed", 1337)  # TrainConfig's default
        seeds.setdefault(f"{seed}", []).append(str(name))
    if len(seeds) < 2:
        return None
    # each seed with its runs' names: "(31, 2024)" left the reader to find which run had which (a review)
    said = "; ".join(f"seed {seed}: {', '.join(names)}" for seed, names in seeds.items())
    return (
        f"These runs have different seeds ({said}): a seed alone moves a curve (other first weights, other batches), "
        "so part of any gap between them is chance. To see a setting's effect alone, compare runs of one seed, or "
        "several seeds of each setting."
    )
