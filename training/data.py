"""Training data: text files -> one memory-mapped token file (built once, cached), sampled by seed.

    files = resolve_files(["corpus/**/*.txt"], max_files=400)   # [] -> the stdlib's own sources
    tokens = TokenFile.build(files, make_tokenizer("byte"), cache_dir)
    x, y = Sampler(tokens.train, seq_length=64, seed=1234).batch(step=0, rows=8)

No download: the default corpus is the Python standard library's ``*.py`` files of the
interpreter that runs the trainer. The cache key covers every file's path, size and mtime and
the tokenizer's identity, so a changed corpus is re-tokenized and an unchanged one is reused.
The sampler is a pure function of (seed, step): the data position in a checkpoint is the step.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .errors import TrainerError

FORMAT_VERSION = 1
DOC_SEPARATOR = "\n\n"


class DataError(TrainerError):
    """No usable training text; the message says what was searched and how to fix it."""


class ByteTokenizer:
    """UTF-8 bytes as tokens: vocabulary 256, nothing to download."""

    vocab_size = 256
    identity = "byte"

    def encode(self, text: str) -> np.ndarray:
        return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


class JsonTokenizer:
    """A local Hugging Face ``tokenizer.json`` through the ``tokenizers`` library."""

    def __init__(self, path: Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise DataError(
                f"data.tokenizer = {path} needs the 'tokenizers' package: {sys.executable} -m pip install tokenizers"
            ) from exc
        self.tok = Tokenizer.from_file(str(path))
        self.vocab_size = self.tok.get_vocab_size(with_added_tokens=True)
        self.identity = "tokenizer.json:" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]

    def encode(self, text: str) -> np.ndarray:
        return np.asarray(self.tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)


def make_tokenizer(spec: str) -> Any:
    if spec == "byte":
        return ByteTokenizer()
    path = Path(spec).expanduser()
    if not path.is_file():
        raise DataError(f"data.tokenizer: {path} is not a file; use 'byte' or the path of a tokenizer.json")
    return JsonTokenizer(path)


def stdlib_glob() -> str:
    """The default corpus: the top-level *.py files of this interpreter's standard library."""
    return os.path.join(sysconfig.get_paths()["stdlib"], "*.py")


def resolve_files(patterns: Sequence[str], max_files: int) -> list[Path]:
    """Files matched by the globs (``**`` recurses), sorted, de-duplicated, at most max_files."""
    patterns = list(patterns) or [stdlib_glob()]
    found: dict[str, Path] = {}
    for pattern in patterns:
        for name in sorted(glob.glob(os.path.expanduser(pattern), recursive=True)):
            if os.path.isfile(name):
                found.setdefault(os.path.realpath(name), Path(name))
    if not found:
        raise DataError(f"no files match {', '.join(patterns)}; fix data.paths or --data (globs of text files)")
    return [found[k] for k in sorted(found)][:max_files]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "msdoctor" / "tokens"


def cache_key(files: Sequence[Path], tokenizer: Any) -> str:
    h = hashlib.sha256(f"v{FORMAT_VERSION}|{tokenizer.identity}".encode())
    for f in files:
        st = f.stat()
        h.update(f"|{os.path.realpath(f)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


@dataclass
class TokenFile:
    """A cached token file and its metadata (``<key>.bin`` + ``<key>.json``)."""

    path: Path
    meta: dict

    @property
    def tokens(self) -> np.ndarray:
        return np.memmap(self.path, dtype=np.dtype(self.meta["dtype"]), mode="r")

    def split(self, val_fraction: float, min_len: int) -> tuple[np.ndarray, np.ndarray]:
        """(train, held-out) views: the last val_fraction of the tokens is held out."""
        toks = self.tokens
        n_val = int(len(toks) * val_fraction)
        if len(toks) - n_val <= min_len:
            raise DataError(
                f"{self.meta['num_tokens']} tokens in {self.meta['num_files']} files: too few for "
                f"sequences of {min_len - 1}; add text (data.paths / --data) or shorten train.seq_length"
            )
        return toks[: len(toks) - n_val], toks[len(toks) - n_val :]

    @classmethod
    def build(cls, files: Sequence[Path], tokenizer: Any, cache_dir: Optional[Path] = None) -> "TokenFile":
        """Tokenize files into the cache once; later calls with unchanged files reuse it."""
        cache_dir = Path(cache_dir or default_cache_dir())
        cache_dir.mkdir(parents=True, exist_ok=True)
        key = cache_key(files, tokenizer)
        bin_path, meta_path = cache_dir / f"{key}.bin", cache_dir / f"{key}.json"
        # one builder at a time: data-parallel workers start together and share the cache
        with open(cache_dir / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if meta_path.exists() and bin_path.exists():
                meta = json.loads(meta_path.read_text())
                if bin_path.stat().st_size == meta["num_tokens"] * np.dtype(meta["dtype"]).itemsize:
                    meta["reused"] = True
                    return cls(bin_path, meta)
            meta = _tokenize(files, tokenizer, bin_path)
            tmp = meta_path.with_suffix(f".json.tmp{os.getpid()}")
            tmp.write_text(json.dumps(meta, indent=1))
            os.replace(tmp, meta_path)  # the metadata last: its presence marks a finished token file
        meta["reused"] = False
        return cls(bin_path, meta)


def _tokenize(files: Sequence[Path], tokenizer: Any, bin_path: Path) -> dict:
    dtype = np.uint16 if tokenizer.vocab_size <= 1 << 16 else np.uint32
    tmp = bin_path.with_suffix(f".bin.tmp{os.getpid()}")
    counts = np.zeros(tokenizer.vocab_size, dtype=np.int64)
    total, skipped = 0, []
    with open(tmp, "wb") as out:
        for f in files:
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError) as exc:
                skipped.append(f"{f}: {type(exc).__name__}")
                continue
            ids = tokenizer.encode(text + DOC_SEPARATOR).astype(dtype)
            counts += np.bincount(ids, minlength=tokenizer.vocab_size)[: tokenizer.vocab_size]
            out.write(ids.tobytes())
            total += len(ids)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, bin_path)
    return {
        "format": FORMAT_VERSION,
        "tokenizer": tokenizer.identity,
        "vocab_size": tokenizer.vocab_size,
        "dtype": np.dtype(dtype).name,
        "num_tokens": total,
        "num_files": len(files) - len(skipped),
        "skipped": skipped,
        "files_sha": hashlib.sha256("\n".join(map(str, files)).encode()).hexdigest()[:16],
        "unigram_entropy": unigram_entropy(counts),
    }


def unigram_entropy(counts: np.ndarray) -> float:
    """Entropy in nats of the token frequencies: the loss of the best model that ignores context."""
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


class Sampler:
    """Random windows of seq_length + 1 tokens; batch(step) depends only on (seed, step)."""

    def __init__(self, tokens: np.ndarray, seq_length: int, seed: int) -> None:
        self.tokens, self.seq, self.seed = tokens, seq_length, seed

    def batch(self, step: int, rows: int, stream: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The global batch of one optimizer step: inputs and next-token targets, int32 (rows, seq)."""
        rng = np.random.default_rng([self.seed, stream, step])
        starts = rng.integers(0, len(self.tokens) - self.seq - 1, size=rows)
        window = np.stack([np.asarray(self.tokens[s : s + self.seq + 1]) for s in starts]).astype(np.int32)
        # contiguous copies: MindSpore may read a numpy buffer after this call returns
        return np.ascontiguousarray(window[:, :-1]), np.ascontiguousarray(window[:, 1:])
