"""Corpora and batches: Tiny Shakespeare loading (offline), synthetic tasks, user text, splits and batches."""

import hashlib
import io
import urllib.error
from pathlib import Path

import pytest
import torch

import tinygpt.data as data
from tinygpt.config import ConfigError, DataConfig
from tinygpt.data import (
    SHAKESPEARE_BYTES,
    SHAKESPEARE_SHA256,
    SYNTHETIC_TASKS,
    Corpus,
    load_corpus,
    load_shakespeare,
    make_synthetic,
    min_corpus_chars,
    score_answers,
    solve,
    text_from_user,
)
from tinygpt.errors import (
    CheckpointError,
    DataError,
    NonFiniteError,
    RunStoreError,
    ShapeError,
    TinyGPTError,
    TokenizerError,
)


def test_user_errors_share_one_base():
    for cls in (ConfigError, DataError, TokenizerError, ShapeError, CheckpointError, NonFiniteError, RunStoreError):
        assert issubclass(cls, TinyGPTError) and issubclass(cls, ValueError)


# --- Tiny Shakespeare ------------------------------------------------------------------------------------------


@pytest.fixture
def fake_corpus(monkeypatch, tmp_path):
    """A small payload standing in for Tiny Shakespeare (size and hash patched to match), served from a file:// URL."""
    monkeypatch.delenv("TINYGPT_SHAKESPEARE", raising=False)  # an override a user may set
    monkeypatch.setattr(data, "EMBEDDED_SHAKESPEARE", tmp_path / "not-embedded.txt.xz")  # exercise the fallback
    payload = ("First Citizen:\nSpeak, speak.\n" * 10_000).encode()
    monkeypatch.setattr(data, "SHAKESPEARE_BYTES", len(payload))
    monkeypatch.setattr(data, "SHAKESPEARE_SHA256", hashlib.sha256(payload).hexdigest())
    source = tmp_path / "served" / "input.txt"
    source.parent.mkdir()
    source.write_bytes(payload)
    return payload, source.as_uri()


def test_download_verifies_caches_and_reports_progress(fake_corpus, tmp_path, monkeypatch):
    payload, url = fake_corpus
    cache = tmp_path / "cache"
    calls = []
    text = load_shakespeare(progress=lambda done, total: calls.append((done, total)), cache_dir=cache, url=url)
    assert text == payload.decode()
    assert calls[0] == (0, len(payload)) and calls[-1] == (len(payload), len(payload))
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert [p.name for p in cache.iterdir()] == ["tinyshakespeare.txt"]  # no temp file left behind

    def no_network(*args, **kwargs):
        raise AssertionError("a cached corpus must not be downloaded again")

    monkeypatch.setattr(data, "urlopen", no_network)
    assert load_shakespeare(cache_dir=cache, url=url) == text


def test_cache_dir_from_environment(fake_corpus, tmp_path, monkeypatch):
    payload, url = fake_corpus
    monkeypatch.setenv("TINYGPT_CACHE_DIR", str(tmp_path / "envcache"))
    assert load_shakespeare(url=url) == payload.decode()
    assert (tmp_path / "envcache" / "tinyshakespeare.txt").read_bytes() == payload


def test_corrupt_cache_is_downloaded_again(fake_corpus, tmp_path):
    payload, url = fake_corpus
    (tmp_path / "tinyshakespeare.txt").write_text("truncated")
    assert load_shakespeare(cache_dir=tmp_path, url=url) == payload.decode()


def test_download_with_wrong_hash_leaves_no_file(fake_corpus, tmp_path, monkeypatch):
    _, url = fake_corpus
    monkeypatch.setattr(data, "SHAKESPEARE_SHA256", "0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="is not Tiny Shakespeare"):
        load_shakespeare(cache_dir=cache, url=url)
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize(
    "error",
    [
        urllib.error.URLError("[Errno -3] Temporary failure in name resolution"),
        urllib.error.HTTPError("https://x", 404, "Not Found", {}, io.BytesIO()),
        TimeoutError("timed out"),
        ConnectionResetError("reset by peer"),
    ],
    ids=["offline", "http-404", "timeout", "reset"],
)
def test_network_failures_say_what_to_do(fake_corpus, tmp_path, monkeypatch, error):
    seen = {}

    def failing_urlopen(url, timeout=None):
        seen["timeout"] = timeout
        raise error

    monkeypatch.setattr(data, "urlopen", failing_urlopen)
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="seems offline") as info:
        load_shakespeare(cache_dir=cache, timeout=3)
    assert "TINYGPT_SHAKESPEARE" in str(info.value) and "synthetic" in str(info.value)
    assert seen["timeout"] == 3  # never an unbounded socket
    assert list(cache.iterdir()) == []  # the temp file is cleaned up


