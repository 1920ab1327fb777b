"""``msdoctor memory``: will this training config fit in device memory, and what is the smallest change that does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import click

from msdoctor import options
from msdoctor.errors import UserError

_POS = click.IntRange(min=1)
RECOMPUTE_CHOICES = ["none", "selective", "selective-attention", "selective-ffn", "full"]


@click.command("memory")
@click.option(
    "--config",
    "config",
    required=True,
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Training config: msdoctor YAML, MindFormers YAML, or a Hugging Face config.json.",
)
@click.option(
    "--device-memory",
    metavar="SIZE",
    help="Memory per device to plan for, e.g. 64GiB or 80GB (default: what npu-smi / nvidia-smi report).",
)
@click.option("--devices", type=_POS, metavar="N", help="Devices to plan for (data parallel follows).")
@options.device_target("Device the run uses (default: from the config, else what is here).")
@click.option("--seq-length", type=_POS, metavar="N", help="Tokens per sequence.")
@click.option("--micro-batch-size", type=_POS, metavar="N", help="Sequences per device per micro-step.")
@click.option("--grad-accumulation", type=_POS, metavar="N", help="Micro-steps per optimizer step.")
@click.option("--data-parallel", type=_POS, metavar="N", help="Data-parallel replicas (MindFormers data_parallel).")
@click.option("--tensor-parallel", type=_POS, metavar="N", help="Tensor-parallel ranks (MindFormers model_parallel).")
@click.option("--pipeline-stages", type=_POS, metavar="N", help="Pipeline stages (MindFormers pipeline_stage).")
@click.option("--micro-batch-num", type=_POS, metavar="N", help="Micro-batches per step through the pipeline.")
@click.option(
    "--expert-parallel",
    type=_POS,
    metavar="N",
    help="Expert-parallel ranks: a mixture-of-experts model's experts split over N of the data-parallel "
    "devices (MindFormers expert_parallel).",
)
@click.option(
    "--stage-offsets",
    metavar="LIST",
    help="MindFormers model_config.offset: extra layers per pipeline stage, comma-separated "
    "(--stage-offsets=-1,0,0,1); what places uneven layers, e.g. from a config.json.",
)
@click.option(
    "--sequence-parallel/--no-sequence-parallel",
    default=None,
    help="Shard the norm and dropout activations over the tensor-parallel ranks.",
)
@click.option(
    "--flash-attention/--no-flash-attention",
    default=None,
    help="Fused attention (no materialised scores); --no-flash-attention counts the s x s scores.",
)
@click.option("--dropout/--no-dropout", default=None, help="Hidden and attention dropout on (1-byte masks kept).")
@click.option(
    "--recompute",
    type=click.Choice(RECOMPUTE_CHOICES),
    help="selective-attention: the attention core only (Megatron, Korthikanti et al.); selective-ffn: "
    "also the FFN activation (MindFormers select_recompute: True); selective: the config's own "
    "convention (MindFormers / msdoctor: selective-ffn).",
)
@click.option(
    "--optimizer-sharding",
    type=click.Choice(["none", "optimizer", "grads", "params"]),
    help="ZeRO-1/2/3, MindSpore parallel optimizer level1/2/3.",
)
@click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16"]), help="Compute (activation) dtype.")
@click.option("--param-dtype", type=click.Choice(["fp32", "bf16", "fp16"]), help="Dtype of the stored weights.")
@click.option(
    "--grad-dtype",
    type=click.Choice(["fp32", "bf16", "fp16"]),
    help="Dtype of the gradients (default: the framework's convention).",
)
@click.option(
    "--master-weights/--no-master-weights",
    default=None,
    help="An fp32 master copy of 16-bit weights (default: the framework's convention).",
)
@click.option(
    "--framework",
    type=click.Choice(["mindspore", "megatron", "deepspeed", "zero-paper"]),
    help="Accounting convention: mindspore (default), megatron, deepspeed (its ZeRO estimators), "
    "zero-paper (Rajbhandari et al. 2020 Figure 1: 2 + 2 + 12 B/param).",
)
@click.option(
    "--pretrained-model-dir",
    metavar="DIR",
    help="MindFormers pretrained_model_dir (the Hugging Face model directory with config.json).",
)
@click.option(
    "--suggestions",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    metavar="N",
    help="How many changes that fit to show when it does not fit or is tight.",
)
@options.output_format(["terminal", "json"], "json: every component in bytes, the capacity, verdict and suggestions.")
@click.option("-v", "--verbose", is_flag=True, help="Show the formula behind every number.")
def memory(
    config: Path,
    device_memory: Optional[str],
    devices: Optional[int],
    device_target: Optional[str],
    seq_length: Optional[int],
    micro_batch_size: Optional[int],
    grad_accumulation: Optional[int],
    data_parallel: Optional[int],
    tensor_parallel: Optional[int],
    pipeline_stages: Optional[int],
    micro_batch_num: Optional[int],
    expert_parallel: Optional[int],
    stage_offsets: Optional[str],
    sequence_parallel: Optional[bool],
    flash_attention: Optional[bool],
    dropout: Optional[bool],
    recompute: Optional[str],
    optimizer_sharding: Optional[str],
    precision: Optional[str],
    param_dtype: Optional[str],
    grad_dtype: Optional[str],
    master_weights: Optional[bool],
    framework: Optional[str],
    pretrained_model_dir: Optional[str],
    suggestions: int,
    fmt: str,
    verbose: bool,
) -> int:
    """Estimate training memory per device and compare it with the device.

    \b
    Prints parameters, gradients, master weights, optimizer states, activations,
    logits, runtime reserve and fragmentation per device on the most loaded pipeline
    stage; the verdict (fits / tight: under 10% headroom / does not fit); and the
    smallest changes that fit. Exit code 1 when it does not fit.

    \b
    Examples:
      msdoctor memory --config train.yaml
      msdoctor memory --config pretrain_llama2_7b.yaml --device-memory 64GiB -v
      msdoctor memory --config config.json --seq-length 4096 --devices 8 --recompute full
      msdoctor memory --config config.json --framework zero-paper --param-dtype fp16 \\
          --devices 64 --optimizer-sharding grads        # ZeRO paper Figure 1, P_os+g
    """
    from msdoctor.context import Context, Options
    from msdoctor.memory.plan import make_plan
    from msdoctor.memory.sources import Overrides
    from msdoctor.model import ExitCode

    _check_size(device_memory)
    target = {"ascend": "Ascend", "gpu": "GPU", "cpu": "CPU"}[device_target.lower()] if device_target else None
    selective_ffn = {"selective-attention": False, "selective-ffn": True}.get(recompute or "")
    overrides = Overrides(
        seq_length,
        micro_batch_size,
        grad_accumulation,
        data_parallel,
        tensor_parallel,
        pipeline_stages,
        devices,
        "selective" if recompute and "selective" in recompute else recompute,
        optimizer_sharding,
        precision,
        param_dtype,
        target,
        micro_batch_num=micro_batch_num,
        sequence_parallel=sequence_parallel,
        flash_attention=flash_attention,
        dropout=dropout,
        framework=framework,
        master_weights=master_weights,
        grad_dtype=grad_dtype,
        selective_ffn=selective_ffn,
        pretrained_model_dir=pretrained_model_dir,
        expert_parallel=expert_parallel,
        stage_offsets=_offsets(stage_offsets),
    )
    source = _load(config, overrides)
    plan = make_plan(
        source,
        Context(Options(config_path=config.resolve())),
        device_memory=device_memory,
        probe=False,
        limit=suggestions,
    )
    _show(plan, fmt, verbose)
    return int(ExitCode.PROBLEMS if plan.verdict == "does not fit" else ExitCode.OK)


def _offsets(text: Optional[str]) -> Optional[tuple]:
    """--stage-offsets as integers, one per stage (else a usage error naming the option)."""
    if text is None:
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: expected integers separated by commas, one per pipeline stage (e.g. --stage-offsets=-1,0,0,1)",
            param_hint="--stage-offsets",
        ) from None


def _check_size(device_memory: Optional[str]) -> None:
    """--device-memory parses as a size (else a usage error naming the option)."""
    from msdoctor.memory.units import SizeError, parse_size

    if device_memory is not None:
        try:
            parse_size(device_memory)
        except SizeError as exc:
            raise click.BadParameter(str(exc), param_hint="--device-memory") from None


def _load(config: Path, overrides: Any) -> Any:
    """The config's training setup (the one reading ``msdoctor check`` makes too) with the command line's
    overrides; every problem in it listed at once."""
    from msdoctor.domain.training_setup import read
    from msdoctor.facts.config import load_config

    setup = read(load_config(config), overrides)
    if not setup.ok:
        listing = "\n  ".join(p.render(setup.path) for p in setup.problems)
        raise UserError(
            f"{len(setup.problems)} problem(s) in {setup.path or config}:\n  {listing}",
            "correct the keys above (or the command-line options named)",
        )
    return setup.source


def _show(plan: Any, fmt: str, verbose: bool) -> None:
    """The plan as JSON or for the terminal."""
    if fmt == "json":
        from msdoctor.memory.render import to_json

        click.echo(json.dumps(to_json(plan), indent=2))
    else:
        from msdoctor.memory.render import render_terminal
        from msdoctor.render.console import make_console

        render_terminal(plan, make_console(sys.stdout), verbose)
