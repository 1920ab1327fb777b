"""The msdoctor training config: typed sections loaded from YAML, validated all at once.

This module is pure Python (no MindSpore import): the memory-fit check and the
train gate read the same model / parallel / train sections that the trainer
runs with. Every key is documented in the dataclass field's ``doc`` metadata;
``msdoctor train --config`` prints the resolved config.

A config file looks like this (see training/configs/*.yaml for complete ones)::

    device_target: CPU          # Ascend | GPU | CPU
    model: {num_layers: 2, hidden_size: 64, num_heads: 4, vocab_size: 256}
    parallel: {data_parallel: 1}
    train: {micro_batch_size: 8, seq_length: 64, max_steps: 200, lr: 3.0e-3}

Validation collects *every* problem (unknown keys with a did-you-mean, wrong
types, impossible values such as tensor parallel not dividing the heads) and
raises one :class:`ConfigError` listing them with file:line.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Optional, Union, get_type_hints

DEVICE_TARGETS = ("Ascend", "GPU", "CPU")
PRECISIONS = ("fp32", "bf16", "fp16")
RECOMPUTE = ("none", "selective", "full")
SHARDING = ("none", "optimizer", "grads", "params")
OPTIMIZERS = ("adamw", "sgd")
ACTIVATIONS = ("swiglu", "gelu")
MODES = ("graph", "pynative")


def _f(default: Any, doc: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"doc": doc, **kw})
    return field(default=default, metadata={"doc": doc, **kw})


@dataclass
class ModelConfig:
    """Decoder-only (Llama-style) transformer shape."""

    vocab_size: int = _f(256, "vocabulary size (256 for the byte tokenizer)")
    num_layers: int = _f(2, "transformer layers")
    hidden_size: int = _f(64, "model width")
    num_heads: int = _f(4, "attention (query) heads")
    num_kv_heads: Optional[int] = _f(None, "key/value heads for grouped-query attention (None: = num_heads)")
    ffn_hidden_size: Optional[int] = _f(
        None, "FFN inner size (None: Llama rule, 2/3 * 4 * hidden rounded up to a multiple of 32)"
    )
    activation: str = _f("swiglu", "FFN activation: swiglu | gelu", choices=ACTIVATIONS)
    tie_embeddings: bool = _f(False, "share the input embedding with the output head")
    bias: bool = _f(False, "biases in linear layers")
    rope_theta: float = _f(10000.0, "rotary embedding base")
    norm_eps: float = _f(1e-5, "RMSNorm epsilon")
    make_vocab_size_divisible_by: int = _f(1, "pad the vocabulary to a multiple of this (x tensor parallel)")
    init_std: float = _f(0.02, "std of the normal weight init")

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def ffn_size(self) -> int:
        if self.ffn_hidden_size:
            return self.ffn_hidden_size
        raw = int(2 * 4 * self.hidden_size / 3)
        return 32 * ((raw + 31) // 32)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def padded_vocab_size(self) -> int:
        """vocab_size rounded up to make_vocab_size_divisible_by (Megatron pads so TP splits it evenly)."""
        step = max(1, self.make_vocab_size_divisible_by)
        return step * ((self.vocab_size + step - 1) // step)


@dataclass
class ParallelConfig:
    """How the devices split the work; data * tensor * pipeline must equal device_num."""

    data_parallel: int = _f(1, "data-parallel replicas (each takes a slice of the global batch)")
    tensor_parallel: int = _f(1, "tensor (model) parallel degree: shards heads and FFN; Ascend/GPU only")
    pipeline_stages: int = _f(1, "pipeline stages: layers are split across them; Ascend/GPU only")
    micro_batch_num: int = _f(1, "micro-batches per step through the pipeline (>= pipeline_stages)")
    virtual_pipeline_chunks: int = _f(1, "interleaved (virtual) pipeline chunks per stage")
    sequence_parallel: bool = _f(False, "shard norm/dropout activations along the sequence (with TP)")
    optimizer_sharding: str = _f(
        "none",
        "ZeRO-style sharding over data parallel: none | optimizer (ZeRO-1, MindSpore parallel "
        "optimizer) | grads (ZeRO-2) | params (ZeRO-3)",
        choices=SHARDING,
    )

    @property
    def world(self) -> int:
        return self.data_parallel * self.tensor_parallel * self.pipeline_stages


@dataclass
class TrainConfig:
    """Optimisation. Steps are OPTIMIZER steps (one per global batch), never micro-steps."""

    micro_batch_size: int = _f(8, "sequences per device per micro-step")
    grad_accumulation: int = _f(1, "micro-steps accumulated per optimizer step")
    seq_length: int = _f(64, "tokens per sequence")
    max_steps: int = _f(200, "optimizer steps to train")
    warmup_steps: int = _f(4, "linear warmup, in optimizer steps")
    lr: float = _f(3e-3, "peak learning rate (scale it with the global batch)")
    min_lr: float = _f(3e-4, "learning rate at the end of the cosine decay")
    base_global_batch: Optional[int] = _f(
        None, "global batch the lr was tuned for; lr is expected to scale linearly from it"
    )
    weight_decay: float = _f(0.1, "AdamW decoupled weight decay")
    beta1: float = _f(0.9, "Adam beta1")
    beta2: float = _f(0.95, "Adam beta2")
    eps: float = _f(1e-8, "Adam epsilon")
    grad_clip: float = _f(1.0, "clip the global gradient norm to this (0: off)")
    optimizer: str = _f("adamw", "adamw | sgd (momentum)", choices=OPTIMIZERS)
    precision: str = _f(
        "fp32", "compute dtype: fp32 | bf16 | fp16 (fp32 master weights are kept for bf16/fp16)", choices=PRECISIONS
    )
    param_dtype: str = _f(
        "fp32", "dtype of the stored weights: fp32, or fp16/bf16 with no master copy", choices=PRECISIONS
    )
    loss_scale: str = _f("dynamic", "fp16 loss scaling: dynamic | static | none", choices=("dynamic", "static", "none"))
    loss_scale_init: float = _f(65536.0, "initial fp16 loss scale (2^16); dynamic scaling halves it on overflow")
    loss_scale_window: int = _f(1000, "dynamic scaling doubles the scale after this many finite steps")
    half_on_cpu: bool = _f(
        False,
        "run train.precision on CPU anyway (fp16: 2-3x slower than fp32, exercises loss scaling; bf16: "
        "fails, MindSpore 2.7 has no bf16 CPU kernels). Default: CPU runs fp32",
    )
    recompute: str = _f("none", "activation recompute: none | selective | full", choices=RECOMPUTE)
    flash_attention: bool = _f(False, "fused flash attention (Ascend); the CPU path uses plain attention")
    mode: str = _f("graph", "MindSpore execution mode: graph (fast) | pynative (eager)", choices=MODES)
    seed: int = _f(1234, "seed of weights, data order and dropout")

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.micro_batch_size * self.seq_length


@dataclass
class DataConfig:
    """Training text and tokenizer."""

    paths: list = _f([], "glob(s) of UTF-8 text files (empty: the Python standard library's own sources)")
    tokenizer: str = _f("byte", "byte (no download) or the path of a local tokenizer.json")
    max_files: int = _f(400, "read at most this many files from the globs")
    cache_dir: Optional[str] = _f(
        None, "where token files are cached (default: $XDG_CACHE_HOME/msdoctor/tokens, else ~/.cache/...)"
    )
    val_fraction: float = _f(0.02, "share of tokens held out for evaluation")


@dataclass
class CheckpointConfig:
    """Checkpoints "often but few": every N optimizer steps, keep the last K."""

    every_steps: int = _f(50, "save every N optimizer steps (0: only at the end and on SIGTERM)")
    keep_last: int = _f(3, "keep the newest K complete checkpoints")
    save_on_exit: bool = _f(True, "save one on SIGTERM/SIGINT and at the end")


@dataclass
class LoggingConfig:
    every_steps: int = _f(10, "log every N optimizer steps")
    tensorboard: bool = _f(True, "write TensorBoard events when tensorboardX is installed")
    eval_every_steps: int = _f(0, "evaluate on held-out tokens every N steps (0: off)")


@dataclass
class RuntimeConfig:
    """Where and on what the run happens."""

    device_target: str = _f("CPU", "Ascend | GPU | CPU", choices=DEVICE_TARGETS)
    device_num: int = _f(1, "devices in the job (= data * tensor * pipeline parallel)")
    device_memory: Optional[str] = _f(None, "usable memory per device, e.g. '58GB' (MindSpore max_device_memory)")
    device_peak_tflops: Optional[float] = _f(None, "peak dense TFLOP/s per device for the MFU estimate")
    output_dir: Optional[str] = _f(None, "run directory (default: runs/<config name>)")
    master_port: int = _f(18118, "msrun master port (msrun's default 8118 collides with its workers)")
    master_addr: str = _f("127.0.0.1", "msrun master address (the node of rank 0)")
    num_nodes: int = _f(1, "nodes in the job; each runs device_num / num_nodes workers")
    node_rank: int = _f(0, "this node's index (0 .. num_nodes - 1); msrun --node_rank")
    cluster_time_out: int = _f(300, "seconds msrun waits for every worker to join (msrun --cluster_time_out)")


@dataclass
class RunConfig:
    """A whole training config file."""

    name: str = _f("run", "name of the run (default: the file name)")
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig, metadata={"doc": "device and run directory"})
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"doc": "model shape"})
    parallel: ParallelConfig = field(default_factory=ParallelConfig, metadata={"doc": "parallel layout"})
    train: TrainConfig = field(default_factory=TrainConfig, metadata={"doc": "optimisation"})
    data: DataConfig = field(default_factory=DataConfig, metadata={"doc": "data"})
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig, metadata={"doc": "checkpoints"})
    logging: LoggingConfig = field(default_factory=LoggingConfig, metadata={"doc": "logs"})

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step over all data-parallel replicas."""
        return self.train.micro_batch_size * self.parallel.data_parallel * self.train.grad_accumulation

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.train.seq_length