def test_env_var_pointing_nowhere(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYGPT_SHAKESPEARE", str(tmp_path / "missing.txt"))
    with pytest.raises(DataError, match="no file is there"):
        load_shakespeare(cache_dir=tmp_path)


def test_env_var_pointing_at_another_file(monkeypatch, tmp_path):
    wrong = tmp_path / "input.txt"
    wrong.write_text("To be, or not to be\n")
    monkeypatch.setenv("TINYGPT_SHAKESPEARE", str(wrong))
    with pytest.raises(DataError, match=r"not Tiny Shakespeare: it has 20 bytes"):
        load_shakespeare(cache_dir=tmp_path)


def test_real_shakespeare(shakespeare_path, monkeypatch):
    monkeypatch.setenv("TINYGPT_SHAKESPEARE", str(shakespeare_path))
    raw = shakespeare_path.read_bytes()
    assert len(raw) == SHAKESPEARE_BYTES and hashlib.sha256(raw).hexdigest() == SHAKESPEARE_SHA256
    corpus = load_corpus(DataConfig(source="shakespeare"), block_size=64)
    assert corpus.tokenizer.vocab_size == 65  # as in nanoGPT's shakespeare_char
    assert corpus.description == "Tiny Shakespeare, 1,115,394 chars, 65 symbols"
    assert len(corpus.train_data) == 1_003_854 and len(corpus.val_data) == 111_540  # nanoGPT's split sizes
    assert corpus.tokenizer.decode(corpus.train_data[:14]) == "First Citizen:"


# --- synthetic tasks -------------------------------------------------------------------------------------------


def _reference(task, prompt):
    """An independent answer key: int arithmetic, sorted(), slicing."""
    body = prompt[:-1]
    if task == "add":
        a, b = body.split("+")
        return f"{int(a) + int(b):0{len(a) + 1}d}"
    return {"copy": body, "reverse": body[::-1], "sort": "".join(sorted(body))}[task]


LINE_TASKS = [t for t in SYNTHETIC_TASKS if t != "copyvar"]  # copyvar has no lines: tests/lab/test_circuits.py


@pytest.mark.parametrize("task", LINE_TASKS)
@pytest.mark.parametrize("digits", [1, 3, 6])
def test_synthetic_answers_are_correct(task, digits):
    made = make_synthetic(task, num_examples=300, digits=digits, seed=1)
    assert made.task == task and len(made.problems) == 300
    sep = "=" if task == "add" else ">"
    for prompt, answer in made.problems:
        assert prompt.endswith(sep)
        assert answer == _reference(task, prompt) == solve(task, prompt)
    assert made.text == "".join(f"{p}{a}.\n" for p, a in made.problems)
    assert len({len(line) for line in made.text.splitlines()}) == 1  # fixed width: answers sit at fixed positions
    assert score_answers(task, [p for p, _ in made.problems], [a for _, a in made.problems]) == 1.0


def test_synthetic_formats():
    assert solve("copy", "qhvb>") == "qhvb"
    assert solve("reverse", "qhvb>") == "bvhq"
    assert solve("sort", "5813>") == "1358"
    assert solve("add", "123+456=") == "0579"
    assert solve("add", "999+999=") == "1998"
    assert make_synthetic("add", 1, 2, seed=0).text.count("+") == 1
    assert set(make_synthetic("copy", 50, 8).text) <= set("abcdefghijklmnopqrstuvwxyz>.\n")
    assert set(make_synthetic("sort", 50, 8).text) <= set("0123456789>.\n")


def test_synthetic_is_reproducible_from_its_seed():
    assert make_synthetic("add", 100, 4, seed=7) == make_synthetic("add", 100, 4, seed=7)
    assert make_synthetic("add", 100, 4, seed=7).text != make_synthetic("add", 100, 4, seed=8).text


@pytest.mark.parametrize("args", [("multiply", 10, 3), ("copy", 0, 3), ("copy", 10, 0), ("copy", 10, 2.5)], ids=str)
def test_bad_synthetic_settings(args):
    with pytest.raises(DataError):
        make_synthetic(*args)


@pytest.mark.parametrize("task,prompt", [("copy", "abc"), ("add", "12+34>"), ("add", "12-34="), ("add", "+1=")])
def test_solve_rejects_malformed_prompts(task, prompt):
    with pytest.raises(DataError):
        solve(task, prompt)


def test_score_answers_is_exact_match_of_the_first_line():
    prompts = ["12+34=", "50+50=", "99+01="]
    assert score_answers("add", prompts, ["046", "100", "100"]) == 1.0
    assert score_answers("add", prompts, ["046.\n77+1", "100\nxyz", "100.."]) == 1.0  # raw generations are cut
    assert score_answers("add", prompts, ["46", "0100", "100"]) == pytest.approx(1 / 3)
    assert score_answers("add", [], []) == 0.0
    with pytest.raises(DataError):
        score_answers("add", prompts, ["046"])


# --- user text -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("hello", "hello"),
        (b"hello", "hello"),
        ("\ufeffhello", "hello"),
        (b"\xef\xbb\xbfhello", "hello"),
        ("caf\u00e9 🙂", "caf\u00e9 🙂"),
        ("caf\u00e9 🙂".encode(), "caf\u00e9 🙂"),
        (b"a\r\nb\r\n", "a\nb\n"),
    ],
)
def test_text_from_user(raw, expected):
    assert text_from_user(raw, min_chars=1) == expected


