"""training-config rule 6, the parallel layout: data x model x pipeline against the devices, tensor parallel against
the (KV) heads and the node, pipeline stages and offsets against the layers, micro-batches against stages."""

from __future__ import annotations

import math

from msdoctor.domain.pipeline import stage_layers
from msdoctor.domain.run_plan import Resolved, Val
from msdoctor.model import Finding

from .common import Env, Fact, _loc, _set


BUBBLE_SOURCE = (
    "Narayanan et al. 2021, arXiv:2104.04473, section 2.2: bubble time / ideal time = (p - 1) / m, "
    "(p - 1) / (v m) with v interleaved chunks"
)


# -- 6. parallel layout ------------------------------------------------------------------------------
def _divisors(n: int) -> list[int]:
    from msdoctor.memory.suggest import _divisors as divisors  # O(sqrt n)

    return divisors(n)


def rule_layout(res: Resolved, env: Env) -> list[Finding]:
    """The layout against the job's devices, tensor parallelism against the heads and the node, then the pipeline."""
    return _layout_devices(res, env) + _tp_heads(res) + _tp_node(res, env) + _pipeline(res, env)


def _layout_devices(res: Resolved, env: Env) -> list[Finding]:
    """data x tensor x pipeline (x context) parallel equals the job's devices."""
    out: list[Finding] = []
    dp, tp, pp, cp = (
        int(v.value) for v in (res.data_parallel, res.tensor_parallel, res.pipeline_stages, res.context_parallel)
    )
    product = res.layout_product
    terms = f"{res.data_parallel.key} {dp} x {res.tensor_parallel.key} {tp} x {res.pipeline_stages.key} {pp}" + (
        f" x {res.context_parallel.key} {cp}" if cp > 1 else ""
    )
    devices = env.devices
    if devices is None and res.devices is not None:
        devices = Fact(int(res.devices.value), f"{res.devices.key} ({res.where(res.devices)})")
    if devices is None:
        out.append(
            Finding.skipped(
                f"layout uses {product} devices ({terms}); the job's device count is not known",
                reason="pass --devices N or add `# msdoctor: devices=N` to the file to check it",
                code="layout-devices",
            )
        )
    elif product != int(devices.value):
        n = int(devices.value)
        rest = tp * pp * cp
        fix = (
            _set(res, res.data_parallel, n // rest)
            if n % rest == 0
            else f"choose data x model x pipeline parallel that multiply to {n}"
        )
        out.append(
            Finding.fail(
                f"layout needs {product} devices ({terms}), the job has {n} ({devices.source})",
                detail="MindSpore requires data_parallel x model_parallel x pipeline_stage (x context_parallel) to equal "
                "the number of devices (MindFormers parallel_config docs); the job fails at startup after it was queued.",
                fix=fix,
                location=_loc(res, res.data_parallel),
                code="layout-devices",
            )
        )
    else:
        out.append(
            Finding.passed(
                f"layout {terms} = {product} device(s)",
                proved=f"equals the {devices.value} devices ({devices.source})",
                location=_loc(res, res.data_parallel),
                code="layout-devices",
            )
        )
    return out


def _tp_heads(res: Resolved) -> list[Finding]:
    """Tensor parallelism splits whole attention and KV heads (GLM's fused projection: a warning)."""
    out: list[Finding] = []
    tp = int(res.tensor_parallel.value)
    heads, kv = int(res.num_heads.value or 0), int(res.num_kv_heads.value or 0)
    if heads and kv:
        bad = [(name, n) for name, n in (("attention heads", heads), ("KV heads", kv)) if n % tp]
        glm = "glm" in res.model_type.lower()
        if bad and glm and heads % tp == 0:
            # ChatGLM2/3/4 in MindFormers project Q, K and V with one fused matrix sharded as a whole over
            # model_parallel (mindformers/models/glm2/glm2_transformer.py): MindSpore redistributes the KV groups
            out.append(
                Finding.warn(
                    f"{res.tensor_parallel.key} = {tp} does not divide the {kv} KV groups ({res.num_kv_heads.key})",
                    detail=f"{res.model_type}: MindFormers shards GLM's fused query_key_value projection as a whole "
                    "(glm2_transformer.py), so the job runs, but MindSpore inserts redistributions of the KV groups "
                    "between the projection and attention in every layer.",
                    fix=_set(res, res.tensor_parallel, max(d for d in _divisors(kv) if d <= tp))
                    + " with more data or pipeline parallelism, if the communication shows in the step time",
                    location=_loc(res, res.tensor_parallel),
                    code="tp-heads",
                )
            )
        elif bad:
            ok = [d for d in _divisors(math.gcd(heads, kv)) if d <= max(tp, 1) * 8]
            out.append(
                Finding.fail(
                    f"{res.tensor_parallel.key} = {tp} does not divide the "
                    + " and ".join(f"{name} ({n})" for name, n in bad),
                    detail=f"{res.num_heads.said()}, {res.num_kv_heads.said()}: tensor parallelism splits whole heads "
                    "(Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053, section 3); MindFormers' Llama attention "
                    "raises ValueError when n_kv_head is not divisible by model_parallel "
                    "(mindformers/models/llama/llama_transformer.py, r1.5.0), after the job was queued.",
                    fix=_set(res, res.tensor_parallel, max(d for d in ok if d <= tp) if any(d <= tp for d in ok) else 1)
                    + f" (values that divide both: {', '.join(map(str, ok))})",
                    location=_loc(res, res.tensor_parallel),
                    code="tp-heads",
                )
            )
        else:
            out.append(
                Finding.passed(
                    f"{res.tensor_parallel.key} = {tp} divides {heads} heads and {kv} KV heads",
                    proved=f"{heads} % {tp} == 0 and {kv} % {tp} == 0",
                    location=_loc(res, res.tensor_parallel),
                    code="tp-heads",
                )
            )
    return out


def _tp_node(res: Resolved, env: Env) -> list[Finding]:
    """Tensor parallelism within one node."""
    out: list[Finding] = []
    tp, pp = int(res.tensor_parallel.value), int(res.pipeline_stages.value)
    dpn = env.devices_per_node
    if tp > 1:
        if dpn is None:
            out.append(
                Finding.skipped(
                    f"{res.tensor_parallel.key} = {tp}: devices per node unknown",
                    reason="no npu-smi / nvidia-smi / rank table here; pass --devices-per-node N or add "
                    "`# msdoctor: devices_per_node=N`",
                    code="tp-node",
                )
            )
        elif tp > int(dpn.value):
            out.append(
                Finding.warn(
                    f"{res.tensor_parallel.key} = {tp} spans nodes ({dpn.value} devices per node, {dpn.source})",
                    detail="Tensor parallelism all-reduces activations in every layer, forward and backward; across "
                    "nodes that traffic runs over the slower inter-node network (Narayanan et al. 2021, "
                    "arXiv:2104.04473, section 3.3: keep tensor parallelism within a node, pipeline across nodes).",
                    fix=_set(res, res.tensor_parallel, int(dpn.value)) + f" and {res.pipeline_stages.key} "
                    f"{pp * tp // int(dpn.value) if (pp * tp) % int(dpn.value) == 0 else pp} (the same device count)",
                    location=_loc(res, res.tensor_parallel),
                    code="tp-node",
                )
            )
        else:
            out.append(
                Finding.passed(
                    f"{res.tensor_parallel.key} = {tp} stays within a node",
                    proved=f"{tp} <= {dpn.value} devices per node ({dpn.source})",
                    location=_loc(res, res.tensor_parallel),
                    code="tp-node",
                )
            )
    return out


def _suggest_offset(layers: int, pp: int) -> list[int]:
    """Extra layers on the middle stages first (the first holds the embedding, the last the head and loss)."""
    rem = layers % pp
    offs = [0] * pp
    order = list(range(1, pp - 1)) + [pp - 1, 0]
    for i in range(rem):
        offs[order[i % len(order)]] += 1
    return offs


def _pipeline(res: Resolved, env: Env) -> list[Finding]:
    pp = int(res.pipeline_stages.value)
    if pp <= 1:
        return []
    if not res.num_layers.value:
        return [
            Finding.skipped(
                f"{res.pipeline_stages.key} = {pp}: the number of layers is not in the file",
                reason="model_config has no num_layers / num_hidden_layers (a pretrained_model_dir "
                "config.json is not read)",
                code="pp-layers",
            )
        ]
    out: list[Finding] = []
    layers = int(res.num_layers.value or 0)
    mtp = int(res.mtp_depth.value) if res.mtp_depth is not None and res.mtp_depth.value else 0
    # DeepSeek: LayerSetting(num_layers + mtp_depth), in the MindFormers repository's deepseek3 model
    # (https://gitee.com/mindspore/mindformers, file deepseek2_model.py of the deepseek3 example)
    layers += mtp
    vpp = int(res.vpp.value) if res.vpp else 1
    offset = res.offset.value if res.offset is not None else None
    counts, why = stage_layers(layers, pp, vpp, offset)
    okey = res.offset or Val(0, ("model", "model_config", "offset"), None, False)
    if counts is None:
        if res.kind == "mindformers":
            fix = (
                _set(res, okey, _suggest_offset(layers, pp))
                if vpp == 1
                else (f"{res.where(okey)}: set offset to a {vpp} x {pp} list summing to {layers % (pp * vpp)}")
            )
        else:
            fix = _set(res, res.pipeline_stages, max(d for d in _divisors(layers) if d <= pp))
        out.append(
            Finding.fail(
                f"{res.pipeline_stages.key} = {pp} does not split the {layers} layers: {why}",
                detail=f"{res.num_layers.said()}"
                + (f" + {res.mtp_depth.said()}" if mtp and res.mtp_depth else "")
                + f", {res.pipeline_stages.said()}"
                + (f", pp_interleave_num {vpp}" if vpp > 1 else "")
                + (f", {okey.said()}" if res.offset is not None else "")
                + ". MindFormers' LayerSetting raises ValueError at model build (mindformers/models/utils.py).",
                fix=fix,
                location=_loc(res, okey if res.offset is not None else res.pipeline_stages),
                code="pp-layers",
            )
        )
    else:
        spread = max(counts) - min(counts)
        out.append(
            Finding.passed(
                f"pipeline stages get {counts} layers",
                proved=f"{layers} layers"
                + (f" ({res.num_layers.value} + {res.mtp_depth.key} {mtp})" if mtp and res.mtp_depth else "")
                + f" over {pp} stages"
                + (f" x {vpp} chunks" if vpp > 1 else "")
                + (f" with {okey.said()}" if res.offset is not None else "")
                + (f"; uneven by {spread}: the slowest stage sets the pace" if spread > 1 else ""),
                location=_loc(res, res.pipeline_stages),
                code="pp-layers",
            )
        )
    m = int(res.micro_batch_num.value)
    if m < pp:
        out.append(
            Finding.fail(
                f"{res.micro_batch_num.key} = {m} is below {res.pipeline_stages.key} = {pp}",
                detail="With fewer micro-batches than stages some stages never have work at the same time: the pipeline "
                f"never fills and at least {pp - m} of {pp} stages idle through every step ({BUBBLE_SOURCE}).",
                fix=_set(res, res.micro_batch_num, 4 * pp)
                + f" (bubble {(pp - 1) / (4 * pp * vpp):.0%} of the ideal step)",
                location=_loc(res, res.micro_batch_num),
                code="pp-micro-batches",
            )
        )
    else:
        bubble = (pp - 1) / (m * vpp)
        share = (pp - 1) / (m * vpp + pp - 1)
        out.append(
            Finding.passed(
                f"{res.micro_batch_num.key} = {m} >= {pp} stages: pipeline bubble {bubble:.0%} of the ideal step "
                f"({share:.0%} of the step time)",
                proved=f"{m} >= {pp}; {BUBBLE_SOURCE}",
                location=_loc(res, res.micro_batch_num),
                code="pp-micro-batches",
                evidence={"bubble": bubble, "bubble_share": share},
            )
        )
    return out