# top-level shortcuts people write in MindFormers style, mapped into their section
TOP_LEVEL_ALIASES = {
    "device_target": ("runtime", "device_target"),
    "device_num": ("runtime", "device_num"),
    "output_dir": ("runtime", "output_dir"),
    "seed": ("train", "seed"),
}


@dataclass
class Problem:
    """One thing wrong with a config: where, what value, why, and how to fix it."""

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


def _type_ok(value: Any, hint: Any) -> tuple[bool, Any]:
    """Check/convert a YAML value against a field type; returns (ok, converted)."""
    origin = getattr(hint, "__origin__", None)
    args = getattr(hint, "__args__", ())
    if origin is Union:
        if value is None and type(None) in args:
            return True, None
        for a in args:
            if a is type(None):
                continue
            ok, conv = _type_ok(value, a)
            if ok:
                return True, conv
        return False, value
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        if isinstance(value, bool):
            return False, value
        if isinstance(value, (int, float)):
            return True, float(value)
        if isinstance(value, str):  # YAML 1.1 reads "3e-4" as a string
            try:
                return True, float(value)
            except ValueError:
                return False, value
        return False, value
    if hint is str:
        return isinstance(value, str), value
    if hint is list or origin is list:
        if isinstance(value, str):
            return True, [value]
        return isinstance(value, list), value
    return True, value


