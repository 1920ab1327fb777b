"""The training config given with --config: msdoctor YAML, MindFormers YAML, or HF config.json."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from msdoctor.context import Context, FactSpec
from msdoctor.docfile import Document, load
from msdoctor.errors import UserError

_SETUP_LOCK = threading.RLock()  # reentrant: reading the setup may ask this file for its device target again

MINDFORMERS_MARKERS = (
    "runner_config",
    "parallel_config",
    "context",
    "trainer",
    "run_mode",
    "recompute_config",
    "runner_wrapper",
    "train_dataset",
    "optimizer",
    "lr_schedule",
)


@dataclass
class ConfigFacts:
    """A loaded config file.

    Attributes:
        path: the file.
        doc: its data with the line of every key.
        kind: "msdoctor" (our training YAML), "mindformers" (a MindFormers YAML), "hf" (a HF config.json).
        run: the validated msdoctor RunConfig (kind "msdoctor" only).
    """

    path: Path
    doc: Document
    kind: str
    run: Any = None

    @property
    def data(self) -> Any:
        return self.doc.data

    @property
    def setup(self) -> Any:
        """The training setup of this file (:func:`msdoctor.domain.training_setup.read`, no options), read once and
        kept: the device target and device count below are its values, and the ``training_setup`` fact of a run
        without options is this object. None for an unreadable pretrained_model_dir (its error is the memory
        command's and the memory-fit check's to report)."""
        with _SETUP_LOCK:  # checks run in threads: the first to ask reads it, the others get that reading
            if "_setup" not in self.__dict__:
                from msdoctor.domain.training_setup import read

                try:
                    self.__dict__["_setup"] = read(self)
                except UserError:
                    self.__dict__["_setup"] = None
        return self.__dict__["_setup"]

    @property
    def device_target(self) -> Optional[str]:
        """The device the config asks for, spelled Ascend / GPU / CPU (None: not stated): the training setup's."""
        if self.kind == "msdoctor" and self.run is not None:
            return self.run.runtime.device_target
        if self.kind == "mindformers":
            setup = self.setup
            if setup is None or setup.target is not None:
                return setup.target if setup is not None else None
            origin = setup.origin("device_target")  # a value the setup does not know: as written, for the check
            node: Any = self.data
            for key in origin.keys if origin is not None else ():
                node = node.get(key) if isinstance(node, dict) else None
            return _normalise_target(node) if origin is not None else None
        return None

    @property
    def device_num(self) -> Optional[int]:
        """Devices in the job: msdoctor's runtime.device_num; for a MindFormers YAML the training setup's layout,
        data x tensor x pipeline x context parallel (MindFormers' legacy and mcore names alike)."""
        if self.kind == "msdoctor" and self.run is not None:
            return self.run.runtime.device_num
        if self.kind == "mindformers":
            setup = self.setup
            lay = setup.layout if setup is not None else None
            if lay is None:
                return None
            fields = ("data_parallel", "tensor_parallel", "pipeline_stages", "context_parallel")
            keys = [tuple(setup.origins.get(f) or setup.default_key(f) or ("parallel_config",)) for f in fields]
            if any(tuple(p.keys) == k[: len(p.keys)] for p in setup.problems for k in keys if p.keys):
                return None  # a value MindFormers would refuse (memory-fit names it): the count is unknown
            return int(lay.data_parallel * lay.tensor_parallel * lay.pipeline_stages * lay.context_parallel)
        return None

    @property
    def devices_per_node(self) -> Optional[int]:
        """The devices one node's msrun workers use: device_num / runtime.num_nodes (msrun --local_worker_num,
        training/launch.py); a MindFormers YAML does not say how many nodes, so its whole device_num."""
        total = self.device_num
        if self.kind == "msdoctor" and self.run is not None and isinstance(total, int):
            return total // max(1, self.run.runtime.num_nodes)
        return total


def _normalise_target(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return None
    for t in ("Ascend", "GPU", "CPU"):
        if value.strip().lower() == t.lower():
            return t
    return value


def detect_kind(doc: Document) -> str:
    data = doc.data
    if not isinstance(data, dict):
        return "msdoctor"
    if doc.path.suffix.lower() == ".json" or "model_type" in data or "architectures" in data:
        return "hf"
    model = data.get("model")
    if isinstance(model, dict) and ("model_config" in model or "arch" in model):
        return "mindformers"
    if any(k in data for k in MINDFORMERS_MARKERS):
        return "mindformers"
    return "msdoctor"


def load_config(path: Path) -> ConfigFacts:
    """Load and (for msdoctor configs) validate a config file.

    Raises:
        UserError: the file is missing or malformed, or an msdoctor config has
            problems (all of them listed, each with file:line).
    """
    from msdoctor.shipped import path as shipped

    doc = load(Path(path))
    kind = detect_kind(doc)
    run = None
    if kind == "msdoctor":
        if not doc.data:  # an empty file is a mistake (wrong file, truncated copy), not "all defaults"
            raise UserError(
                f"{doc.path}: the training config is empty (no keys)",
                f"give the config's keys: start from {shipped('training/configs/tiny-cpu.yaml')}; "
                f"{shipped('docs/training-config.md')} lists every key",
            )
        from msdoctor.training.config import ConfigError, Problem, from_dict  # the trainer validates its own YAML

        twice = [
            Problem(
                keys, f"given twice (lines {first} and {second}); YAML would silently keep the last one", None, second
            )
            for keys, first, second in doc.duplicates
        ]
        try:
            run = from_dict(doc.data, dict(doc.lines), doc.path)
            problems = twice
        except ConfigError as exc:
            problems = twice + exc.problems
        if problems:
            listing = "\n  ".join(p.render(doc.path) for p in problems)
            raise UserError(
                f"{doc.path}: {len(problems)} problem(s) in the training config:\n  {listing}",
                f"correct the keys above; {shipped('docs/training-config.md')} lists every key with its meaning "
                "and default",
            )
    return ConfigFacts(doc.path, doc, kind, run)


def _compute(ctx: Context) -> Optional[ConfigFacts]:
    if ctx.options.config_path is None:
        return None
    return load_config(ctx.options.config_path)


#: The config given with --config (None without one).
CONFIG: FactSpec[Optional[ConfigFacts]] = FactSpec("config", _compute, description="training config")


def requested_device_target(ctx: Context) -> Optional[str]:
    """--device-target, else the config's device target, else None."""
    if ctx.options.device_target:
        return _normalise_target(ctx.options.device_target)
    cfg = ctx.get(CONFIG)
    return cfg.device_target if cfg is not None else None
