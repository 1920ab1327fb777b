"""Helpers of the duplicate-installs check: RECORD files (PEP 376/627), read once per run, sampled fast."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
from typing import Iterable, Iterator, Optional

from msdoctor.facts.target import Distribution

from msdoctor.checks.duplicate_installs.scan import importable, is_stack

#: Native libraries: what a half-deleted MindSpore loses first (mindspore/lib/*.so).
_NATIVE = re.compile(r"\.(?:so(?:\.\d+)*|pyd|dylib)$")
#: What marks the stack's sampled RECORD lines; each needle is one scan of the text (about 1 ms
#: on mindspore's RECORD), Windows extension modules (.pyd) only where they can exist.
_STACK_NEEDLES = ("/__init__.py,", ".so,", ".so.", "\n../") + ((".pyd,",) if os.name == "nt" else ())
#: RECORD lines of top-level files and of top-level packages' __init__.py.
_TOP = re.compile(r'^([^,/\r\n"]+(?:/__init__\.py)?),', re.M)


class Records:
    """RECORD files, each read once per run. The check reads them itself: mindspore's is 1.7 MB."""

    def __init__(self) -> None:
        self._text: dict[str, Optional[str]] = {}

    def text(self, d: Distribution) -> Optional[str]:
        if d.path not in self._text:
            try:
                # binary read + decode: three times faster than a text-mode read of a 1.7 MB file
                with open(os.path.join(d.path, "RECORD"), "rb") as f:
                    self._text[d.path] = f.read().decode("utf-8", "replace")
            except OSError:
                self._text[d.path] = None
        return self._text[d.path]

    def rows(self, d: Distribution) -> list[tuple[str, str]]:
        """(path, hash) of every RECORD line (csv only when a path is quoted: the fast path otherwise)."""
        text = self.text(d)
        if not text:
            return []
        lines: Iterable[list[str]] = (
            csv.reader(io.StringIO(text)) if '"' in text else (ln.rsplit(",", 2) for ln in text.splitlines())
        )
        return [(r[0], r[1] if len(r) > 1 else "") for r in lines if r and r[0]]

    def top_files(self, d: Distribution) -> set[str]:
        """RECORD paths at the top of the directory (modules, .pth files) and packages' __init__.py."""
        return set(_TOP.findall(self.text(d) or ""))

    def sample(self, d: Distribution) -> list[str]:
        """The files that matter: top-level modules, packages' __init__.py and .pth files; for the
        stack, the __init__.py of each package and subpackage (mindspore/nn/__init__.py), every
        native library (mindspore/lib/*.so) and console script too.

        Found with str.find over the RECORD text, not by parsing every line: mindspore's RECORD
        has 14,000 lines and this runs on every `msdoctor check`.
        """
        text = self.text(d)
        if not text:
            return []
        text = "\n" + text
        if is_stack(d.name):
            found = [p for needle in _STACK_NEEDLES for p in _paths_with(text, needle)]
            paths = [
                p
                for p in found
                if (p.endswith("/__init__.py") and p.count("/") <= 2) or _NATIVE.search(p) or "/bin/" in p
            ]
        else:
            needles = ["/__init__.py,", ".pth,"] + ["\n" + n + "." for n in d.top_level or [] if importable(n)]
            paths = [p for needle in needles for p in _paths_with(text, needle) if p.count("/") <= 1]
        keep = [p for p in paths if "__pycache__" not in p and not p.endswith(".pyc") and ".dist-info/" not in p]
        return sorted(set(keep))

    def missing(self, d: Distribution) -> tuple[list[str], int]:
        """(sampled files listed in RECORD but absent, number of files checked).

        The stack's RECORD is always read. Other projects are first checked by a stat of each
        top-level package's __init__.py (or module); their RECORD is read only when one is absent,
        so a healthy 300-package environment costs a few hundred stats, not 300 file reads.
        """
        if not is_stack(d.name):
            names = [n for n in d.top_level or [] if importable(n)]
            if all(
                os.path.exists(os.path.join(d.location, n, "__init__.py"))
                or os.path.exists(os.path.join(d.location, n + ".py"))
                for n in names
            ):
                return [], len(names)
        sample = self.sample(d)
        gone = [p for p in sample if not os.path.exists(os.path.join(d.location, p))]
        return gone, len(sample)

    def owned(self, d: Distribution, name: str) -> set[str]:
        """Files of import package ``name`` that RECORD of ``d`` lists (no bytecode)."""
        pre = name + "/"
        return {
            p
            for p, _ in self.rows(d)
            if (p.startswith(pre) or p.split(".", 1)[0] == name) and "__pycache__" not in p and not p.endswith(".pyc")
        }


def _paths_with(text: str, needle: str) -> Iterator[str]:
    """The RECORD paths (a line's first CSV field) containing ``needle``; text starts with a newline."""
    i = text.find(needle)
    while i >= 0:
        start = i + 1 if needle.startswith("\n") else text.rfind("\n", 0, i) + 1
        end = text.find(",", start)
        inside = end == i + len(needle) - 1 if needle.endswith(",") else end >= i + len(needle)
        if inside:
            yield text[start:end]
        i = text.find(needle, i + 1)


def file_hash(path: str) -> Optional[str]:
    """A file's hash in RECORD's notation (sha256=urlsafe-b64, no padding; PEP 376/627)."""
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).digest()
    except OSError:
        return None
    return "sha256=" + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
