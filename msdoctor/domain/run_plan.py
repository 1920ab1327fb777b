"""The run around the model, resolved: global batch, learning-rate schedule, loss scaling, checkpoints and data,
each value with the key it came from (the training-config rules read it).

Part of the training setup (:mod:`msdoctor.domain.training_setup`): the batch, parallel layout, model shape,
dtypes and device target are the setup's values (one reading of the file, with MindFormers' aliases and
defaults); this module reads what the setup does not model, for msdoctor's training YAML (:func:`from_msdoctor`,
``training/config.py``) and a MindFormers YAML (:func:`from_mindformers`), and resolves what the framework
derives from them. Neither imports a framework or runs anything; both are pure functions of the parsed
document (``msdoctor.docfile.Document`` knows the line of every key) and the setup.

How MindFormers resolves the batch, from ``mindformers/trainer/base_trainer.py``
(``_check_global_batch_size_for_auto_parallel`` and ``_check_grad_accumulation_steps``,
mindspore-lab/mindformers r1.5.0):

* semi-auto / auto parallel (``use_parallel: True``, ``parallel.parallel_mode`` 1 or 2), no
  pipeline: global batch = ``runner_config.batch_size`` x ``parallel_config.data_parallel`` x
  ``micro_batch_interleave_num`` x ``runner_config.gradient_accumulation_steps``;
* with a pipeline (``pipeline_stage`` > 1): batch_size x data_parallel x ``micro_batch_num`` x
  micro_batch_interleave_num; gradient_accumulation_steps is reset to 1;
* data-parallel mode (``parallel_mode: 0``) or stand-alone: batch_size x devices;
  gradient_accumulation_steps is reset to 1 ("currently need to be used in semi_auto_parallel mode").

The learning-rate schedule counts optimizer steps: ``lr_schedule.total_steps`` (-1 or absent:
``runner_config.epochs`` x the dataset size in global batches), ``warmup_ratio`` x total_steps
(it takes precedence over ``warmup_steps``), ``warmup_epochs`` x the dataset size
(``BaseTrainer.create_lr_scheduler``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from msdoctor.docfile import Document

DTYPES = {
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
}

#: comment directives: ``# msdoctor: base_global_batch=1024 devices=8`` anywhere in the file
DIRECTIVE_RE = re.compile(r"#\s*msdoctor\s*:\s*(.+)$")
DIRECTIVES = {
    "base_global_batch": int,  # the global batch the learning rate was tuned for
    "devices": int,  # devices in the whole job
    "devices_per_node": int,  # devices (NPUs/GPUs) of one node
    "tokens_per_second": float,  # throughput of the whole job
    "max_lost_hours": float,  # the most training time a crash may lose (checkpoint interval)
}


@dataclass(frozen=True)
class Val:
    """A value and where it came from.

    Attributes:
        value: the value as the framework uses it (a default when the key is absent).
        keys: the key path that sets it (dotted in messages), or an option / directive name.
        line: 1-based line of the key in the file, None when absent (a default) or not from the file.
        given: False when the key is absent and ``value`` is the framework's default.
    """

    value: Any
    keys: tuple
    line: Optional[int] = None
    given: bool = True

    @property
    def key(self) -> str:
        return ".".join(str(k) for k in self.keys)

    def said(self) -> str:
        """``runner_config.batch_size = 1`` (or ``... = 1 (default)``)."""
        return f"{self.key} = {self.value}" + ("" if self.given else " (default)")


@dataclass
class Resolved:
    """What the rules read from one config; numbers that MindFormers or the trainer derive are
    resolved here the way they derive them, with the keys involved."""

    path: Path
    kind: str  # "msdoctor" | "mindformers"
    doc: Document
    micro_batch: Val
    data_parallel: Val
    tensor_parallel: Val
    pipeline_stages: Val
    micro_batch_num: Val
    grad_accumulation: Val
    seq_length: Val
    lr: Val
    optimizer: Val
    compute_dtype: Val
    param_dtype: Val
    loss_scale: Val  # value: "dynamic" | "static" | "none"
    device_target: Val
    num_heads: Val
    num_kv_heads: Val
    num_layers: Val
    ckpt_keep: Val
    ckpt_dir: Val  # a path string as written (relative to the launch directory)
    context_parallel: Val = field(default_factory=lambda: Val(1, ("parallel_config", "context_parallel"), None, False))
    interleave: Optional[Val] = None  # MindFormers micro_batch_interleave_num
    vpp: Optional[Val] = None  # virtual pipeline chunks (MindFormers pp_interleave_num)
    offset: Optional[Val] = None  # MindFormers model_config.offset
    mtp_depth: Optional[Val] = None  # DeepSeek multi-token-prediction layers, placed by the pipeline too
    model_type: str = ""  # MindFormers model_config.type (LlamaConfig, ChatGLM2Config, ...)
    finetune: str = ""  # why this is a finetune run ("" for pretraining): see finetune_reason
    total_steps: Optional[Val] = None  # optimizer steps, when the file states them
    epochs: Optional[Val] = None  # MindFormers runner_config.epochs (total = epochs x dataset size)
    warmup_steps: Optional[Val] = None
    warmup_ratio: Optional[Val] = None
    warmup_epochs: Optional[Val] = None
    lr_scale: Optional[Val] = None  # MindFormers lr_scale / lr_scale_factor
    lr_scale_factor: Optional[Val] = None
    base_global_batch: Optional[Val] = None
    devices: Optional[Val] = None
    num_nodes: Optional[Val] = None
    ckpt_every: Optional[Val] = None  # optimizer steps between checkpoints (None: none periodic)
    ckpt_network_copy: bool = False  # MindFormers save_network_params: weights saved once more
    ckpt_per_rank: bool = False  # every rank writes its own shard (MindFormers) vs rank 0 only (msdoctor)
    ckpt_dedup: bool = False  # MindFormers remove_redundancy
    data_paths: list = field(default_factory=list)  # Vals of path strings / globs
    data_kind: str = "unknown"  # text-glob | stdlib | mindrecord | megatron | unknown
    data_tokenizer: Optional[str] = None  # msdoctor data.tokenizer
    mode: str = "semi_auto"  # MindFormers parallel mode: semi_auto | data_parallel | stand_alone
    batch_terms: list = field(default_factory=list)  # the Vals multiplied into the global batch
    notes: list = field(default_factory=list)  # keys the framework ignores or resets, with why
    directives: dict = field(default_factory=dict)  # name -> Val (from comments)
    directive_problems: list = field(default_factory=list)  # (line, message)

    @property
    def global_batch(self) -> int:
        out = 1
        for v in self.batch_terms:
            out *= int(v.value)
        return out

    def batch_formula(self) -> str:
        return " x ".join(f"{v.key} {v.value}" for v in self.batch_terms) + f" = {self.global_batch}"

    @property
    def layout_product(self) -> int:
        return (
            int(self.data_parallel.value)
            * int(self.tensor_parallel.value)
            * int(self.pipeline_stages.value)
            * int(self.context_parallel.value)
        )

    def where(self, v: Optional[Val]) -> str:
        """file:line of a value's key (the file alone when the key is absent)."""
        if v is not None and v.line:
            return f"{self.path}:{v.line}"
        return str(self.path)

    def line_of(self, *keys: Any) -> Optional[int]:
        return self.doc.line_of(*keys)


