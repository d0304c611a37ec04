"""The Train form as data (tinygpt/ui/train/settings.py): one table of fields, its presets, the values a run's config
gives back and what changed since it started (the config the form builds: test_form.py)."""

from __future__ import annotations

import pytest

from tinygpt.presets import preset
from tinygpt.runs.corpus import corpus_sha256
from tinygpt.ui.train import settings


def test_every_field_has_one_widget_key_and_belongs_to_a_config_section():
    keys = [f.key for f in settings.FIELDS]
    assert len(set(keys)) == len(keys)
    assert {f.name for f in settings.KNOB_FIELDS} <= set(settings.LIVE_KNOBS)
    config = preset("demo")
    for field in settings.FIELDS:  # every field names a real config attribute
        assert any(hasattr(part, field.name) for part in (config.model, config.train, config.data))


def test_preset_values_reattach_values_and_the_changed_list():
    values = settings.preset_values("nanoGPT CPU")
    assert values["hidden_dim"] == 128 and values["max_steps"] == 2000 and "device" not in values
    config = preset("nanogpt-cpu", **values, source="synthetic:copy").to_dict()
    events = [{"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 5}]
    back, source = settings.values_from_config(config, events)
    assert source == "Synthetic: copy" and back["mask"] == "none" and back["num_heads"] == 4
    edited = {**back, "num_heads": 8, "mask": "causal"}  # the mask is live: not a "changed since start"
    assert settings.changed_since_start(back, source, edited, "Tiny Shakespeare") == [
        "corpus Synthetic: copy → Tiny Shakespeare",
        "heads 4 → 8",
    ]


def test_heads_follow_the_width():
    assert settings.heads_options(64) == [1, 2, 4, 8, 16]
    assert settings.closest_heads(48, 8) == 8 and settings.closest_heads(96, 5) == 4


def test_an_upload_keeps_its_files_name_for_the_runs_name():
    from tinygpt.ui.train import form

    text = ("A corpus of one's own, long enough to train on. " * 40).encode()
    data = settings.data_config(settings.SOURCE_UPLOAD, uploaded=text, uploaded_name="C:\\notes\\decoder.py")
    assert data.text_name == "decoder.py" and data.source == "text"  # the file's name, no folder
    label = next(iter(settings.PRESET_LABELS))
    config = form.run_config(label, settings.preset_values(label), data)
    assert config.data.text_name == "decoder.py"  # kept through the preset, as the run's config.json will have it
    assert settings.data_config(settings.SOURCE_PASTE, pasted=text.decode()).text_name == ""  # a paste: no name


def test_a_runs_text_unedited_in_the_box_keeps_its_files_name():
    """Review 3 (stop 52): a learner pressed Train again beside her calendar.py run; the form showed the run's text
    as a paste and the new run was named "text d3510a". The name stays while the box holds that very text."""
    text = "def month(year, month):\n    return year * 12 + month\n" * 40
    kept = ("calendar.py", corpus_sha256(text))
    assert settings.kept_text_name(text, kept) == "calendar.py"
    assert settings.kept_text_name(text + "# edited", kept) == ""  # another text now: no file's name for it
    assert settings.kept_text_name(text, None) == "" and settings.kept_text_name(text, ("", kept[1])) == ""
    data = settings.data_config(settings.SOURCE_PASTE, pasted=text, uploaded_name=settings.kept_text_name(text, kept))
    assert data.text_name == "calendar.py" and data.source == "text"


def test_an_empty_upload_is_named_as_empty_not_as_missing():
    """A review uploaded a 0-byte file, saw "empty.txt 0.0B" chosen, and read "choose a text file to upload first"."""
    import pytest

    from tinygpt.config import ConfigError

    with pytest.raises(ConfigError, match=r"^empty\.txt is empty \(0 bytes\): choose a file with some text"):
        settings.data_config(settings.SOURCE_UPLOAD, uploaded=b"", uploaded_name="empty.txt")
    with pytest.raises(ConfigError, match="choose a text file to upload first"):  # nothing chosen
        settings.data_config(settings.SOURCE_UPLOAD, uploaded=None)


def test_the_ghost_curve_is_labelled_with_what_the_new_run_changed():
    from tinygpt.ui.charts import curves

    data = settings.data_config("Synthetic: copy")
    before = preset("demo", source=data.source).to_dict()
    after = preset("demo", num_heads=8, source=data.source).to_dict()
    label = settings.ghost_label(before, after)
    assert label == "the run before this one: heads 4 → 8"
    assert settings.ghost_label(before, before) == "the run before this one (same settings)"
    # Two uploads are both "text": told apart by their hash (a review's grey curve trained on another text)
    one, two = ({**before, "data": {"source": "text", "text": "", "text_sha256": h * 64}} for h in "ab")
    assert settings.ghost_label(one, two) == "the run before this one: another text (sha256 aaaaaaaa… → bbbbbbbb…)"
    assert settings.ghost_label(one, one) == "the run before this one (same settings)"
    shakespeare = {**before, "data": {"source": "shakespeare"}}  # a review: "corpus TinyShakespeare → Paste text"
    said = settings.ghost_label(shakespeare, one)
    assert said.startswith("the run before this one: corpus Tiny Shakespeare → a pasted or uploaded text"), said
    # the live knobs each run started with (a review: a new run under mask none beside "max steps 300 → 4000")
    leaky = preset("demo", max_steps=4000, mask="none", source=data.source).to_dict()
    assert settings.ghost_label(before, leaky) == "the run before this one: max steps 300 → 4000, mask causal → none"
    parent = [{"step": s, "loss": 3.0 - s / 100} for s in range(1, 101)]
    spec = curves.loss_chart(parent[:50], [], [], 29, ghost=parent, ghost_label=label)
    # The previous run only as far as the new one has come (the axis fits the new run), named in the subtitle
    assert [r["step"] for r in spec["datasets"]["ghost"]] == list(range(1, 51))
    assert label in " ".join(spec["title"]["subtitle"])
    assert not curves.loss_chart(parent, [], [], 29)["datasets"]["ghost"]


def test_the_ghost_label_counts_the_differences_past_a_few():
    """A preset switched between two runs: eleven differences ran seven lines over a 120 px plot (a review)."""
    before = preset("demo").to_dict()
    after = preset("demo", num_layers=4, hidden_dim=128, max_seq_len=64, batch_size=12, max_steps=350).to_dict()
    label = settings.ghost_label(before, after)
    assert label.count("→") == settings.GHOST_SETTINGS and label.endswith(" 2 more settings"), label
    four = preset("demo", num_layers=4, hidden_dim=128, max_seq_len=64, batch_size=12).to_dict()
    assert settings.ghost_label(before, four).count("→") == 4  # one more is said, not counted


def test_a_log_sliders_stops_span_its_exact_boxs_range():
    # a review: the LR slider's floor was 1e-5 beside a box that takes 1e-6
    for field in settings.FIELDS:
        if field.widget == "log_slider":
            assert min(field.options) == pytest.approx(field.minimum), field.name
            assert max(field.options) == pytest.approx(field.maximum), field.name
