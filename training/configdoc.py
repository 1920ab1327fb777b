"""docs/training-config.md, generated from the config dataclasses (a test keeps the two in sync).

python -m msdoctor.training.configdoc > docs/training-config.md
"""

from __future__ import annotations

import dataclasses
import sys

from .config import RunConfig, describe

HEADER = """# Training config reference

Every key of the msdoctor training YAML (`msdoctor train --config FILE`, `msdoctor check --config FILE`),
generated from `msdoctor.training.config` by `python -m msdoctor.training.configdoc`; do not edit by hand.
Complete examples: `training/configs/*.yaml` (installed: `msdoctor/training/configs/`, named by `msdoctor train --help`).

Rules checked when the file is loaded (every problem is listed at once, with file:line):

- unknown keys are errors, with a did-you-mean;
- `parallel.data_parallel x tensor_parallel x pipeline_stages` must equal `runtime.device_num`;
- `model.num_heads` and the KV heads must be divisible by `parallel.tensor_parallel`; the layers by
  `pipeline_stages x virtual_pipeline_chunks`;
- the global batch is `train.micro_batch_size x parallel.data_parallel x train.grad_accumulation` sequences;
- `train.warmup_steps` and `train.max_steps` count **optimizer steps** (one per global batch), never micro-steps;
  a warmup outside 1-3% of the run, or an lr not scaled with the global batch (`train.base_global_batch`), is warned about.

Top-level shortcuts (MindFormers style): `device_target`, `device_num`, `output_dir` (-> `runtime.*`), `seed` (-> `train.seed`).
"""


def _default(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"' if value else '""'
    return repr(value)


def render() -> str:
    """The whole document."""
    docs = {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(RunConfig)}
    out = [HEADER]
    section: object = ()  # no section yet
    for key, doc, default in describe():
        head = key.split(".", 1)[0] if "." in key else None
        if head != section:
            section = head
            out.append(f"\n## `{head}`: {docs[head]}\n" if head else "\n## top level\n")
            out.append("| key | default | meaning |\n|---|---|---|")
        out.append(f"| `{key}` | `{_default(default)}` | {doc.replace('|', '/')} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
