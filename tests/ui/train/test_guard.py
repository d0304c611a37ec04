"""tinygpt.ui.train.guard: a value from the browser that a widget cannot take is replaced before the widget is drawn,
with a message, instead of an exception box in the forger's page (issue 34, finding 7)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.ui.train import guard, settings, train_keys  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "name, value, ok",
    [
        ("num_layers", 4, True),
        ("num_layers", math.nan, False),
        ("num_layers", 1e30, False),
        ("num_layers", 2.5, False),
        ("num_layers", True, False),
        ("learning_rate", 3e-3, True),
        ("learning_rate", "0.003", False),
        ("learning_rate", [0.1], False),
        ("learning_rate", math.inf, False),
        ("mask", "causal", True),
        ("mask", "everything", False),
        ("hidden_dim", 64, True),
        ("hidden_dim", 64.0, False),
        ("warmup_steps", 100, True),
        ("warmup_steps", -1, False),
        ("device", "auto", True),
        ("device", 3, False),
    ],
)
def test_valid_follows_the_fields_type_range_and_options(name, value, ok):
    assert guard.valid(settings.FIELD_BY_NAME[name], value) is ok


def test_every_fields_fallback_is_valid():
    for field in settings.FIELDS:
        assert guard.valid(field, guard.fallback(field)) or field.widget == "heads", field.name


def test_forged_widget_values_are_replaced_with_a_message_not_an_exception(runs_dir):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.session_state[train_keys.W_STEP_N] = math.nan  # Streamlit's own "cannot convert float NaN to integer" before
    at.session_state[train_keys.W_LR] = 0.5j  # not a number at all
    at.session_state[train_keys.W_MASK] = "everything"  # not one of the options
    at.run()
    assert not at.exception, at.exception
    # its last value: the box takes real numbers now (tinygpt/ui/screen/numbers.py), and a NaN reaches it as no
    # number typed, which keeps the last one
    assert at.session_state[train_keys.W_STEP_N] == 10
    # the demo preset's
    assert at.session_state[train_keys.W_LR] == 0.002 and at.session_state[train_keys.W_MASK] == "causal"
    toasts = " ".join(t.value for t in at.toast).replace("\\", "")
    assert all(label in toasts for label in ("Learning rate", "Mask"))
    assert "cannot take" in toasts


def test_a_value_streamlits_own_deserializer_cannot_read_is_refused_not_raised():
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from streamlit.runtime.state.session_state import Serialized, WStates

    from tinygpt.ui.host import server

    server.refuse_unreadable_widget_values()

    def deserialize(value):
        return int(value)  # a whole-number box's deserializer: int(NaN) raises ValueError

    forged = WidgetState(id="w", double_value=math.nan)
    states = WStates(states={"w": Serialized(forged)})
    states.widget_metadata["w"] = type("Meta", (), {"deserializer": staticmethod(deserialize)})()
    with pytest.raises(KeyError):  # read as absent: the widget keeps the value it had
        states["w"]
    assert states.get("w") is None
