"""What the Experiments page says when the runs it shows are not what its corpus and seed pickers hold: those set the
next Run side by side, and a review read "Corpus (both runs): Tiny Shakespeare · Seed (both runs): 1337" above a
verdict on runs of their own text with seed 271 (opened from a ?lab= link in a new tab). Pure: configs in, words
out."""

from __future__ import annotations

from collections.abc import Mapping

from tinygpt.data import text_from_user
from tinygpt.errors import DataError
from tinygpt.runs.corpus import corpus_sha256

SOURCE_WORDS = {"shakespeare": "Tiny Shakespeare", "text": "a pasted or uploaded text"}


def runs_unlike_form(configs: Mapping[str, dict], source: str, text: str | None, seed: int) -> str:
    """ "" when the runs' configs ({label: config.json dict}) trained on the picked corpus (`source`, with `text` for
    a text of one's own: None when none is picked yet) and `seed`, else a sentence saying what they trained on."""
    datas = [(c.get("data") or {}) for c in configs.values() if c]
    seeds = {(c.get("train") or {}).get("seed") for c in configs.values() if c}
    if not datas:
        return ""
    sources = {str(d.get("source") or "") for d in datas}
    hashes = {d.get("text_sha256") for d in datas if d.get("text_sha256")}
    same_source = sources == {source} and (source != "text" or (text is not None and hashes == {corpus_sha256(text)}))
    same_seed = seeds == {seed}
    if same_source and same_seed:
        return ""
    ran = SOURCE_WORDS.get(next(iter(sources)), next(iter(sources))) if len(sources) == 1 else "their own texts"
    if sources == {"text"} and len(hashes) == 1:
        ran += f" (sha256 {next(iter(hashes))[:8]}…)"
    seed_words = f"seed {next(iter(seeds))}" if len(seeds) == 1 else "their own seeds"
    return (f"The runs below trained on {ran}, {seed_words}. The corpus and seed above are for your next **Run side "
            "by side**.")


def picked_text(source: str, pasted: str = "", uploaded: bytes | None = None) -> str | None:
    """The text of one's own the pickers hold, as a run would store it (text_from_user), or None: another corpus,
    nothing picked yet, or a text a run would refuse."""
    if source != "text":
        return None
    try:
        return text_from_user(uploaded if uploaded is not None else pasted)
    except DataError:
        return None
