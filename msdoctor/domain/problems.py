"""What is wrong with a training config, for msdoctor's readers: one :class:`Problem` per key, and the
:class:`ConfigError` that lists all of them with file:line.

The memory estimator and the domain readers (MindFormers and Hugging Face files, msdoctor's own YAML read
as a training setup) raise these. The reference trainer (``msdoctor.training.config``) keeps its own pair
with the same fields and the same rendering: it imports nothing from msdoctor outside ``msdoctor.training``,
so that it runs as it would in a project of its own, and ``msdoctor/memory/`` imports nothing from it, so
that the estimator stays a function of the domain objects. Where msdoctor runs the trainer's validation
(``msdoctor.facts.config.load_config``, ``msdoctor train``) it catches the trainer's class; everywhere
else, this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional


@dataclass
class Problem:
    """One thing wrong with a config: where (the keys and their line), what value, why, and how to fix it."""

    keys: tuple
    message: str
    value: Any = None
    line: Optional[int] = None

    def render(self, path: Optional[Path]) -> str:
        where = f"{path}:{self.line}" if path and self.line else (str(path) if path else "config")
        key = ".".join(str(k) for k in self.keys) or "(top level)"
        shown = f" = {self.value!r}" if self.value is not None else ""
        return f"{where}: {key}{shown}: {self.message}"


class ConfigError(Exception):
    """The config has problems; ``problems`` lists all of them."""

    def __init__(self, path: Optional[Path], problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        lines = [p.render(path) for p in problems]
        super().__init__(f"{len(problems)} problem(s) in {path or 'the config'}:\n  " + "\n  ".join(lines))
