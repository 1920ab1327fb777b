"""Training memory per device: a pure estimator, its config sources, and the fit verdict.

Public API::

    from msdoctor.memory import ModelShape, Setup, Device, estimate, search
    est = estimate(ModelShape(32, 4096, 32, 32000, ffn_size=11008),
                   Setup(4096, data_parallel=8, optimizer_sharding="optimizer"),
                   Device("Ascend", capacity=58 * GIB))
    est.total, est.verdict, [(c.label, c.bytes, c.why) for c in est.components]
    search(model, setup, device)      # -> [Suggestion(changes, setup, total, verdict)]

    from msdoctor.memory import load_source, make_plan
    plan = make_plan(load_source("train.yaml"), ctx)   # a config file -> estimate + suggestions
    est.model_states     # weights + gradients + master + optimizer states + accumulation buffer

``msdoctor memory --config FILE`` and the ``memory-fit`` check are thin layers on these.
Formulas and their public sources: the module docstrings of msdoctor.memory.estimator
(formulas), .capacity (what is compared against), .search (suggestions and their costs),
.reference (Megatron, Korthikanti, ZeRO, DeepSpeed and accelerate cross-checks); config
readers: .mindformers, .hf, .runconfig with their key tables in .keys.

Reading a MindFormers YAML (what ``trainconf`` and other callers need)::

    from msdoctor.memory import load_source, total_params
    src = load_source("finetune_qwen2_5_7b_8k.yaml")          # or load_source(path, Overrides(...))
    src.model            # ModelShape: layers, hidden, heads, kv heads, ffn, vocab, tie, bias, ...
    src.setup            # Setup: data/tensor/pipeline/context parallel, micro_batch_num, seq_split_num,
                         #        precision, param_dtype, optimizer_sharding, recompute per stage, ...
    total_params(src.model)                                    # parameters (vocabulary as configured)
    msdoctor.memory.keys.MF_MODEL_INTS / MF_PARALLEL_INTS       # which YAML keys feed which field

How an msdoctor training config is estimated (for sizing training/configs/*.yaml)
---------------------------------------------------------------------------------
The sections map one to one: ``model.*`` is the shape (RMSNorm, no dropout, vocab padded
to ``make_vocab_size_divisible_by`` x TP), ``parallel.*`` the layout, ``train.*`` batch,
precision, optimizer, recompute and flash attention (ignored on CPU), ``runtime.*`` the
device. MindSpore conventions apply (``framework="mindspore"``):

* weights are stored in ``train.param_dtype`` and double as the optimizer's master
  copy: fp32 weights cost 4 (weights) + 4 (grads) + 8 (AdamW m, v in fp32) = 16 B/param
  whatever ``train.precision`` is; fp16/bf16 weights cost 2 + 2 + 8 = 12 B/param
  (SGD momentum: 4 instead of Adam's 8). ``train.precision`` only sets the
  activation width (2 B for bf16/fp16, 4 B for fp32; fp32 on CPU unless
  ``train.half_on_cpu``, as the trainer runs).
* ``grad_accumulation > 1`` or ``pipeline_stages > 1`` adds one weight-sized
  accumulation buffer (MindSpore's ``accu_grads``).
* ``parallel.optimizer_sharding`` over d = data_parallel devices: ``optimizer`` (MindSpore
  parallel optimizer, level1) stores weights / d, gradients / d (reduce-scattered) and
  optimizer states / d, but keeps the all-gathered weights (in the compute dtype when fp32
  weights are cast) from forward to backward; ``grads`` (level2) also shards the
  accumulation buffer; ``params`` (level3) keeps only two gathered layers at a time.
* activations: see msdoctor.memory.estimator (Korthikanti et al. per-layer terms with
  GQA / SwiGLU); ``train.recompute: full`` keeps 2*s*b*h per layer plus one layer's
  working set while it is recomputed; ``selective`` drops the attention core and the FFN
  activation (plus the same one-layer working set); the last
  stage adds (2 + 4)*s*b*V/t bytes of logits and fp32 softmax.
* capacity: ``runtime.device_memory`` (MindSpore max_device_memory semantics: "58GB" is
  58 GiB) is compared against with no runtime reserve; without it, the device that
  ``npu-smi`` / ``nvidia-smi`` reports minus 4.5 GiB (Ascend) / 2 GiB (GPU), or the
  available RAM on CPU (shared by ``runtime.device_num`` workers); +5% fragmentation
  on the allocated bytes. "tight" is under 10% headroom. Set ``runtime.device_memory``
  to make the memory-fit check decisive on machines without the devices.

Worked example: Llama-2-7B shape (P = 6.74e9, V = 32000), seq 4096, micro-batch 1, 8 x 910B
(``device_memory: 58GB``), bf16 compute, fp32 weights, optimizer_sharding optimizer, flash
attention, recompute full: weights 3.1 GiB + the all-gathered bf16 copy of the weights 12.6 +
gradients 3.1 + Adam 6.3, activations, recompute working set and logits 2.3, fragmentation 1.4:
28.7 GiB of 58, it fits. Without recompute the activations add ~15 GiB (44.1 GiB: fits).
``msdoctor memory --config FILE -v`` prints every term with its formula.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Exported lazily (PEP 562): the package imports none of its submodules. Checks import them from the runner's
# threads, and an __init__ that imported every sibling let two threads making first imports of
# msdoctor.memory.plan and msdoctor.memory.validate deadlock on each other's module locks (_DeadlockError in every
# run of `msdoctor check --quick --config training/configs/tiny-cpu-2nodes.yaml`; tests/test_import_threads.py).
# No submodule shares a name with an export, so importing a submodule never shadows one.
_WHERE = {
    "Detected": "capacity",
    "detect": "capacity",
    "make_device": "capacity",
    "estimate": "estimator",
    "layer_activation": "estimator",
    "layer_params": "estimator",
    "total_params": "estimator",
    "Plan": "plan",
    "make_plan": "plan",
    "Change": "suggest",
    "Suggestion": "suggest",
    "search": "suggest",
    "DeviceCap": "sources",
    "Overrides": "sources",
    "Source": "sources",
    "apply_overrides": "sources",
    "from_hf": "sources",
    "from_mindformers": "sources",
    "from_run_config": "sources",
    "TIGHT_HEADROOM": "spec",
    "Component": "spec",
    "Device": "spec",
    "Estimate": "spec",
    "ModelShape": "spec",
    "Setup": "spec",
    "verdict_of": "spec",
    "GIB": "units",
    "SizeError": "units",
    "fmt_gib": "units",
    "parse_size": "units",
}


def __getattr__(name: str) -> Any:
    if name == "load_source":
        return import_module("msdoctor.memory.sources").load
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'msdoctor.memory' has no attribute {name!r}")
    return getattr(import_module(f"msdoctor.memory.{where}"), name)


if TYPE_CHECKING:
    from msdoctor.memory.capacity import Detected, detect, make_device
    from msdoctor.memory.estimator import estimate, layer_activation, layer_params, total_params
    from msdoctor.memory.plan import Plan, make_plan
    from msdoctor.memory.sources import DeviceCap, Overrides, Source, apply_overrides, from_hf, from_mindformers
    from msdoctor.memory.sources import from_run_config
    from msdoctor.memory.sources import load as load_source
    from msdoctor.memory.spec import TIGHT_HEADROOM, Component, Device, Estimate, ModelShape, Setup, verdict_of
    from msdoctor.memory.suggest import Change, Suggestion, search
    from msdoctor.memory.units import GIB, SizeError, fmt_gib, parse_size

__all__ = [
    "GIB",
    "TIGHT_HEADROOM",
    "Change",
    "Component",
    "Detected",
    "Device",
    "DeviceCap",
    "Estimate",
    "ModelShape",
    "Overrides",
    "Plan",
    "Setup",
    "SizeError",
    "Source",
    "Suggestion",
    "apply_overrides",
    "detect",
    "estimate",
    "fmt_gib",
    "from_hf",
    "from_mindformers",
    "from_run_config",
    "layer_activation",
    "layer_params",
    "load_source",
    "make_device",
    "make_plan",
    "parse_size",
    "search",
    "total_params",
    "verdict_of",
]