def _build_section(cls: type, raw: Any, prefix: tuple, problems: list[Problem], lines: dict) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.append(
            Problem(prefix, f"must be a mapping of keys, got {type(raw).__name__}", None, lines.get(prefix))
        )
        return cls()
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    for key, value in raw.items():
        keys = prefix + (key,)
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(known))}"
            problems.append(Problem(keys, "unknown key" + hint, None, lines.get(keys)))
            continue
        f = known[key]
        ok, conv = _type_ok(value, hints[key])
        if not ok:
            problems.append(Problem(keys, f"expected {_type_name(hints[key])}", value, lines.get(keys)))
            continue
        if isinstance(conv, float) and not math.isfinite(conv):  # YAML .nan / .inf, or "nan" as a string
            problems.append(Problem(keys, "must be a finite number", value, lines.get(keys)))
            continue
        choices = f.metadata.get("choices")
        if choices and conv is not None:
            match = [c for c in choices if str(c).lower() == str(conv).lower()]
            if not match:
                problems.append(Problem(keys, f"must be one of {', '.join(choices)}", value, lines.get(keys)))
                continue
            conv = match[0]
        kwargs[key] = conv
    return cls(**kwargs)


def _type_name(hint: Any) -> str:
    args = [a for a in getattr(hint, "__args__", ()) if a is not type(None)]
    if args:
        return " or ".join(_type_name(a) for a in args) + " (or null)"
    return getattr(hint, "__name__", str(hint))