# -- reading values ------------------------------------------------------------------
def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())  # YAML 1.1 reads 3e-4 as a string
    except ValueError:
        return None


def _int(value: Any) -> Optional[int]:
    f = _num(value)
    return int(f) if f is not None and f.is_integer() else None


def _get(data: Any, keys: tuple) -> tuple[bool, Any]:
    node = data
    for k in keys:
        if isinstance(node, dict) and k in node:
            node = node[k]
        elif isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node):
            node = node[k]
        else:
            return False, None
    return True, node


class _Reader:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[tuple[tuple, str, Any]] = []

    def val(self, keys: tuple, default: Any, kind: str = "int", alts: tuple = ()) -> Val:
        """The first of keys / alts present in the file (None counts as absent), else the default."""
        for path in (keys,) + alts:
            found, raw = _get(self.doc.data, path)
            if not found or raw is None:
                continue
            line = self.doc.lines.get(path)
            if kind == "int":
                got = _int(raw)
                if got is None:
                    self.problems.append((path, "expected an integer", raw))
                    return Val(default, path, line, False)
                return Val(got, path, line)
            if kind == "num":
                got_f = _num(raw)
                if got_f is None:
                    self.problems.append((path, "expected a number", raw))
                    return Val(default, path, line, False)
                return Val(got_f, path, line)
            if kind == "bool":
                if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
                    raw = raw.strip().lower() == "true"
                return Val(bool(raw), path, line)
            if kind == "dtype":
                return Val(DTYPES.get(str(raw).strip().lower(), str(raw)), path, line)
            return Val(raw, path, line)
        return Val(default, keys, None, False)


