"""Parallel layout: Megatron-style tensor-parallel shard strategies and the MindSpore context.

Tensor parallelism splits attention by heads and the FFN by its inner dimension (Shoeybi et al.
2019, arXiv 1909.08053, section 3): q/k/v, gate and up projections are column-parallel (weight
rows split over ``tp``), the attention output and down projections are row-parallel (weight
columns split, partial sums all-reduced). In MindSpore this is written as ``.shard()`` strategies
on primitives under ``semi_auto_parallel`` (``set_auto_parallel_context(tensor_parallel=...)`` does
not exist). CPU rejects semi-auto parallel ("Invalid backend: CPU", observed with MindSpore 2.7.0),
so on CPU only data parallelism runs and these strategies are unit-tested, not executed.

Ranks follow MindSpore's device matrix with the stage outermost and tensor parallel innermost:
``rank = stage * dp * tp + dp_index * tp + tp_index``.
"""

from __future__ import annotations

from typing import Any

from .config import RunConfig


def shard_plan(dp: int, tp: int, sequence_parallel: bool = False) -> dict[str, dict[str, tuple]]:
    """Strategies by cell kind and primitive attribute; each tuple gives the splits per input dim.

    With sequence parallelism the norms and residual adds, which tensor parallelism would
    replicate, are split along the sequence instead (Korthikanti et al. 2022, arXiv 2205.05198).
    """
    heads4 = (dp, tp, 1, 1)  # (batch, heads, seq, head_dim)
    rows3 = (dp, tp, 1) if sequence_parallel else (dp, 1, 1)  # (batch, seq, hidden) outside attention/FFN
    ffn3 = (dp, 1, tp)  # (batch, seq, ffn): FFN inner dimension split over tp
    return {
        "column": {"matmul": ((dp, 1), (tp, 1)), "add": ((dp, tp), (tp,))},
        "row": {"matmul": ((dp, tp), (1, tp)), "add": ((dp, 1), (1,))},
        "embedding": {"gather": ((1, 1), (dp,))},
        "norm": {
            "square": (rows3,),
            "mean": (rows3,),
            "rsqrt": (rows3,),
            "mul": (rows3, rows3),
            "mul_w": (rows3, (1,)),
        },
        "rotary": {
            "split": (heads4,),
            "neg": ((dp, tp, 1, 1),),
            "concat": (heads4, heads4),
            "mul_cos": (heads4, (1, 1, 1, 1)),
            "mul_sin": (heads4, (1, 1, 1, 1)),
            "add": (heads4, heads4),
        },
        "attention": {
            "t_q": ((dp, 1, tp, 1),),
            "t_k": ((dp, 1, tp, 1),),
            "t_v": ((dp, 1, tp, 1),),
            "t_out": (heads4,),
            "tile_k": ((dp, tp, 1, 1, 1),),
            "tile_v": ((dp, tp, 1, 1, 1),),
            "qk": (heads4, heads4),
            "pv": (heads4, heads4),
            "mul_scale": (heads4, ()),
            "add_mask": (heads4, (1, 1, 1, 1)),
            "softmax": (heads4,),
            "flash": (heads4, heads4, heads4, (1, 1)),
        },  # q, k, v (BNSD), the 2048^2 causal mask
        "mlp": {"sigmoid": (ffn3,), "mul_silu": (ffn3, ffn3), "gelu": (ffn3,), "mul": (ffn3, ffn3)},
        "block": {"add_attn": (rows3, rows3), "add_mlp": (rows3, rows3)},
        "gpt": {"head_matmul": ((dp, 1), (tp, 1))},
    }


#: which Linear layers are column- and which row-parallel, by attribute name
COLUMN = ("wq", "wk", "wv", "w1", "w3", "head")
ROW = ("wo", "w2")


def kind_of(name: str, cell: Any) -> str:
    """The plan key of a cell, from its class and its attribute name in the tree."""
    cls = type(cell).__name__
    leaf = name.rsplit(".", 1)[-1]
    if cls == "Linear":
        return "column" if leaf in COLUMN else "row"
    return {
        "Embedding": "embedding",
        "RMSNorm": "norm",
        "Rotary": "rotary",
        "Attention": "attention",
        "MLP": "mlp",
        "Block": "block",
        "GPT": "gpt",
    }.get(cls, "")


