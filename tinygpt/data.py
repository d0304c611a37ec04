"""Corpora and batches: where the text comes from and how it becomes (x, y) pairs of token windows.

Three kinds of text:
- Tiny Shakespeare (Karpathy's char-rnn, 1,115,394 characters, public domain), shipped inside the package
  xz-compressed (tinygpt/corpora/, 364 KB) so the default works offline on the first click; checked against its
  SHA-256 on every load, and downloaded (then cached) only when that copy is damaged or missing.
- Synthetic tasks generated in code, each with an exact answer, so "did the model learn it?" is a number:
  `copy` (the induction-head task: the answer repeats the prompt), `reverse`, `sort` (digits) and `add`.
- Text a user pastes or uploads.

A `Corpus` encodes the text once into a 1-D tensor of token ids, keeps the first 90% for training and the last 10%
for validation (nanoGPT's `shakespeare_char` split), and draws random windows of `block_size + 1` tokens: the
first `block_size` are the input x, the same window shifted by one is the target y.

Shape legend: B = batch size, T = block_size (the context length, `max_seq_len`), N = tokens in a split.

Deliberately left out: streaming corpora larger than memory, shuffled or document-aware splits, and data loader
worker processes. Tiny Shakespeare is 1 MB; one tensor index per batch is faster than any loader.
"""

from __future__ import annotations

import hashlib
import http.client
import lzma
import os
import random
import tempfile
import urllib.error
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.request import urlopen

import torch

from .config import DataConfig
from .errors import DataError
from .tokenizer import CharTokenizer

# --- Tiny Shakespeare ------------------------------------------------------------------------------------------

SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SHAKESPEARE_BYTES = 1115394
SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
SHAKESPEARE_ENV = "TINYGPT_SHAKESPEARE"  # path to a local copy: an override of the embedded one
# The copy in the package (pyproject.toml's package-data ships it): lzma -9e of input.txt. Its own digest tells a
# damaged file (a truncated clone, a bad checkout) from a good one before decompressing it.
EMBEDDED_SHAKESPEARE = Path(__file__).resolve().parent / "corpora" / "tinyshakespeare.txt.xz"
EMBEDDED_SHAKESPEARE_SHA256 = "21b40ccf4999c004256d116655824719001352dbc22636354d9cd0c645d03a4a"
CACHE_DIR_ENV = "TINYGPT_CACHE_DIR"  # where the download is kept; default ~/.cache/tinygpt
_CHUNK = 64 * 1024  # bytes per read: ~17 progress callbacks for the whole file

Progress = Callable[[int, int], None]  # progress(bytes_done, bytes_total)

_OFFLINE_HINT = (
    f"Set {SHAKESPEARE_ENV} to the path of a local copy of input.txt, or pick a synthetic task, or paste your own text."
)


def _check_shakespeare(raw: bytes, where: str) -> str:
    """The text of `raw` if it is byte-for-byte Tiny Shakespeare; a DataError naming `where` otherwise."""
    digest = hashlib.sha256(raw).hexdigest()
    if len(raw) != SHAKESPEARE_BYTES or digest != SHAKESPEARE_SHA256:
        raise DataError(
            f"{where} is not Tiny Shakespeare: it has {len(raw):,} bytes and sha256 {digest[:12]}..., expected "
            f"{SHAKESPEARE_BYTES:,} bytes and sha256 {SHAKESPEARE_SHA256[:12]}.... Use an unmodified copy of "
            f"{SHAKESPEARE_URL}, or train on it as your own text."
        )
    return raw.decode("utf-8")


def _embedded_shakespeare() -> tuple[str | None, str]:
    """(the text, "") from the package's copy; (None, why) when that copy is missing or damaged."""
    try:
        packed = EMBEDDED_SHAKESPEARE.read_bytes()
    except OSError as e:
        return None, f"the embedded copy {str(EMBEDDED_SHAKESPEARE)!r} is missing ({e.strerror or e})"
    if hashlib.sha256(packed).hexdigest() != EMBEDDED_SHAKESPEARE_SHA256:
        return None, f"the embedded copy {str(EMBEDDED_SHAKESPEARE)!r} is damaged (its sha256 does not match)"
    try:
        return _check_shakespeare(lzma.decompress(packed), "the embedded copy"), ""
    except (lzma.LZMAError, DataError) as e:
        return None, f"the embedded copy {str(EMBEDDED_SHAKESPEARE)!r} is damaged ({e})"