def read_directives(path: Path, text: Optional[str] = None) -> tuple[dict, list]:
    """``# msdoctor: key=value ...`` comments: {name: Val}, [(line, problem)]."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return {}, []
    found: dict = {}
    problems: list = []
    for i, line in enumerate(text.splitlines(), 1):
        m = DIRECTIVE_RE.search(line)
        if not m:
            continue
        for item in re.split(r"[,\s]+", m.group(1).strip()):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if name not in DIRECTIVES or not sep:
                import difflib

                close = difflib.get_close_matches(name, list(DIRECTIVES), n=1, cutoff=0.6)
                problems.append(
                    (
                        i,
                        f"unknown msdoctor directive {item!r}"
                        + (
                            f"; did you mean {close[0]}=...?"
                            if close
                            else f"; known: {', '.join(k + '=N' for k in DIRECTIVES)}"
                        ),
                    )
                )
                continue
            try:
                value = DIRECTIVES[name](raw.strip())
                if value <= 0:
                    raise ValueError
            except ValueError:
                problems.append((i, f"msdoctor directive {name}: expected a positive number, got {raw!r}"))
                continue
            found[name] = Val(value, (f"# msdoctor: {name}",), i)
    return found, problems


# -- msdoctor's own training YAML ----------------------------------------------------------
def _ms_line(doc: Document, keys: tuple) -> Optional[int]:
    line = doc.lines.get(keys)
    if line is None and len(keys) == 2:  # top-level shortcuts: device_target, device_num, output_dir, seed
        line = doc.lines.get((keys[1],))
    return line


#: Resolved field -> the training setup's field (layout, model or target) it is
SHARED = {
    "micro_batch": "micro_batch_size",
    "data_parallel": "data_parallel",
    "tensor_parallel": "tensor_parallel",
    "pipeline_stages": "pipeline_stages",
    "context_parallel": "context_parallel",
    "micro_batch_num": "micro_batch_num",
    "grad_accumulation": "grad_accumulation",
    "seq_length": "seq_length",
    "compute_dtype": "precision",
    "param_dtype": "param_dtype",
    "vpp": "virtual_pipeline_chunks",
    "optimizer": "optimizer",
    "device_target": "device_target",
    "num_heads": "num_heads",
    "num_kv_heads": "num_kv_heads",
    "num_layers": "num_layers",
    "mtp_depth": "mtp_layers",
}
_MODEL_FIELDS = ("num_heads", "num_kv_heads", "num_layers", "mtp_layers")


def _setup_value(setup: Any, name: str) -> Any:
    if name == "device_target":
        return setup.target
    if name in _MODEL_FIELDS:
        if setup.model is None:
            return None
        return setup.model.kv_heads if name == "num_kv_heads" else getattr(setup.model, name)
    return getattr(setup.layout, name)


def _shared_msdoctor(setup: Any, doc: Document) -> dict[str, Val]:
    """The setup's values with msdoctor's keys (every field's key is known; its line when the file has it)."""
    out = {}
    for name, fieldname in SHARED.items():
        keys = tuple(setup.origins.get(fieldname) or ("parallel", fieldname))
        line = None if str(keys[0]).startswith("--") else _ms_line(doc, keys)
        out[name] = Val(_setup_value(setup, fieldname), keys, line, line is not None)
    return out


def from_msdoctor(run: Any, doc: Document, text: Optional[str] = None, setup: Any = None) -> Resolved:
    """msdoctor's training YAML, validated into ``run`` (a ``msdoctor.training.config.RunConfig``); the batch,
    layout, shape and dtypes are ``setup``'s (the TrainingSetup read from the same file)."""

    def v(section: str, key: str, value: Any) -> Val:
        keys = (section, key)
        line = _ms_line(doc, keys)
        return Val(value, keys, line, line is not None)

    if setup is None:
        return _setup_of(run, doc, text).run
    sv = _shared_msdoctor(setup, doc)

    t, rt, c = run.train, run.runtime, run.checkpoint
    directives, dproblems = read_directives(doc.path, text)
    loss = t.loss_scale
    out_dir = rt.output_dir or str(Path("runs") / run.name)
    out_line = _ms_line(doc, ("runtime", "output_dir"))
    ckpt_dir = Val(str(Path(out_dir) / "checkpoints"), ("runtime", "output_dir"), out_line, out_line is not None)
    paths = [
        Val(pat, ("data", "paths", i), doc.lines.get(("data", "paths", i)) or _ms_line(doc, ("data", "paths")))
        for i, pat in enumerate(run.data.paths)
    ]
    base = None
    if t.base_global_batch:
        base = v("train", "base_global_batch", t.base_global_batch)
    elif "base_global_batch" in directives:
        base = directives["base_global_batch"]
    res = Resolved(
        path=doc.path,
        kind="msdoctor",
        doc=doc,
        micro_batch=sv["micro_batch"],
        data_parallel=sv["data_parallel"],
        tensor_parallel=sv["tensor_parallel"],
        pipeline_stages=sv["pipeline_stages"],
        micro_batch_num=sv["micro_batch_num"],
        grad_accumulation=sv["grad_accumulation"],
        seq_length=sv["seq_length"],
        lr=v("train", "lr", t.lr),
        optimizer=sv["optimizer"],
        compute_dtype=sv["compute_dtype"],
        param_dtype=sv["param_dtype"],
        loss_scale=v("train", "loss_scale", loss),
        device_target=sv["device_target"],
        num_heads=sv["num_heads"],
        num_kv_heads=sv["num_kv_heads"],
        num_layers=sv["num_layers"],
        ckpt_keep=v("checkpoint", "keep_last", c.keep_last),
        ckpt_dir=ckpt_dir,
        vpp=sv["vpp"],
        total_steps=v("train", "max_steps", t.max_steps),
        warmup_steps=v("train", "warmup_steps", t.warmup_steps),
        base_global_batch=base,
        devices=v("runtime", "device_num", rt.device_num),
        num_nodes=v("runtime", "num_nodes", rt.num_nodes),
        ckpt_every=v("checkpoint", "every_steps", c.every_steps) if c.every_steps else None,
        data_paths=paths,
        data_kind="text-glob" if paths else "stdlib",
        data_tokenizer=run.data.tokenizer,
        directives=directives,
        directive_problems=dproblems,
    )
    # training/train.py: global batch = micro_batch_size x data_parallel x grad_accumulation
    res.batch_terms = [res.micro_batch, res.data_parallel, res.grad_accumulation]
    if rt.device_target == "CPU" and t.precision != "fp32" and not t.half_on_cpu:
        # the setup counts it as fp32 already (msdoctor.memory.runconfig); said here for the rules' readers
        res.notes.append(f"train.precision = {t.precision} runs as fp32 on CPU (train.half_on_cpu is false)")
    return res


# -- MindFormers YAML --------------------------------------------------------------------
PLACEHOLDER_RE = re.compile(
    r"(^$|/path/to|path/to/|^/path/|^path_to|/\.\.\./|^\.\.\./|^/\.\./|<[^>]+>|\{[^}]*\}|\byour[_ -]|^xxx|/xxx|"
    r"please input|todo|^(\./)?(dataset|datasets|data)/?$)",
    re.IGNORECASE,
)


def is_placeholder(path: str) -> bool:
    """``""``, ``/path/to/dataset``, ``/path/data``, ``/{path}/x``, ``/.../x``, ``<your data>``, ``xxx``, "Please input ...":
    a value to fill in (the forms MindFormers' shipped configs use; a bare ``./dataset`` too)."""
    return bool(PLACEHOLDER_RE.search(str(path).strip()))


def _callbacks(doc: Document) -> tuple[Optional[int], Optional[dict]]:
    cbs = doc.data.get("callbacks") if isinstance(doc.data, dict) else None
    if not isinstance(cbs, list):
        return None, None
    for i, cb in enumerate(cbs):
        if isinstance(cb, dict) and cb.get("type") == "CheckpointMonitor":
            return i, cb
    return None, None


def _loss_scale(r: _Reader) -> Val:
    """runner_wrapper.scale_sense: a number (a fixed scale; 1.0 is none), or a loss-scale update cell."""
    keys = ("runner_wrapper", "scale_sense")
    found, raw = _get(r.doc.data, keys)
    line = r.doc.lines.get(keys)
    if not found or raw is None:
        # MFTrainOneStepCell's scale_sense defaults to 1.0: no loss scaling
        return Val("none", keys, None, False)
    if isinstance(raw, dict):
        kind = str(raw.get("type", ""))
        if "Dynamic" in kind:
            return Val("dynamic", keys + ("type",), r.doc.lines.get(keys + ("type",)) or line)
        return Val("static", keys + ("type",), r.doc.lines.get(keys + ("type",)) or line)
    n = _num(raw)
    return Val("none" if n in (None, 1.0) else "static", keys, line)


def _data_paths(r: _Reader) -> tuple[list, str]:
    dl = ("train_dataset", "data_loader")
    found, loader = _get(r.doc.data, dl)
    if not found or not isinstance(loader, dict):
        return [], "unknown"
    kind = str(loader.get("type", ""))
    out = []
    for key in ("dataset_dir", "dataset_files", "path", "data_files"):
        if key in loader:
            raw = loader[key]
            items = raw if isinstance(raw, list) else [raw]
            for i, item in enumerate(items):
                keys = dl + ((key, i) if isinstance(raw, list) else (key,))
                out.append(
                    Val("" if item is None else str(item), keys, r.doc.lines.get(keys) or r.doc.lines.get(dl + (key,)))
                )
    cfg_paths = ("train_dataset", "data_loader", "config", "data_path")
    found, raw = _get(r.doc.data, cfg_paths)
    if found and isinstance(raw, list):  # BlendedMegatronDatasetDataLoader: [weight, prefix, weight, prefix, ...]
        for i, item in enumerate(raw):
            if _num(item) is None:
                keys = cfg_paths + (i,)
                out.append(Val(str(item), keys, r.doc.lines.get(keys) or r.doc.lines.get(cfg_paths)))
    if "Megatron" in kind:
        return out, "megatron"
    if kind.startswith("HF") or "HuggingFace" in kind:
        return out, "hf-datasets"  # HFDataLoader: datasets.load_dataset(path): a local path or a Hub dataset name
    if kind in ("MindDataset", "") or "mindrecord" in kind.lower():
        return out, "mindrecord"
    return out, "unknown"


_MC, _PC, _RN, _LRS = ("model", "model_config"), ("parallel_config",), ("runner_config",), ("lr_schedule",)


@dataclass(frozen=True)
class _ByNaming:
    """A default that depends on the naming of the file: legacy (``num_layers``) or mcore (``num_hidden_layers``)."""

    legacy: Any
    mcore: Any


#: what from_mindformers reads beyond the training setup, in the order it reads it: name -> (key paths, the first
#: present wins; the default when none is; how the value reads (see _Reader.val)). The batch, layout, shape,
#: dtypes and device target are the setup's (SHARED), read with MindFormers' aliases by msdoctor.memory.mindformers.
MINDFORMERS_KEYS: dict[str, tuple[tuple[tuple, ...], Any, str]] = {
    "interleave": ((("micro_batch_interleave_num",),), 1, "int"),
    "lr": ((_LRS + ("learning_rate",), ("optimizer", "learning_rate")), None, "num"),
    "use_parallel": ((("use_parallel",),), False, "bool"),
    "parallel_mode": ((("parallel", "parallel_mode"),), 1, "int"),
    "total_steps": ((_LRS + ("total_steps",),), None, "int"),
    "warmup_ratio": ((_LRS + ("warmup_ratio",),), None, "num"),
    "warmup_steps": ((_LRS + ("warmup_steps",),), None, "int"),
    "warmup_epochs": ((_LRS + ("warmup_epochs",),), None, "num"),
    "epochs": ((_RN + ("epochs",),), 1, "int"),
    "lr_scale": ((("lr_scale",),), False, "bool"),
    "lr_scale_factor": ((("lr_scale_factor",),), 256, "num"),
}

#: the key a defaulted setup field is named by in messages when the setup reader names none
_MF_DEFAULT_KEYS = {
    "optimizer": ("optimizer", "type"),
    "device_target": ("context", "device_target"),
    "num_heads": _MC + ("num_heads",),
    "num_kv_heads": _MC + ("n_kv_heads",),
    "num_layers": _MC + ("num_layers",),
}
#: MindFormers' values for setup fields the file leaves unset, where the setup has none: the optimizer
#: (AdamWeightDecay, every shipped config's) and the device (MindFormers' context default: Ascend)
_MF_DEFAULTS = {"optimizer": "AdamWeightDecay", "device_target": "Ascend", "num_heads": 0, "num_layers": 0}


def _shared_mindformers(setup: Any, doc: Document) -> dict[str, Any]:
    """The setup's values with the keys they came from (or would have); the optimizer and an unknown device
    target as written (the rules read their names)."""
    out: dict[str, Any] = {}
    for name, fieldname in SHARED.items():
        value = _setup_value(setup, fieldname)
        o = setup.origin(fieldname)
        if o is not None and fieldname in ("optimizer", "device_target"):
            raw = _get(doc.data, o.keys)[1] if not str(o.keys[0]).startswith("--") else None
            value = raw if raw is not None and (fieldname == "optimizer" or value is None) else value
        if o is not None:
            out[name] = Val(value, o.keys, o.line)
            continue
        keys = setup.default_key(fieldname) or _MF_DEFAULT_KEYS.get(fieldname) or (fieldname,)
        if value is None or fieldname == "optimizer":
            value = _MF_DEFAULTS.get(fieldname)
        out[name] = Val(value, keys, None, False)
    if out["num_kv_heads"].value is None:  # no key-value heads given: as many as attention heads
        out["num_kv_heads"] = Val(out["num_heads"].value, out["num_kv_heads"].keys, None, False)
    if not out["mtp_depth"].given:
        out["mtp_depth"] = None
    return out


#: CheckpointMonitor's keys (under its entry in callbacks): name -> (key, CheckpointMonitor's default, kind)
MINDFORMERS_CHECKPOINT_KEYS: dict[str, tuple[str, Any, str]] = {
    "ckpt_every": ("save_checkpoint_steps", 1, "int"),
    "ckpt_keep": ("keep_checkpoint_max", 5, "int"),
    "network_copy": ("save_network_params", False, "bool"),
    "dedup": ("remove_redundancy", False, "bool"),
    "directory": ("directory", None, "str"),
}

#: values that stay unset (None) in Resolved when the file does not state them
_MINDFORMERS_OPTIONAL = ("total_steps", "warmup_steps", "warmup_ratio", "warmup_epochs")


def _mindformers_values(r: _Reader) -> dict[str, Any]:
    """MINDFORMERS_KEYS read from the file, with the values MindFormers derives when a key is absent."""
    v: dict[str, Any] = {}
    for name, (paths, default, kind) in MINDFORMERS_KEYS.items():
        v[name] = r.val(paths[0], default, kind, alts=paths[1:])
    if v["lr"].value is None:
        v["lr"] = Val(None, MINDFORMERS_KEYS["lr"][0][0], None, False)
    total = v["total_steps"]
    if total.value is not None and total.value <= 0:
        v["total_steps"] = Val(None, total.keys, total.line, False)  # -1: epochs x dataset size
    for name in _MINDFORMERS_OPTIONAL:
        if v[name].value is None:
            v[name] = None
    return v


def _mindformers_checkpoints(r: _Reader) -> dict[str, Optional[Val]]:
    """The CheckpointMonitor callback's values (all None without one)."""
    idx, cb = _callbacks(r.doc)
    if cb is None:
        return dict.fromkeys(MINDFORMERS_CHECKPOINT_KEYS)
    cbk = ("callbacks", idx)
    return {
        name: r.val(cbk + (key,), default, kind) for name, (key, default, kind) in MINDFORMERS_CHECKPOINT_KEYS.items()
    }


def from_mindformers(doc: Document, text: Optional[str] = None, setup: Any = None) -> Resolved:
    """A MindFormers YAML: legacy (``num_layers``, ``param_init_type``) or mcore (``num_hidden_layers``,
    ``params_dtype``) names; the batch, layout, shape and dtypes are ``setup``'s (the TrainingSetup read from the
    same file), the rest MINDFORMERS_KEYS."""
    if setup is None:
        return _setup_of(None, doc, text).run
    r = _Reader(doc)
    directives, dproblems = read_directives(doc.path, text)
    v = _mindformers_values(r)
    v.update(_shared_mindformers(setup, doc))
    use_parallel, pmode = v.pop("use_parallel"), v.pop("parallel_mode")
    off_found, off_raw = _get(doc.data, _MC + ("offset",))
    offset = Val(off_raw, _MC + ("offset",), doc.lines.get(_MC + ("offset",))) if off_found else None
    cb = _mindformers_checkpoints(r)
    directory, keep = cb["directory"], cb["ckpt_keep"]
    out_dir = r.val(("output_dir",), "./output", "str")
    if directory is not None and directory.value:
        ckpt_dir = Val(str(directory.value), directory.keys, directory.line)
    else:
        ckpt_dir = Val(str(Path(str(out_dir.value)) / "checkpoint"), out_dir.keys, out_dir.line, out_dir.given)
    paths, data_kind = _data_paths(r)
    res = Resolved(
        path=doc.path,
        kind="mindformers",
        doc=doc,
        **v,
        offset=offset,
        loss_scale=_loss_scale(r),
        ckpt_keep=keep if keep is not None else Val(0, ("callbacks",), doc.lines.get(("callbacks",)), False),
        ckpt_dir=ckpt_dir,
        base_global_batch=directives.get("base_global_batch"),
        devices=directives.get("devices"),
        ckpt_every=cb["ckpt_every"],
        ckpt_network_copy=bool(cb["network_copy"].value) if cb["network_copy"] is not None else False,
        ckpt_per_rank=True,
        ckpt_dedup=bool(cb["dedup"].value) if cb["dedup"] is not None else False,
        data_paths=paths,
        data_kind=data_kind,
        directives=directives,
        directive_problems=dproblems,
        model_type=str(_get(doc.data, _MC + ("type",))[1] or _get(doc.data, ("model", "arch", "type"))[1] or ""),
    )
    res.finetune = finetune_reason(doc)
    _mindformers_batch(res, use_parallel, pmode)
    for keys, msg, raw in r.problems:
        res.notes.append(f"{'.'.join(str(k) for k in keys)} = {raw!r}: {msg}")
    return res


def finetune_reason(doc: Document) -> str:
    """Why a MindFormers YAML is a finetune run, or "" (pretraining). MindFormers starts a finetune with
    ``run_mode: finetune`` (run_mindformer.py --run_mode, mindformers/trainer/base_trainer.py), from a
    checkpoint (``load_checkpoint`` without ``resume_training``), and names its finetune configs
    ``finetune_*.yaml`` or ``run_<model>_finetune_*.yaml`` (research/*/ and configs/*/ of mindspore-lab/mindformers):
    "finetune" as a word of the file name, run_mode and the checkpoint being empty in those files (filled at launch)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    mode = str(data.get("run_mode") or "").strip().lower()
    if mode == "finetune":
        return f"run_mode: finetune (line {doc.lines.get(('run_mode',))})"
    ckpt = data.get("load_checkpoint")
    if isinstance(ckpt, str) and ckpt.strip() and not PLACEHOLDER_RE.search(ckpt) and not data.get("resume_training"):
        return f"load_checkpoint {ckpt!r} without resume_training (line {doc.lines.get(('load_checkpoint',))})"
    stem = Path(doc.path).stem.lower() if doc.path is not None else ""
    if "finetune" in re.split(r"[^a-z0-9]+", stem):
        return (
            f"the file is named {Path(str(doc.path)).name} (MindFormers names its finetune configs finetune_*.yaml "
            "and run_*_finetune_*.yaml, e.g. configs/glm3/run_glm3_6b_finetune_800T_A2_64G.yaml)"
        )
    return ""


def _mindformers_batch(res: Resolved, use_parallel: Val, pmode: Val) -> None:
    """The parallel mode and the global batch's terms, as MindFormers resolves them (see the module docstring)."""
    mbs, dp, mbn, mbi, ga = (
        res.micro_batch,
        res.data_parallel,
        res.micro_batch_num,
        res.interleave,
        res.grad_accumulation,
    )
    if not use_parallel.value:
        res.mode = "stand_alone"
    elif pmode.value == 0:
        res.mode = "data_parallel"
    if res.mode == "semi_auto":
        if int(res.pipeline_stages.value) > 1:
            res.batch_terms = [mbs, dp, mbn, mbi]
            if int(ga.value) > 1:
                res.notes.append(
                    f"{ga.key} = {ga.value} is reset to 1 by MindFormers with pipeline_stage > 1 "
                    "(the micro_batch_num micro-batches are the accumulation)"
                )
        else:
            res.batch_terms = [mbs, dp, mbi, ga]
    else:
        devices = res.directives.get("devices") or Val(
            1 if res.mode == "stand_alone" else int(dp.value), dp.keys, dp.line, dp.given
        )
        res.batch_terms = [mbs, devices]
        if int(ga.value) > 1:
            why = (
                "use_parallel is false" if res.mode == "stand_alone" else "parallel.parallel_mode is 0 (data parallel)"
            )
            res.notes.append(
                f"{ga.key} = {ga.value} is reset to 1 by MindFormers because {why}: gradient "
                "accumulation needs semi_auto_parallel (parallel_mode: 1)"
            )


def resolve(config: Any, setup: Any = None) -> Resolved:
    """A ``msdoctor.facts.config.ConfigFacts`` (kind msdoctor or mindformers) resolved, with its training setup
    (``msdoctor.domain.training_setup.read(config)`` when not given; that reader calls this one)."""
    if setup is None:
        from msdoctor.domain.training_setup import read

        got = read(config).run
        if got is None:
            raise ValueError(f"{config.path}: not a training YAML whose layout could be read")
        return got  # type: ignore[no-any-return]
    text = None
    try:
        text = config.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    if config.kind == "msdoctor":
        return from_msdoctor(config.run, config.doc, text, setup)
    return from_mindformers(config.doc, text, setup)


def _setup_of(run: Any, doc: Document, text: Optional[str]) -> Any:
    """The training setup of a parsed document (for callers that hold a Document, not a loaded config)."""
    from msdoctor.domain.training_setup import read
    from msdoctor.facts.config import ConfigFacts

    return read(ConfigFacts(doc.path, doc, "msdoctor" if run is not None else "mindformers", run))
