"""The training setup of ``--config``, read once, as a fact.

One reader per format produces it (msdoctor YAML: :mod:`msdoctor.memory.runconfig`; MindFormers legacy and
mcore YAML: :mod:`msdoctor.memory.mindformers`, with MindFormers' own key aliases and defaults, see
:mod:`msdoctor.memory.keys`; Hugging Face config.json: :mod:`msdoctor.memory.hf`). The memory-fit check,
the training-config check and ``msdoctor memory`` read this object rather than a file: within one run
they see one model and one layout.

Every field carries its origin: :meth:`TrainingSetup.origin` gives the key path and the line it came
from (a command-line option for values given as options, ``None`` for a default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from msdoctor.context import Context, FactSpec


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a key path in the file (and its line) or a command-line option."""

    keys: tuple
    line: Optional[int]

    @property
    def key(self) -> str:
        return ".".join(str(k) for k in self.keys)


@dataclass
class TrainingSetup:
    """One training run as the framework will run it.

    Attributes:
        path, kind: the file and its format (msdoctor | mindformers | hf).
        model: :class:`msdoctor.memory.spec.ModelShape` (dense, MoE, MLA and MTP fields).
        layout: :class:`msdoctor.memory.spec.Setup` (parallel layout incl. expert parallel and virtual
            pipeline chunks, batch, precision, optimizer and its sharding, recompute).
        target, capacity, devices: device target, the memory cap the file states, devices stated.
        problems: impossible or unreadable values (each with key and line); when present, model and
            layout are None.
        source: the reader's Source (for the estimator's planner and renderers).
    """

    path: Optional[Path]
    kind: str
    model: Any = None
    layout: Any = None
    target: Optional[str] = None
    capacity: Any = None
    devices: Optional[int] = None
    notes: list = field(default_factory=list)
    unknown: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    source: Any = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.model is not None

    def origin(self, fieldname: str) -> Optional[Origin]:
        """The key (and line) a field of the model or the layout came from; None for a default."""
        if self.source is None or fieldname not in self.source.origins:
            return None
        keys = tuple(self.source.origins[fieldname])
        line = None if str(keys[0]).startswith("--") else self.source.line_of(keys)
        return Origin(keys, line)


def read(config: Any, overrides: Any = None) -> TrainingSetup:
    """The training setup of a loaded config (``msdoctor.facts.config.ConfigFacts``), options applied.

    Raises msdoctor.errors.UserError only for an unreadable file; impossible values land in ``problems``.
    """
    from msdoctor.memory.sources import load
    from msdoctor.training.config import ConfigError

    try:
        src = load(config, overrides)
    except ConfigError as exc:
        return TrainingSetup(exc.path or getattr(config, "path", None), getattr(config, "kind", "?"),
                             problems=list(exc.problems))
    return TrainingSetup(src.path, src.kind, src.model, src.setup, src.target, src.cap, src.devices,
                         list(src.notes), list(src.unknown), [], src)


def _compute(ctx: Context) -> Optional[TrainingSetup]:
    from msdoctor.facts.config import CONFIG

    cfg = ctx.get(CONFIG)
    if cfg is None:
        return None
    return read(cfg, ctx.options.extra.get("memory_overrides"))


TRAINING_SETUP: FactSpec[Optional[TrainingSetup]] = FactSpec(
    "training_setup", _compute,
    description="the --config training run's setup (model incl. MoE/MLA/MTP, layout, batch, precision, "
                "optimizer, recompute), every field with its key and line")