def _download(url: str, dest: Path, progress: Progress | None, timeout: float) -> bytes:
    """Stream `url` to a temp file next to `dest`, verify it, then rename it into place (atomic: no torn cache)."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=".tinyshakespeare.", suffix=".part")
    except OSError as e:
        raise DataError(
            f"cannot write the download cache {str(dest.parent)!r} ({e}): set {CACHE_DIR_ENV} to a writable folder."
        ) from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                # timeout bounds every blocking socket operation (connect and each read), so a dead network
                # fails in seconds instead of hanging the app.
                with urlopen(url, timeout=timeout) as response:
                    total = int(response.headers.get("Content-Length") or SHAKESPEARE_BYTES)
                    done = 0
                    if progress:
                        progress(0, total)
                    while chunk := response.read(_CHUNK):
                        out.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
                        if done > 2 * SHAKESPEARE_BYTES:  # a wrong URL serving something huge: stop early
                            break
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as e:
                # HTTPError is a URLError; TimeoutError is socket.timeout since Python 3.10.
                if isinstance(e, urllib.error.HTTPError):
                    reason = f"HTTP {e.code} {e.reason}"
                else:
                    reason = getattr(e, "reason", None) or str(e) or type(e).__name__
                raise DataError(
                    f"could not download Tiny Shakespeare from {url} ({reason}): this machine seems offline "
                    f"or cannot reach the address. {_OFFLINE_HINT}"
                ) from None
        raw = tmp.read_bytes()
        _check_shakespeare(raw, f"the file downloaded from {url}")
        os.replace(tmp, dest)
        return raw
    finally:
        tmp.unlink(missing_ok=True)


def load_shakespeare(
    progress: Progress | None = None,
    cache_dir: str | Path | None = None,
    timeout: float = 10,
    url: str = SHAKESPEARE_URL,
) -> str:
    """The Tiny Shakespeare text: from $TINYGPT_SHAKESPEARE, else the package's embedded copy; only when that copy
    is damaged, from the cache, else downloaded into the cache (a DataError offline says why the embedded one failed).
    """
    local = os.environ.get(SHAKESPEARE_ENV)
    if local:
        path = Path(local).expanduser()
        if not path.is_file():
            raise DataError(f"{SHAKESPEARE_ENV} is set to {local!r}, but no file is there: fix the path or unset it.")
        return _check_shakespeare(path.read_bytes(), f"{SHAKESPEARE_ENV} ({local})")

    text, damaged = _embedded_shakespeare()
    if text is not None:
        if progress:
            progress(SHAKESPEARE_BYTES, SHAKESPEARE_BYTES)
        return text

    cache = Path(cache_dir or os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "tinygpt").expanduser()
    dest = cache / "tinyshakespeare.txt"
    if dest.is_file():
        raw = dest.read_bytes()
        try:
            text = _check_shakespeare(raw, str(dest))
        except DataError:
            dest.unlink(missing_ok=True)  # a corrupt cache is refetched rather than trusted
        else:
            if progress:
                progress(len(raw), len(raw))
            return text
    try:
        return _download(url, dest, progress, timeout).decode("utf-8")
    except DataError as e:
        raise DataError(f"{damaged[0].upper()}{damaged[1:]}, and {e}") from None


# --- synthetic tasks -------------------------------------------------------------------------------------------
#
# One problem per line, "<prompt><answer>.", where the prompt ends with its separator and "." ends the answer
# (so generation knows where to stop):
#   copy     "qhvbxa>qhvbxa."   random lowercase letters, repeated: the induction-head task
#   reverse  "qhvbxa>axbvhq."   the letters backwards
#   sort     "583194>134589."   digits in ascending order
#   add      "041372+950018=0991390."  operands zero-padded to `digits`, the sum zero-padded to `digits` + 1
#   copyvar  "kerokerotiaotiao"  the exception: no lines, no separators. Pseudo-words of digits // 3 to `digits`
#            letters, each said twice, back to back: the induction-head task (tinygpt/circuits.py). A copy with a
#            marker and fixed widths is solved by counting positions from the marker (measured: BENCHMARKS.md);
#            with neither, the model must find the previous occurrence of the current letter and copy what came
#            next. The letters follow a fixed random second-order chain (COPYVAR_CHOICES letters may follow each
#            pair), so, as in real text, a head that reads the previous letter pays off by itself and forms first.
# Fixed widths put every answer character at a fixed position, which is what makes these learnable by a
# model this small. Letters (26 symbols) for copy/reverse make guessing hopeless, so accuracy measures the mechanism.

SYNTHETIC_TASKS = ("copy", "reverse", "sort", "add", "copyvar")
ANSWER_END = "."
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
COPYVAR_CHOICES = 3  # letters that may follow each pair of letters in copyvar's pseudo-words


@dataclass
class SyntheticTask:
    """Generated problems and their exact answers; `text` is the training corpus, one problem per line."""

    task: str
    digits: int
    problems: list[tuple[str, str]]  # (prompt, answer): the prompt ends with ">" or "=", the answer has no "."
    text: str


def _check_task(task: str) -> None:
    if task not in SYNTHETIC_TASKS:
        raise DataError(f"unknown synthetic task {task!r}; choose one of {', '.join(SYNTHETIC_TASKS)}.")


def solve(task: str, prompt: str) -> str:
    """The exact answer to `prompt` (e.g. "12+34=" -> "046"), computed, never looked up."""
    _check_task(task)
    if task == "copyvar":  # the prompt is the word itself: its answer is the word again
        return prompt
    sep = "=" if task == "add" else ">"
    if not prompt.endswith(sep):
        raise DataError(f"a {task} prompt ends with {sep!r}, got {prompt!r}.")
    body = prompt[:-1]
    if task == "copy":
        return body
    if task == "reverse":
        return body[::-1]
    if task == "sort":
        return "".join(sorted(body))
    a, plus, b = body.partition("+")
    if not (plus and a.isdigit() and b.isdigit()):
        raise DataError(f"an add prompt looks like '123+456=', got {prompt!r}.")
    return str(int(a) + int(b)).zfill(max(len(a), len(b)) + 1)


def make_synthetic(task: str, num_examples: int, digits: int, seed: int = 0) -> SyntheticTask:
    """`num_examples` random problems of `task` with operands of `digits` characters, reproducible from `seed`."""
    _check_task(task)
    for name, value in (("synthetic_examples", num_examples), ("synthetic_digits", digits)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise DataError(f"{name} must be a positive whole number, got {value!r}.")
    rng = random.Random(seed)  # a private generator: never touches the global random state
    if task == "copyvar":
        return _make_copyvar(num_examples, digits, rng)
    alphabet = _LETTERS if task in ("copy", "reverse") else _DIGITS
    problems = []
    for _ in range(num_examples):
        if task == "add":
            a, b = ("".join(rng.choices(_DIGITS, k=digits)) for _ in range(2))
            prompt = f"{a}+{b}="
        else:
            prompt = "".join(rng.choices(alphabet, k=digits)) + ">"
        problems.append((prompt, solve(task, prompt)))
    text = "".join(f"{p}{a}{ANSWER_END}\n" for p, a in problems)
    return SyntheticTask(task=task, digits=digits, problems=problems, text=text)


def _make_copyvar(num_examples: int, digits: int, rng: random.Random) -> SyntheticTask:
    """copyvar's words, each repeated, as one unbroken text (see the table above)."""
    follow = {a + b: rng.sample(_LETTERS, COPYVAR_CHOICES) for a in _LETTERS for b in _LETTERS}
    problems = []
    for _ in range(num_examples):
        length = rng.randint(max(1, digits // 3), digits)
        word = rng.sample(_LETTERS, 2)
        while len(word) < length:
            word.append(rng.choice(follow[word[-2] + word[-1]]))
        word = "".join(word[:length])
        problems.append((word, word))
    return SyntheticTask("copyvar", digits, problems, "".join(p + a for p, a in problems))


def score_answers(task: str, prompts: Sequence[str], predicted: Sequence[str]) -> float:
    """Fraction of exactly right answers. A prediction is cut at its first "." or newline, so raw generations work."""
    if len(prompts) != len(predicted):
        raise DataError(f"got {len(prompts)} prompts but {len(predicted)} predictions.")
    if not prompts:
        return 0.0
    right = 0
    for prompt, guess in zip(prompts, predicted, strict=True):
        answer = guess.split(ANSWER_END, 1)[0].split("\n", 1)[0]
        right += answer == solve(task, prompt)
    return right / len(prompts)


# --- user text -------------------------------------------------------------------------------------------------


def min_corpus_chars(block_size: int, val_fraction: float = 0.1) -> int:
    """The fewest characters whose train and val splits both hold one window of block_size + 1 tokens."""
    n = block_size + 1
    while int(n * (1 - val_fraction)) < block_size + 1 or n - int(n * (1 - val_fraction)) < block_size + 1:
        n += 1
    return n


def text_from_user(data: str | bytes, min_chars: int = 1) -> str:
    """Pasted text or an uploaded file's bytes, as a str: UTF-8, no BOM, "\\n" line ends, at least `min_chars` long."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(
                f"the file is not UTF-8 text: byte 0x{e.object[e.start]:02x} at offset {e.start:,} cannot be "
                "decoded. Save the file as UTF-8 (in most editors: Save As, Encoding: UTF-8) and upload it again."
            ) from None
    if not isinstance(data, str):
        raise DataError(f"expected text or bytes, got {type(data).__name__}.")
    # A BOM and Windows line ends would otherwise become tokens of their own.
    text = data.removeprefix("\ufeff").replace("\r\n", "\n")
    if not text.strip():
        raise DataError("the text is empty: paste or upload some text to train on.")
    if len(text) < min_chars:
        raise DataError(
            f"the text has {len(text):,} characters but at least {min_chars:,} are needed, so that both the "
            "training and validation splits hold a full context window. Add more text or lower max_seq_len."
        )
    return text


# --- corpus and batches ----------------------------------------------------------------------------------------


@dataclass(eq=False)  # holds tensors, whose == is elementwise: compare corpora by identity
class Corpus:
    """A tokenized text split into train and val, and the random (x, y) windows a training step eats."""

    tokenizer: CharTokenizer
    train_data: torch.Tensor  # (N_train,) long: the first 90% of the tokens
    val_data: torch.Tensor  # (N_val,) long: the last 10%
    block_size: int  # T: tokens per input window
    description: str  # "Tiny Shakespeare, 1,115,394 chars, 65 symbols"
    task: SyntheticTask | None = None  # the problems behind a synthetic corpus, for scoring answers
    repeat_passages: float = 0.0  # share of train windows with a passage said twice (DataConfig.repeat_passages)
    # (split, device) -> (N - T, T + 1) window view of that split's tokens on that device, built on first use.
    _windows: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_text(
        cls,
        text: str,
        block_size: int,
        val_fraction: float = 0.1,
        tokenizer: CharTokenizer | None = None,
        name: str | None = None,
    ) -> Corpus:
        """Tokenize `text` (building a tokenizer unless one is given) and split it; `name` starts the description."""
        if not isinstance(block_size, int) or block_size < 1:
            raise DataError(f"block_size must be a positive whole number, got {block_size!r}.")
        if not 0.0 < val_fraction < 1.0:
            raise DataError(f"val_fraction must be between 0 and 1, got {val_fraction}: try 0.1.")
        n = len(text)
        n_train = int(n * (1 - val_fraction))
        if min(n_train, n - n_train) < block_size + 1:
            need = min_corpus_chars(block_size, val_fraction)
            raise DataError(
                f"the corpus has {n:,} characters, so its splits hold {n_train:,} (train) and {n - n_train:,} "
                f"(val), but each needs a window of block_size + 1 = {block_size + 1} tokens: use at least "
                f"{need:,} characters or a smaller max_seq_len."
            )
        tokenizer = CharTokenizer.from_text(text) if tokenizer is None else tokenizer
        tokens = torch.tensor(tokenizer.encode(text, what="text"), dtype=torch.long)  # (N,)
        description = f"{n:,} chars, {tokenizer.vocab_size} symbols"
        description = f"{name}, {description}" if name else description
        return cls(tokenizer, tokens[:n_train], tokens[n_train:], block_size, description)

    def _split(self, split: str) -> torch.Tensor:
        if split == "train":
            return self.train_data
        if split == "val":
            return self.val_data
        raise DataError(f"split must be 'train' or 'val', got {split!r}.")

    def get_batch(
        self,
        split: str,
        batch_size: int,
        generator: torch.Generator | None = None,
        device: str | torch.device | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """B random windows: x (B, T) and y (B, T) long, y[b, t] = the token after x[b, t]."""
        data = self._split(split)
        device = torch.device(device) if device is not None else data.device
        key = (split, str(device))
        if key not in self._windows:
            # unfold makes a strided view, no copy: row i is tokens[i : i + T + 1]. Kept on the target device so
            # a batch is one gather there instead of a host-to-device copy per step.
            self._windows[key] = data.to(device).unfold(0, self.block_size + 1, 1)  # (N - T, T + 1)
        windows = self._windows[key]
        # Start offsets come from the (CPU) generator, so a seed gives the same batches on every device.
        gen_device = generator.device if generator is not None else "cpu"
        ix = torch.randint(len(data) - self.block_size, (batch_size,), generator=generator, device=gen_device)  # (B,)
        rows = windows.index_select(0, ix.to(device))  # (B, T + 1), a fresh contiguous copy
        if split == "train" and self.repeat_passages > 0:
            rows = repeat_passage(rows, self.repeat_passages, generator)
        return rows[:, :-1].contiguous(), rows[:, 1:].contiguous()  # x (B, T), y (B, T)

    def probe_text(self, length: int) -> str:
        """The first `length` characters of the val split (the fixed text whose attention the app shows)."""
        return self.tokenizer.decode(self.val_data[: max(0, length)])

    @property
    def num_chars(self) -> int:
        return len(self.train_data) + len(self.val_data)


def data_sources() -> list[str]:
    """Every valid DataConfig.source."""
    return ["shakespeare", *(f"synthetic:{t}" for t in SYNTHETIC_TASKS), "text"]


MIN_REPEAT = 4  # the shortest passage repeat_passage says twice


def repeat_passage(rows: torch.Tensor, share: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """rows (B, W) token windows, with a random passage of MIN_REPEAT to W // 2 tokens at a random place said
    twice in a row in `share` of them (the rest unchanged): row ... p_1 .. p_h p_1 .. p_h ... The length and place
    vary, so a head can only predict the repeat by finding the passage's earlier copy by content (induction),
    not by looking back a fixed distance (a positional head, which a fixed place and length would reward)."""
    batch, width = rows.shape
    if width < 2 * MIN_REPEAT:
        return rows
    gen_device = generator.device if generator is not None else "cpu"
    chosen = torch.rand(batch, generator=generator, device=gen_device) < share  # (B,)
    fraction = torch.rand(batch, generator=generator, device=gen_device)  # (B,) in [0, 1)
    length = MIN_REPEAT + (fraction * (width // 2 - MIN_REPEAT + 1)).long()  # (B,) in [MIN_REPEAT, W // 2]
    start = (torch.rand(batch, generator=generator, device=gen_device) * (width - 2 * length + 1)).long()  # (B,)
    chosen, length, start = (t.to(rows.device) for t in (chosen, length, start))
    pos = torch.arange(width, device=rows.device)[None, :]  # (1, W)
    second = chosen[:, None] & (pos >= (start + length)[:, None]) & (pos < (start + 2 * length)[:, None])  # (B, W)
    source = torch.where(second, pos - length[:, None], pos)  # (B, W): each position of the second copy reads the first
    return rows.gather(1, source)


def load_corpus(data_config: DataConfig, block_size: int, progress: Progress | None = None) -> Corpus:
    """The Corpus a DataConfig names: "shakespeare", "synthetic:<task>" or "text", with its repeat_passages."""
    corpus = _load_corpus(data_config, block_size, progress)
    corpus.repeat_passages = float(data_config.repeat_passages)
    return corpus


def _load_corpus(data_config: DataConfig, block_size: int, progress: Progress | None) -> Corpus:
    source = data_config.source
    if source == "shakespeare":
        text = load_shakespeare(progress=progress)
        return Corpus.from_text(text, block_size, name="Tiny Shakespeare")
    if source.startswith("synthetic:") and source.removeprefix("synthetic:") in SYNTHETIC_TASKS:
        # seed 0: the same source and sizes always give the same problems, so runs are comparable.
        task = make_synthetic(
            source.removeprefix("synthetic:"), data_config.synthetic_examples, data_config.synthetic_digits, seed=0
        )
        try:
            name = f"synthetic {task.task} ({len(task.problems):,} problems of {task.digits} characters)"
            if task.task == "copyvar":
                shortest = max(1, task.digits // 3)
                words = f"{len(task.problems):,} words of {shortest}-{task.digits} letters"
                name = f"synthetic copyvar ({words}, each twice)"
            corpus = Corpus.from_text(task.text, block_size, name=name)
        except DataError as e:
            raise DataError(f"{e} For a synthetic task, raise synthetic_examples.") from None
        corpus.task = task
        return corpus
    if source == "text":
        text = text_from_user(data_config.text, min_chars=min_corpus_chars(block_size))
        return Corpus.from_text(text, block_size, name="your text")
    raise DataError(f"unknown data source {source!r}; choose one of {', '.join(data_sources())}.")