def apply_plan(net: Any, dp: int, tp: int, sequence_parallel: bool = False) -> int:
    """Give every primitive named in the plan its strategy; returns how many were set."""
    plan = shard_plan(dp, tp, sequence_parallel)
    count = 0
    for name, cell in net.cells_and_names():
        for attr, strategy in plan.get(kind_of(name, cell), {}).items():
            prim = getattr(cell, attr, None)
            if prim is not None and hasattr(prim, "shard"):
                prim.shard(strategy)
                count += 1
    return count


def plan_problems(cfg: RunConfig) -> list[str]:
    """Shapes the tensor-parallel plan cannot split evenly (config.validate checks heads and KV heads)."""
    m, tp = cfg.model, cfg.parallel.tensor_parallel
    out = []
    if m.ffn_size % tp:
        out.append(f"model FFN size {m.ffn_size} is not divisible by tensor_parallel {tp}")
    if m.padded_vocab_size % tp:
        out.append(
            f"vocabulary {m.padded_vocab_size} is not divisible by tensor_parallel {tp}: "
            f"set model.make_vocab_size_divisible_by to a multiple of {tp}"
        )
    return out


def stage_of_layer(layer: int, num_layers: int, stages: int) -> int:
    """Pipeline stage that runs this layer: consecutive equal slices."""
    return layer // (num_layers // stages)


def data_rank(rank: int, cfg: RunConfig) -> int:
    """Which slice of the global batch a rank feeds: its data-parallel index (tp peers feed the same rows)."""
    dp, tp = cfg.parallel.data_parallel, cfg.parallel.tensor_parallel
    return (rank % (dp * tp)) // tp


def assign_stages(net: Any, stages: int) -> None:
    """Pipeline: embedding on the first stage, the blocks in equal slices, norm and head on the last."""
    n = len(net.blocks)
    net.embedding.pipeline_stage = 0
    for i, block in enumerate(net.blocks):
        block.pipeline_stage = stage_of_layer(i, n, stages)
    net.norm.pipeline_stage = stages - 1
    if net.head is not None:
        net.head.pipeline_stage = stages - 1


#: optimizer_sharding -> MindSpore parallel optimizer level (MindSpore docs/mindspore/source_en/features/parallel/optimizer_parallel.md)
OPTIMIZER_LEVEL = {"optimizer": "level1", "grads": "level2", "params": "level3"}


def configure(cfg: RunConfig, world: int) -> str:
    """Set MindSpore's parallel context for the config's layout; returns the mode's name.

    ``data_parallel`` runs everywhere (gradients are averaged by an explicit DistributedGradReducer:
    with ``value_and_grad`` the context alone does not all-reduce: MindSpore's data-parallel tutorial wraps
    the gradients in ``nn.DistributedGradReducer``). Tensor or
    pipeline parallelism and optimizer sharding need ``semi_auto_parallel``, which inserts the
    gradient communication itself and runs only on Ascend/GPU.
    """
    import mindspore as ms

    p = cfg.parallel
    if world == 1:
        return "stand_alone"
    if p.tensor_parallel == 1 and p.pipeline_stages == 1 and p.optimizer_sharding == "none":
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=world)
        return "data_parallel"
    if cfg.runtime.device_target == "CPU":
        raise RuntimeError(
            "tensor/pipeline parallelism and optimizer sharding need semi_auto_parallel, which "
            "MindSpore rejects on CPU ('Invalid backend: CPU'); on CPU use data_parallel only"
        )
    extra = {}
    if p.optimizer_sharding != "none":
        extra = {
            "enable_parallel_optimizer": True,
            "parallel_optimizer_config": {"optimizer_level": OPTIMIZER_LEVEL[p.optimizer_sharding]},
        }
    ms.set_auto_parallel_context(
        parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL,
        device_num=world,
        pipeline_stages=p.pipeline_stages,
        gradients_mean=True,
        **extra,
    )
    return "semi_auto_parallel"