def from_dict(
    raw: Any, lines: Optional[dict] = None, path: Optional[Path] = None, *, validate_values: bool = True
) -> RunConfig:
    """Build and validate a RunConfig from parsed YAML; raises ConfigError listing every problem."""
    lines = lines or {}
    problems: list[Problem] = []
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(path, [Problem((), f"the file must be a mapping of sections, got {type(raw).__name__}")])
    raw = dict(raw)
    sections: dict[str, dict] = {}
    for key, (section, sub) in TOP_LEVEL_ALIASES.items():
        if key in raw:
            sections.setdefault(section, {})[sub] = raw.pop(key)
            lines.setdefault((section, sub), lines.get((key,)))
    name = raw.pop("name", None)
    section_fields = {f.name: f for f in fields(RunConfig) if f.name != "name"}
    built: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in section_fields:
            close = difflib.get_close_matches(str(key), list(section_fields) + list(TOP_LEVEL_ALIASES), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; sections are: {', '.join(section_fields)}"
            problems.append(Problem((key,), "unknown key" + hint, None, lines.get((key,))))
            continue
        merged = dict(sections.pop(key, {}))
        if isinstance(value, dict):
            merged.update(value)
        elif value is not None:
            problems.append(Problem((key,), "must be a mapping of keys", value, lines.get((key,))))
            continue
        cls: Any = section_fields[key].default_factory
        built[key] = _build_section(cls, merged, (key,), problems, lines)
    for key, merged in sections.items():
        cls = section_fields[key].default_factory
        built[key] = _build_section(cls, merged, (key,), problems, lines)
    cfg = RunConfig(name=str(name) if name else (path.stem if path else "run"), **built)
    if validate_values:
        problems.extend(validate(cfg, lines))
    if problems:
        raise ConfigError(path, problems)
    return cfg


#: one problem before it knows its line: (keys, message, value)
_Issue = tuple[tuple, str, Any]


def validate(cfg: RunConfig, lines: Optional[dict] = None) -> list[Problem]:
    """Impossible values, each pointing at its key."""
    lines = lines or {}
    why = host_problem(str(cfg.runtime.master_addr))
    issues = _name_issues(cfg) + ([(("runtime", "master_addr"), why, cfg.runtime.master_addr)] if why else [])
    issues += _not_positive(cfg)
    if not issues:  # the rules below assume positive sizes
        issues = _shape_issues(cfg) + _optimizer_issues(cfg) + _run_issues(cfg)
    return [Problem(keys, msg, value, lines.get(keys)) for keys, msg, value in issues]


def _name_issues(cfg: RunConfig) -> list[_Issue]:
    """The name is one directory name under runs/: ``..``, an absolute path or a separator would put the run
    directory (and the files it replaces: config.yaml, metrics.csv, ...) somewhere else, the project itself."""
    name = cfg.name
    bad = (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or os.path.isabs(name)
        or len(name.encode("utf-8", "surrogateescape")) > 255
        or any(ord(c) < 32 for c in name)
    )
    if not bad:
        return []
    return [
        (
            ("name",),
            "must be one plain directory name (letters, digits, '-', '_', '.'; no '/', no '..', not "
            "absolute): the run directory is runs/<name>; to write elsewhere set runtime.output_dir",
            name,
        )
    ]


def host_problem(addr: str) -> Optional[str]:
    """Why ``addr`` cannot be a host name or an IP address, or None. A DNS name is at most 253 characters in
    labels of at most 63 (RFC 1035 section 2.3.4); a longer one fails in IDNA encoding ('label too long')."""
    if not addr or len(addr) > 253:
        return "must be a host name or an IP address of at most 253 characters"
    if any(c.isspace() or ord(c) < 32 or c in "/@?#" for c in addr):
        return "must be a host name or an IP address (no spaces, '/', '@', '?' or '#')"
    if ":" not in addr and any(len(label) > 63 or not label for label in addr.rstrip(".").split(".")):
        return "each dot-separated part of a host name is 1 to 63 characters (RFC 1035)"
    return None


def _not_positive(cfg: RunConfig) -> list[_Issue]:
    """Sizes and counts that must be positive integers."""
    m, p, t, rt = cfg.model, cfg.parallel, cfg.train, cfg.runtime
    positive = [
        (("model", "vocab_size"), m.vocab_size),
        (("model", "num_layers"), m.num_layers),
        (("model", "hidden_size"), m.hidden_size),
        (("model", "num_heads"), m.num_heads),
        (("parallel", "data_parallel"), p.data_parallel),
        (("parallel", "tensor_parallel"), p.tensor_parallel),
        (("parallel", "pipeline_stages"), p.pipeline_stages),
        (("parallel", "micro_batch_num"), p.micro_batch_num),
        (("parallel", "virtual_pipeline_chunks"), p.virtual_pipeline_chunks),
        (("train", "micro_batch_size"), t.micro_batch_size),
        (("train", "grad_accumulation"), t.grad_accumulation),
        (("train", "seq_length"), t.seq_length),
        (("train", "max_steps"), t.max_steps),
        (("runtime", "device_num"), rt.device_num),
    ]
    return [(keys, "must be a positive integer", value) for keys, value in positive if value is None or value < 1]


def _shape_issues(cfg: RunConfig) -> list[_Issue]:
    """Heads, layers and devices that the parallel layout must divide."""
    m, p, rt = cfg.model, cfg.parallel, cfg.runtime
    out: list[_Issue] = []
    if m.num_kv_heads is not None and (m.num_kv_heads < 1 or m.num_heads % m.num_kv_heads):
        out.append((("model", "num_kv_heads"), f"must divide num_heads ({m.num_heads})", m.num_kv_heads))
    if m.hidden_size % m.num_heads:
        out.append((("model", "hidden_size"), f"must be divisible by num_heads ({m.num_heads})", m.hidden_size))
    elif (m.hidden_size // m.num_heads) % 2:
        out.append(
            (("model", "hidden_size"), "hidden_size / num_heads must be even for rotary embeddings", m.hidden_size)
        )
    if m.num_heads % p.tensor_parallel:
        out.append((("parallel", "tensor_parallel"), f"must divide num_heads ({m.num_heads})", p.tensor_parallel))
    if m.kv_heads % p.tensor_parallel:
        out.append((("parallel", "tensor_parallel"), f"must divide the KV heads ({m.kv_heads})", p.tensor_parallel))
    if m.num_layers % (p.pipeline_stages * p.virtual_pipeline_chunks):
        out.append(
            (
                ("parallel", "pipeline_stages"),
                f"pipeline_stages x virtual_pipeline_chunks must divide num_layers ({m.num_layers})",
                p.pipeline_stages,
            )
        )
    if p.pipeline_stages > 1 and p.micro_batch_num < p.pipeline_stages:
        out.append(
            (("parallel", "micro_batch_num"), f"must be >= pipeline_stages ({p.pipeline_stages})", p.micro_batch_num)
        )
    if p.world != rt.device_num:
        out.append(
            (
                ("runtime", "device_num"),
                f"data_parallel x tensor_parallel x pipeline_stages = {p.data_parallel} x {p.tensor_parallel} x "
                f"{p.pipeline_stages} = {p.world}, not {rt.device_num}",
                rt.device_num,
            )
        )
    if p.sequence_parallel and p.tensor_parallel == 1:
        out.append((("parallel", "sequence_parallel"), "needs tensor_parallel > 1", True))
    return out


def _optimizer_issues(cfg: RunConfig) -> list[_Issue]:
    """The schedule, the optimizer's and the model's numeric settings: beyond these the optimizer diverges or
    the model is undefined."""
    m, t, rt = cfg.model, cfg.train, cfg.runtime
    out: list[_Issue] = []
    if t.warmup_steps < 0 or t.warmup_steps >= t.max_steps:
        out.append((("train", "warmup_steps"), f"must be >= 0 and < max_steps ({t.max_steps})", t.warmup_steps))
    if t.lr <= 0:
        out.append((("train", "lr"), "must be > 0", t.lr))
    elif t.min_lr < 0 or t.min_lr > t.lr:
        out.append((("train", "min_lr"), f"need 0 <= min_lr <= lr ({t.lr})", t.min_lr))
    ranges: list[tuple[tuple[str, str], Any, bool, str]] = [  # (keys, value, ok, the rule)
        (("train", "weight_decay"), t.weight_decay, t.weight_decay >= 0, "must be >= 0"),
        (("train", "beta1"), t.beta1, 0 <= t.beta1 < 1, "must be in [0, 1)"),
        (("train", "beta2"), t.beta2, 0 <= t.beta2 < 1, "must be in [0, 1)"),
        (("train", "eps"), t.eps, t.eps > 0, "must be > 0"),
        (("train", "grad_clip"), t.grad_clip, t.grad_clip >= 0, "must be >= 0 (0: off)"),
        (("model", "rope_theta"), m.rope_theta, m.rope_theta > 0, "must be > 0"),
        (("model", "norm_eps"), m.norm_eps, m.norm_eps > 0, "must be > 0"),
        (("model", "init_std"), m.init_std, m.init_std > 0, "must be > 0"),
        (("data", "val_fraction"), cfg.data.val_fraction, 0 <= cfg.data.val_fraction < 1, "must be in [0, 1)"),
        (
            ("runtime", "device_peak_tflops"),
            rt.device_peak_tflops,
            rt.device_peak_tflops is None or rt.device_peak_tflops > 0,
            "must be > 0 (or null)",
        ),
    ]
    return out + [(keys, rule, value) for keys, value, ok, rule in ranges if not ok]


def _run_issues(cfg: RunConfig) -> list[_Issue]:
    """The vocabulary, checkpoints, nodes, tied embeddings and loss scaling."""
    m, p, t, rt, c = cfg.model, cfg.parallel, cfg.train, cfg.runtime, cfg.checkpoint
    out: list[_Issue] = []
    if t.seq_length > 0 and m.vocab_size < 2:
        out.append((("model", "vocab_size"), "must be at least 2", m.vocab_size))
    if c.keep_last < 1:
        out.append((("checkpoint", "keep_last"), "must be >= 1", c.keep_last))
    if c.every_steps < 0:
        out.append((("checkpoint", "every_steps"), "must be >= 0", c.every_steps))
    if rt.num_nodes < 1 or rt.device_num % rt.num_nodes:
        out.append((("runtime", "num_nodes"), f"must be >= 1 and divide device_num ({rt.device_num})", rt.num_nodes))
    elif not 0 <= rt.node_rank < rt.num_nodes:
        out.append((("runtime", "node_rank"), f"must be in 0 .. {rt.num_nodes - 1}", rt.node_rank))
    if m.tie_embeddings and p.pipeline_stages > 1:
        out.append(
            (
                ("model", "tie_embeddings"),
                "the embedding (first stage) and the head (last stage) cannot share "
                "weights across pipeline stages in this trainer; set it to false",
                True,
            )
        )
    if t.loss_scale_init <= 0 or t.loss_scale_window < 1:
        out.append(
            (("train", "loss_scale_init"), "needs loss_scale_init > 0 and loss_scale_window >= 1", t.loss_scale_init)
        )
    return out


def warnings(cfg: RunConfig) -> list[str]:
    """Things that run but are probably not what was meant (the seed's pitfalls)."""
    out = []
    t = cfg.train
    share = t.warmup_steps / t.max_steps if t.max_steps else 0.0
    if t.max_steps >= 100 and not (0.01 <= share <= 0.03):
        out.append(
            f"train.warmup_steps = {t.warmup_steps} is {share:.1%} of max_steps = {t.max_steps} optimizer steps; "
            "1-3% is usual. Warmup counts optimizer steps, not micro-steps: with grad_accumulation = "
            f"{t.grad_accumulation} a warmup meant in micro-steps is {t.grad_accumulation}x too long."
        )
    if t.base_global_batch and t.base_global_batch != cfg.global_batch:
        # the same rules as the training-config check: square root for Adam (arXiv:2205.10287), linear for SGD
        ratio = cfg.global_batch / t.base_global_batch
        scale, rule = (ratio**0.5, "square-root rule for AdamW") if t.optimizer == "adamw" else (ratio, "linear rule")
        out.append(
            f"global batch is {cfg.global_batch} (micro_batch_size {t.micro_batch_size} x data_parallel "
            f"{cfg.parallel.data_parallel} x grad_accumulation {t.grad_accumulation}) but the lr was tuned "
            f"for {t.base_global_batch}: scale lr by {scale:.3g} ({rule}) to {t.lr * scale:.3g}"
        )
    if cfg.runtime.device_target == "CPU" and t.precision != "fp32":
        out.append(
            f"train.precision = {t.precision} on CPU: bf16 has no CPU kernels and fp16 is slower than fp32 "
            "on CPU in MindSpore 2.7; the trainer will run fp32"
        )
    return out


def describe() -> list[tuple[str, str, Any]]:
    """(key, doc, default) for every key, for documentation."""
    out = []
    for f in fields(RunConfig):
        if f.name == "name":
            out.append(("name", f.metadata["doc"], f.default))
            continue
        for sub in fields(f.default_factory):  # type: ignore[arg-type]
            factory: Any = sub.default_factory
            default = sub.default if sub.default is not dataclasses.MISSING else factory()
            out.append((f"{f.name}.{sub.name}", sub.metadata.get("doc", ""), default))
    return out


def to_dict(cfg: RunConfig) -> dict:
    return dataclasses.asdict(cfg)
