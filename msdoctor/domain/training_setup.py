"""The training setup of ``--config``, read once, as a fact.

One reader per format produces it (msdoctor YAML: :mod:`msdoctor.memory.runconfig`; MindFormers legacy and
mcore YAML: :mod:`msdoctor.memory.mindformers`, with MindFormers' own key aliases and defaults, see
:mod:`msdoctor.memory.keys`; Hugging Face config.json: :mod:`msdoctor.memory.hf`). The memory-fit check,
the training-config check and ``msdoctor memory`` read this object rather than a file: within one run
they see one model and one layout.

Every field carries its origin: :meth:`TrainingSetup.origin` gives the key path and the line it came
from (a command-line option for values given as options, ``None`` for a default). The run around the model
(learning rate, schedule, loss scaling, checkpoints, data: :mod:`msdoctor.domain.run_plan`) is read in the same
pass and takes its batch, layout, shape and dtype values from this setup.
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
        model: :class:`msdoctor.memory.spec.ModelShape` (dense, MoE, MLA and MTP fields); None when the file
            does not give a readable shape (a placeholder pretrained_model_dir, a missing key).
        layout: :class:`msdoctor.memory.spec.Setup` (parallel layout incl. expert parallel and virtual
            pipeline chunks, batch, precision, optimizer and its sharding, recompute); read even when the
            model is not, None only when not even the layout could be read.
        target, capacity, devices: device target, the memory cap the file states, devices stated.
        run: :class:`msdoctor.domain.run_plan.Resolved` for training YAMLs (msdoctor, MindFormers): the global
            batch as the framework resolves it, the learning rate and its schedule, loss scaling, checkpoints
            and data paths, each value with its key and line; its batch, layout, shape and dtype values are
            this setup's (one reading). None for a config.json.
        problems: impossible or unreadable values (each with key and line); when present, ``ok`` is False and
            the estimate is not made.
        source: the reader's Source (for the estimator's planner and renderers); None when unreadable.
        origins, defaults, lines: field -> key path it came from; field -> the key that would have set a
            defaulted field; key path -> line.
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
    origins: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    lines: dict = field(default_factory=dict)
    run: Any = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.model is not None and self.source is not None

    def origin(self, fieldname: str) -> Optional[Origin]:
        """The key (and line) a field of the model or the layout came from; None for a default."""
        if fieldname not in self.origins:
            return None
        keys = tuple(self.origins[fieldname])
        return Origin(keys, None if str(keys[0]).startswith("--") else self.line_of(keys))

    def default_key(self, fieldname: str) -> Optional[tuple]:
        """The key that would set a field that took its default (None when the reader names none)."""
        got = self.defaults.get(fieldname)
        return tuple(got) if got else None

    def line_of(self, keys: tuple) -> Optional[int]:
        while keys:
            if keys in self.lines:
                return int(self.lines[keys])
            keys = keys[:-1]
        return None


def read(config: Any, overrides: Any = None) -> TrainingSetup:
    """The training setup of a loaded config (``msdoctor.facts.config.ConfigFacts``), options applied.

    Raises msdoctor.errors.UserError only for an unreadable file; impossible values land in ``problems``.
    """
    from msdoctor.domain.problems import ConfigError
    from msdoctor.memory.sources import read as read_source
    from msdoctor.memory.sources import validate

    path, kind = getattr(config, "path", None), getattr(config, "kind", "?")
    try:
        src = read_source(config, overrides)
    except ConfigError as exc:
        part = getattr(exc, "partial", None)
        setup = TrainingSetup(exc.path or path, kind, problems=list(exc.problems))
        if part is not None:
            setup.layout, setup.target, setup.devices = part.setup, part.target, part.devices
            setup.notes, setup.unknown = list(part.notes), list(part.unknown)
            setup.origins, setup.defaults, setup.lines = dict(part.origins), dict(part.defaults), dict(part.lines)
    else:
        setup = TrainingSetup(
            src.path,
            src.kind,
            src.model,
            src.setup,
            src.target,
            src.cap,
            src.devices,
            list(src.notes),
            list(src.unknown),
            validate(src),
            src,
            dict(src.origins),
            dict(src.defaults),
            dict(src.lines),
        )
    if kind in ("msdoctor", "mindformers") and setup.layout is not None:
        from msdoctor.domain.run_plan import resolve

        setup.run = resolve(config, setup)
    return setup


def _compute(ctx: Context) -> Optional[TrainingSetup]:
    from msdoctor.facts.config import CONFIG

    cfg = ctx.get(CONFIG)
    if cfg is None:
        return None
    overrides = ctx.options.extra.get("memory_overrides")
    if overrides is None and cfg.setup is not None:
        return cfg.setup  # the reading the config's device target and count came from: one reading per run
    return read(cfg, overrides)


TRAINING_SETUP: FactSpec[Optional[TrainingSetup]] = FactSpec(
    "training_setup",
    _compute,
    description="the --config training run's setup (model incl. MoE/MLA/MTP, layout, batch, precision, "
    "optimizer, recompute; lr schedule, checkpoints and data), every field with its key and line",
)
