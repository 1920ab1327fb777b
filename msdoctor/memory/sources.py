"""Config sources for the estimator: which reader a config kind goes to, with options applied.

One job per module: :mod:`.source` (the Source / Overrides / DeviceCap types), :mod:`.reader`
(typed values with their file:line), :mod:`.mindformers`, :mod:`.hf`, :mod:`.runconfig` (one
reader per format, key tables in :mod:`.keys`), :mod:`.validate` (options applied, impossible
layouts rejected). This module picks the reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from msdoctor.memory.hf import from_hf
from msdoctor.memory.mindformers import from_mindformers
from msdoctor.memory.runconfig import MSDOCTOR_ORIGINS, from_run_config
from msdoctor.memory.reader import Partial, SourceError
from msdoctor.memory.source import DeviceCap, Overrides, Source
from msdoctor.memory.validate import OPTION_OF, apply_overrides, check, validate

__all__ = [
    "MSDOCTOR_ORIGINS",
    "OPTION_OF",
    "DeviceCap",
    "Overrides",
    "Partial",
    "Source",
    "SourceError",
    "apply_overrides",
    "check",
    "from_hf",
    "from_mindformers",
    "from_run_config",
    "load",
    "read",
    "validate",
]


def load(config: Any, overrides: Optional[Overrides] = None) -> Source:
    """A validated Source from a ``msdoctor.facts.config.ConfigFacts`` (or a path), options applied.

    Raises:
        ConfigError: impossible values or unreadable fields, each with file:line.
        msdoctor.errors.UserError: the file is missing or malformed.
    """
    return check(read(config, overrides))


def read(config: Any, overrides: Optional[Overrides] = None) -> Source:
    """The Source of a config with the options applied, not yet validated (:func:`load` validates).

    Raises:
        SourceError: unreadable fields, each with file:line, and the part of the file that could be read.
        msdoctor.errors.UserError: the file is missing or malformed.
    """
    if not hasattr(config, "kind"):
        from msdoctor.facts.config import load_config

        config = load_config(Path(config))
    if config.kind == "msdoctor":
        src = from_run_config(config.run, config.doc)
    elif config.kind == "mindformers":
        src = from_mindformers(config.doc, overrides.pretrained_model_dir if overrides else None)
    else:
        src = from_hf(config.doc)
    return apply_overrides(src, overrides)
