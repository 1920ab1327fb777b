"""msdoctor's own training config (``msdoctor.training.config.RunConfig``) as a memory Source."""

from __future__ import annotations

from typing import Any, Optional

from msdoctor.docfile import Document
from msdoctor.memory.reader import Partial, SourceError
from msdoctor.memory.source import DeviceCap, Source
from msdoctor.memory.spec import ModelShape, Setup
from msdoctor.memory.units import SizeError, parse_size
from msdoctor.domain.problems import Problem

MSDOCTOR_ORIGINS = {
    "num_layers": ("model", "num_layers"),
    "hidden_size": ("model", "hidden_size"),
    "num_heads": ("model", "num_heads"),
    "num_kv_heads": ("model", "num_kv_heads"),
    "vocab_size": ("model", "vocab_size"),
    "ffn_size": ("model", "ffn_hidden_size"),
    "seq_length": ("train", "seq_length"),
    "micro_batch_size": ("train", "micro_batch_size"),
    "grad_accumulation": ("train", "grad_accumulation"),
    "data_parallel": ("parallel", "data_parallel"),
    "tensor_parallel": ("parallel", "tensor_parallel"),
    "pipeline_stages": ("parallel", "pipeline_stages"),
    "micro_batch_num": ("parallel", "micro_batch_num"),
    "virtual_pipeline_chunks": ("parallel", "virtual_pipeline_chunks"),
    "sequence_parallel": ("parallel", "sequence_parallel"),
    "optimizer_sharding": ("parallel", "optimizer_sharding"),
    "precision": ("train", "precision"),
    "param_dtype": ("train", "param_dtype"),
    "recompute": ("train", "recompute"),
    "flash_attention": ("train", "flash_attention"),
    "device_target": ("runtime", "device_target"),
    "devices": ("runtime", "device_num"),
    "optimizer": ("train", "optimizer"),
    "device_memory": ("runtime", "device_memory"),
}


def from_run_config(run: Any, doc: Optional[Document] = None) -> Source:
    """msdoctor's own training config (a validated ``msdoctor.training.config.RunConfig``).

    The mapping is one to one (see the msdoctor.memory module docstring); framework
    conventions are MindSpore's, the trainer's attention on CPU is plain attention.
    """
    m, p, t, rt = run.model, run.parallel, run.train, run.runtime
    notes = []
    precision = t.precision
    if rt.device_target == "CPU" and precision != "fp32" and not getattr(t, "half_on_cpu", False):
        precision = "fp32"  # the trainer runs fp32 on CPU (training.config.warnings)
        notes.append(f"train.precision = {t.precision} runs as fp32 on CPU: activations counted at 4 bytes")
    model = ModelShape(
        num_layers=m.num_layers,
        hidden_size=m.hidden_size,
        num_heads=m.num_heads,
        vocab_size=m.vocab_size,
        num_kv_heads=m.num_kv_heads,
        ffn_size=m.ffn_size,
        activation=m.activation,
        tie_embeddings=m.tie_embeddings,
        bias=m.bias,
        norm="rmsnorm",
        vocab_multiple=max(1, m.make_vocab_size_divisible_by),
    )
    setup = Setup(
        seq_length=t.seq_length,
        micro_batch_size=t.micro_batch_size,
        grad_accumulation=t.grad_accumulation,
        data_parallel=p.data_parallel,
        tensor_parallel=p.tensor_parallel,
        pipeline_stages=p.pipeline_stages,
        micro_batch_num=p.micro_batch_num,
        virtual_pipeline_chunks=p.virtual_pipeline_chunks,
        sequence_parallel=p.sequence_parallel,
        optimizer_sharding=p.optimizer_sharding,
        precision=precision,
        param_dtype=t.param_dtype,
        optimizer=t.optimizer,
        recompute=t.recompute,
        flash_attention=t.flash_attention and rt.device_target != "CPU",
        framework="mindspore",
    )
    if t.flash_attention and rt.device_target == "CPU":
        notes.append("train.flash_attention is ignored on CPU (the CPU path uses plain attention)")
    lines = dict(doc.lines) if doc is not None else {}
    cap = None
    if rt.device_memory:
        keys = ("runtime", "device_memory")
        try:
            cap = DeviceCap(
                parse_size(rt.device_memory, gb_is_gib=True),
                str(rt.device_memory),
                "runtime.device_memory",
                lines.get(keys),
            )
        except SizeError as exc:
            raise SourceError(
                doc.path if doc else None,
                [Problem(keys, str(exc), None, lines.get(keys))],
                Partial(setup, rt.device_target, rt.device_num, dict(MSDOCTOR_ORIGINS), {}, lines, notes),
            ) from None
    return Source(
        doc.path if doc else None,
        "msdoctor",
        model,
        setup,
        rt.device_target,
        cap,
        rt.device_num,
        dict(MSDOCTOR_ORIGINS),
        [],
        [],
        notes,
        lines,
    )
