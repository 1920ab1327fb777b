"""``msdoctor memory``: will this training config fit in device memory, and what is the smallest change that does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import click

from msdoctor.errors import UserError

_POS = click.IntRange(min=1)


@click.command("memory")
@click.option("--config", "config", required=True, type=click.Path(path_type=Path), metavar="FILE",
              help="Training config: msdoctor YAML, MindFormers YAML, or a Hugging Face config.json.")
@click.option("--device-memory", metavar="SIZE",
              help="Memory per device to plan for, e.g. 64GiB or 80GB (default: what npu-smi / nvidia-smi report).")
@click.option("--devices", type=_POS, metavar="N", help="Devices to plan for (data parallel follows).")
@click.option("--device-target", type=click.Choice(["Ascend", "GPU", "CPU"], case_sensitive=False),
              help="Device the run uses (default: from the config, else what is here).")
@click.option("--seq-length", type=_POS, metavar="N", help="Tokens per sequence.")
@click.option("--micro-batch-size", type=_POS, metavar="N", help="Sequences per device per micro-step.")
@click.option("--grad-accumulation", type=_POS, metavar="N", help="Micro-steps per optimizer step.")
@click.option("--data-parallel", type=_POS, metavar="N")
@click.option("--tensor-parallel", type=_POS, metavar="N")
@click.option("--pipeline-stages", type=_POS, metavar="N")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]))
@click.option("--optimizer-sharding", type=click.Choice(["none", "optimizer", "grads", "params"]))
@click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16"]), help="Compute (activation) dtype.")
@click.option("--param-dtype", type=click.Choice(["fp32", "bf16", "fp16"]), help="Dtype of the stored weights.")
@click.option("--suggestions", type=click.IntRange(min=0), default=3, show_default=True, metavar="N",
              help="How many changes that fit to show when it does not fit or is tight.")
@click.option("--format", "fmt", type=click.Choice(["terminal", "json"]), default="terminal", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Show the formula behind every number.")
def memory(config: Path, device_memory: Optional[str], devices: Optional[int], device_target: Optional[str],
           seq_length: Optional[int], micro_batch_size: Optional[int], grad_accumulation: Optional[int],
           data_parallel: Optional[int], tensor_parallel: Optional[int], pipeline_stages: Optional[int],
           recompute: Optional[str], optimizer_sharding: Optional[str], precision: Optional[str],
           param_dtype: Optional[str], suggestions: int, fmt: str, verbose: bool) -> int:
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
    """
    from msdoctor.context import Context, Options
    from msdoctor.facts.config import load_config
    from msdoctor.memory.plan import make_plan
    from msdoctor.memory.sources import Overrides
    from msdoctor.memory.sources import load as load_source
    from msdoctor.memory.units import SizeError, parse_size
    from msdoctor.model import ExitCode
    from msdoctor.training.config import ConfigError

    if device_memory is not None:
        try:
            parse_size(device_memory)
        except SizeError as exc:
            raise click.BadParameter(str(exc), param_hint="--device-memory") from None
    target = {"ascend": "Ascend", "gpu": "GPU", "cpu": "CPU"}[device_target.lower()] if device_target else None
    overrides = Overrides(seq_length, micro_batch_size, grad_accumulation, data_parallel, tensor_parallel,
                          pipeline_stages, devices, recompute, optimizer_sharding, precision, param_dtype, target)
    facts = load_config(config)
    try:
        source = load_source(facts, overrides)
    except ConfigError as exc:
        listing = "\n  ".join(p.render(exc.path) for p in exc.problems)
        raise UserError(f"{len(exc.problems)} problem(s) in {exc.path or config}:\n  {listing}",
                        "correct the keys above (or the command-line options named)") from None
    plan = make_plan(source, Context(Options(config_path=config.resolve())), device_memory=device_memory,
                     probe=False, limit=suggestions)
    if fmt == "json":
        from msdoctor.memory.render import to_json

        click.echo(json.dumps(to_json(plan), indent=2))
    else:
        from msdoctor.memory.render import render_terminal
        from msdoctor.render.console import make_console

        render_terminal(plan, make_console(sys.stdout), verbose)
    return int(ExitCode.PROBLEMS if plan.verdict == "does not fit" else ExitCode.OK)
