"""Check ``training-config``: the pretraining pitfalls, caught in the --config file before the job is queued.

For msdoctor's training YAML and MindFormers YAML: the resolved global batch and optimizer
steps (and what warmup means in them), learning rate vs global batch, warmup share, effective
batch range, fp16 loss scaling and bf16 on CPU, the parallel layout against the devices,
checkpoint size vs free disk and the time between checkpoints, and the dataset paths.
The rules are pure functions (:mod:`.rules`) of the resolved config (:mod:`.resolve`) and of
what :mod:`.gather` read around it (:mod:`.environment`); this class only gathers and calls them.

Options (``Options.extra["training_config"]``, from ``msdoctor check`` options, or
``# msdoctor: key=value`` comments in the file): ``devices``, ``devices_per_node``,
``base_global_batch``, ``tokens_per_second``, ``max_lost_hours``.
"""

from __future__ import annotations

from pathlib import Path

from msdoctor.context import Context
from msdoctor.facts.config import CONFIG
from msdoctor.model import Finding, Location


class TrainingConfigCheck:
    id = "training-config"
    title = "Training config pitfalls"
    description = (
        "Global batch, optimizer steps, lr vs batch, warmup, precision, parallel layout, checkpoints and "
        "data of the --config training run"
    )
    order = 75  # after memory-fit
    needs_config = True

    def run(self, ctx: Context) -> list[Finding]:
        cfg = ctx.get(CONFIG)
        if cfg is None:
            return [
                Finding.skipped(
                    "no training config", reason="pass --config FILE (msdoctor or MindFormers YAML) to check it"
                )
            ]
        if cfg.kind not in ("msdoctor", "mindformers"):
            return [
                Finding.skipped(
                    f"{Path(cfg.path).name} is a {cfg.kind} config",
                    reason="a model config.json has no training setup to check; pass the training "
                    "YAML (msdoctor or MindFormers)",
                )
            ]
        # the readers and rules load here, not when the check registers (every msdoctor run registers it)
        from msdoctor.domain.training_setup import TRAINING_SETUP

        from .environment import gather_env, out_of_bounds
        from .rules import evaluate

        setup = ctx.get(TRAINING_SETUP)  # one reading of the file, shared with memory-fit
        res = setup.run if setup is not None else None
        if res is None:
            problems = setup.problems if setup is not None else []
            return [
                Finding.error(
                    f"{Path(cfg.path).name}: the training setup could not be read",
                    detail="; ".join(p.render(cfg.path) for p in problems) or "no readable layout",
                    fix=f"correct the keys named in {cfg.path}",
                    location=Location(str(cfg.path), problems[0].line) if problems else None,
                )
            ]
        absurd = out_of_bounds(res)
        if absurd:
            return absurd
        return evaluate(res, gather_env(ctx, cfg, res, setup))