def test_non_utf8_bytes_name_the_offset():
    with pytest.raises(DataError, match=r"byte 0xe9 at offset 3 .*Save the file as UTF-8"):
        text_from_user("café".encode("latin-1"))


@pytest.mark.parametrize("raw", ["", b"", "   \n\t", b"\xef\xbb\xbf"])
def test_empty_text(raw):
    with pytest.raises(DataError, match="empty"):
        text_from_user(raw)


def test_short_text_says_how_many_characters():
    with pytest.raises(DataError, match="has 5 characters but at least 650 are needed"):
        text_from_user("short", min_chars=650)


@pytest.mark.parametrize("block_size", [1, 8, 64, 256])
def test_min_corpus_chars_is_tight(block_size):
    need = min_corpus_chars(block_size)
    Corpus.from_text("ab" * need, block_size)  # exactly enough
    with pytest.raises(DataError, match=f"use at least {need:,} characters"):
        Corpus.from_text(("ab" * need)[: need - 1], block_size)


# --- corpus and batches ----------------------------------------------------------------------------------------


def test_split_is_first_90_last_10(tiny_text):
    corpus = Corpus.from_text(tiny_text, block_size=16)
    n = len(tiny_text)
    assert corpus.train_data.dtype == corpus.val_data.dtype == torch.long
    assert corpus.train_data.shape == (int(n * 0.9),) and corpus.num_chars == n
    assert corpus.tokenizer.decode(torch.cat([corpus.train_data, corpus.val_data])) == tiny_text
    assert corpus.probe_text(16) == tiny_text[int(n * 0.9) :][:16]
    assert corpus.description == f"{n:,} chars, {corpus.tokenizer.vocab_size} symbols"


def test_given_tokenizer_is_used_and_checked(tiny_text):
    base = Corpus.from_text(tiny_text, block_size=8)
    again = Corpus.from_text(tiny_text[::-1], block_size=8, tokenizer=base.tokenizer)
    assert again.tokenizer is base.tokenizer
    with pytest.raises(TokenizerError, match="the text has characters .*'Z'"):
        Corpus.from_text(tiny_text + "Z", block_size=8, tokenizer=base.tokenizer)


@pytest.mark.parametrize("split", ["train", "val"])
def test_batches_are_windows_shifted_by_one(tiny_text, split):
    corpus = Corpus.from_text(tiny_text, block_size=16)
    x, y = corpus.get_batch(split, batch_size=32, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (32, 16) and x.dtype == y.dtype == torch.long
    assert x.is_contiguous() and y.is_contiguous()
    assert torch.equal(x[:, 1:], y[:, :-1])
    split_text = corpus.tokenizer.decode(corpus.train_data if split == "train" else corpus.val_data)
    for row_x, row_y in zip(x, y, strict=True):
        window = corpus.tokenizer.decode(row_x) + corpus.tokenizer.decode(row_y[-1:])
        assert window in split_text


def test_same_seed_same_batches(tiny_text):
    corpus = Corpus.from_text(tiny_text, block_size=8)
    first = [corpus.get_batch("train", 4, torch.Generator().manual_seed(3)) for _ in range(2)]
    g = torch.Generator().manual_seed(3)
    x1, _ = corpus.get_batch("train", 4, g)
    x2, _ = corpus.get_batch("train", 4, g)
    assert torch.equal(first[0][0], first[1][0]) and torch.equal(first[0][1], first[1][1])
    assert torch.equal(first[0][0], x1) and not torch.equal(x1, x2)  # the generator advances


def test_every_window_start_is_reachable():
    corpus = Corpus.from_text("abcdefghijklmnopqrstuvwxyz" * 2, block_size=4)  # train has 46 tokens: 42 starts
    x, _ = corpus.get_batch("train", 5000, torch.Generator().manual_seed(0))
    starts = {corpus.tokenizer.decode(row) for row in x}
    assert len(starts) == 26  # every start position appears; the alphabet repeats, so 26 distinct windows


def test_bad_split(tiny_text):
    with pytest.raises(DataError, match="'train' or 'val'"):
        Corpus.from_text(tiny_text, 8).get_batch("test", 2)


# --- load_corpus -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", LINE_TASKS)
def test_load_synthetic(task):
    corpus = load_corpus(DataConfig(source=f"synthetic:{task}", synthetic_examples=200, synthetic_digits=4), 16)
    assert corpus.task is not None and corpus.task.task == task and len(corpus.task.problems) == 200
    assert corpus.task == make_synthetic(task, 200, 4, seed=0)  # fixed seed: the same config gives the same data
    assert corpus.description.startswith(f"synthetic {task} (200 problems of 4 characters), ")


def test_load_synthetic_too_small():
    with pytest.raises(DataError, match="raise synthetic_examples"):
        load_corpus(DataConfig(source="synthetic:copy", synthetic_examples=3, synthetic_digits=2), 64)


def test_load_text(tiny_text):
    corpus = load_corpus(DataConfig(source="text", text=tiny_text), 32)
    assert corpus.description.startswith(f"your text, {len(tiny_text):,} chars")
    with pytest.raises(DataError, match="Add more text or lower max_seq_len"):
        load_corpus(DataConfig(source="text", text=tiny_text[:300]), 32)


@pytest.mark.parametrize("source", ["shakespear", "synthetic:multiply", "synthetic:", ""])
def test_unknown_source_lists_valid_ones(source):
    with pytest.raises(DataError, match="shakespeare, synthetic:copy, synthetic:reverse, synthetic:sort, "):
        load_corpus(DataConfig(source=source), 16)


def test_device_argument_gives_the_same_batch(tiny_text):
    corpus = Corpus.from_text(tiny_text, block_size=8)
    x1, y1 = corpus.get_batch("val", 4, torch.Generator().manual_seed(5))
    x2, y2 = corpus.get_batch("val", 4, torch.Generator().manual_seed(5), device="cpu")
    assert torch.equal(x1, x2) and torch.equal(y1, y2) and x2.device.type == "cpu"


# --- the embedded copy (issue 24 finding 1: the default corpus needed the network) ------------------------------


def _no_network(*args, **kwargs):
    raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")


def test_first_use_offline_reads_the_embedded_copy(monkeypatch, tmp_path):
    """No env var, an empty cache, no network: Tiny Shakespeare still loads, verified, on the first call."""
    monkeypatch.delenv("TINYGPT_SHAKESPEARE", raising=False)
    monkeypatch.setattr(data, "urlopen", _no_network)
    calls = []
    text = load_shakespeare(progress=lambda done, total: calls.append((done, total)), cache_dir=tmp_path / "cache")
    assert len(text.encode()) == SHAKESPEARE_BYTES and text.startswith("First Citizen:")
    assert hashlib.sha256(text.encode()).hexdigest() == SHAKESPEARE_SHA256
    assert calls and calls[-1][0] == calls[-1][1]  # a progress bar, if any, ends full
    assert not (tmp_path / "cache").exists()  # nothing written: the package is the copy
    corpus = load_corpus(DataConfig(source="shakespeare"), block_size=64)
    assert corpus.tokenizer.vocab_size == 65 and corpus.num_chars == SHAKESPEARE_BYTES


def test_embedded_copy_is_small_and_lives_in_the_package():
    path = data.EMBEDDED_SHAKESPEARE
    assert path.is_file() and path.parent.parent == Path(data.__file__).parent
    assert path.stat().st_size < 450_000  # compressed: about a third of the 1.1 MB text
    assert hashlib.sha256(path.read_bytes()).hexdigest() == data.EMBEDDED_SHAKESPEARE_SHA256


def test_damaged_embedded_copy_falls_back_to_the_download(fake_corpus, tmp_path, monkeypatch):
    payload, url = fake_corpus
    broken = tmp_path / "broken.txt.xz"
    broken.write_bytes(b"\xfd7zXZ\x00 not really")
    monkeypatch.setattr(data, "EMBEDDED_SHAKESPEARE", broken)
    assert load_shakespeare(cache_dir=tmp_path / "cache", url=url) == payload.decode()


def test_damaged_embedded_copy_offline_says_so(monkeypatch, tmp_path):
    monkeypatch.delenv("TINYGPT_SHAKESPEARE", raising=False)
    broken = tmp_path / "broken.txt.xz"
    broken.write_bytes(b"garbage")
    monkeypatch.setattr(data, "EMBEDDED_SHAKESPEARE", broken)
    monkeypatch.setattr(data, "urlopen", _no_network)
    with pytest.raises(DataError) as info:
        load_shakespeare(cache_dir=tmp_path / "cache", timeout=1)
    message = str(info.value)
    assert "embedded copy" in message and "damaged" in message and "seems offline" in message


def test_pyproject_ships_the_corpus_as_package_data():
    import tomllib

    meta = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    patterns = meta["tool"]["setuptools"]["package-data"]["tinygpt"]
    assert any(Path("corpora/tinyshakespeare.txt.xz").match(p) for p in patterns)


# --- repeated passages: the curriculum under which an induction head forms on real text (issue 23 finding 8) ---


def test_repeat_passage_says_a_passage_of_varying_length_and_place_twice_and_leaves_the_rest():
    rows = torch.arange(64 * 33).reshape(64, 33)  # every token distinct: a copy can only come from the function
    out = data.repeat_passage(rows.clone(), 1.0, torch.Generator().manual_seed(0))
    lengths, starts = set(), set()
    for before, after in zip(rows, out, strict=True):
        changed = torch.nonzero(before != after).flatten()
        first, h = int(changed[0]), len(changed)  # the second copy: h positions in a row
        assert data.MIN_REPEAT <= h <= 33 // 2 and torch.equal(changed, torch.arange(first, first + h))
        assert torch.equal(after[first : first + h], before[first - h : first])  # it repeats what came just before
        lengths.add(h)
        starts.add(first - h)
    assert len(lengths) > 5 and len(starts) > 5  # no fixed distance a positional head could learn instead
    assert torch.equal(data.repeat_passage(rows.clone(), 0.0, torch.Generator().manual_seed(0)), rows)
    again = data.repeat_passage(rows.clone(), 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(again, out)  # a seed gives the same batches


def test_repeated_passages_change_training_windows_only_and_are_checked():
    text = "".join(chr(97 + (i * 7) % 26) for i in range(4000))
    corpus = data.load_corpus(DataConfig(source="text", text=text, repeat_passages=1.0), 32)
    x, y = corpus.get_batch("train", 16, torch.Generator().manual_seed(1))
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is still x shifted by one
    windows = ["".join(corpus.tokenizer.decode(row.tolist())) for row in x]
    assert sum(w not in text for w in windows) >= 12  # a repeat makes a window the text never had
    plain = data.load_corpus(DataConfig(source="text", text=text), 32)
    vx, _ = corpus.get_batch("val", 16, torch.Generator().manual_seed(1))
    assert torch.equal(vx, plain.get_batch("val", 16, torch.Generator().manual_seed(1))[0])
    for bad in (1.5, -0.1, True, "1"):
        with pytest.raises(ConfigError, match="repeat_passages must be a share between 0 and 1"):
            DataConfig(repeat_passages=bad)
