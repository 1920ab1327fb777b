"""training-config rule 5, precision: bf16 on devices without bf16 kernels, fp16 without dynamic loss scaling."""

from __future__ import annotations

from typing import Optional

from msdoctor.domain.run_plan import Resolved
from msdoctor.model import Finding

from .common import Env, _loc, _set


BF16_CPU = (
    "MindSpore 2.7 has no bf16 CPU kernels for MatMul, Mul, Softmax, Sum, SiLU or Gather: the first step "
    "stops with `TypeError: Select CPU operator[MatMul] fail! Unsupported data type!` (observed: mindspore "
    "2.7.0 CPU wheel, ops.matmul on two bfloat16 tensors); only Cast, Add, Reshape and Transpose run"
)


BF16_GPU = (
    "MindSpore's bfloat16 support page lists the operators with bf16 kernels and says 'Currently, only Ascend "
    "backend has adapted operators' (https://www.mindspore.cn/docs/en/r2.5.0/api_python/bfloat16_support.html)"
)


FP16_SOURCE = (
    "fp16 has 5 exponent bits: small gradients underflow to 0 and large ones overflow to inf; loss "
    "scaling shifts them into range and dynamic scaling halves the scale on overflow (Micikevicius et al. "
    "2018, arXiv:1710.03740, section 3.2)"
)


MF_DYNAMIC_SCALE = (
    "runner_wrapper:\n  type: MFTrainOneStepCell\n  scale_sense:\n"
    "    type: DynamicLossScaleUpdateCell\n"
    "    loss_scale_value: 65536\n    scale_factor: 2\n    scale_window: 1000\n"
    "(as mindspore-lab/mindformers configs/gpt2/pretrain_gpt2_13b_fp16.yaml ships it, with "
    "loss_scale_value 4294967296)"
)


# -- 5. precision ---------------------------------------------------------------------------------
def _target(res: Resolved, env: Env) -> tuple[Optional[str], str]:
    if env.device_target is not None:
        return str(env.device_target.value), env.device_target.source
    return (str(res.device_target.value) if res.device_target.value else None), (
        f"{res.device_target.key} ({res.where(res.device_target)})"
    )


def rule_precision(res: Resolved, env: Env) -> list[Finding]:
    out: list[Finding] = []
    target, target_src = _target(res, env)
    comp, param = res.compute_dtype, res.param_dtype
    if target and target.upper() == "CPU":
        bad = [v for v in (comp, param) if v.value == "bf16"]
        for v in bad:
            new = "fp32" if res.kind == "msdoctor" else '"float32"'
            out.append(
                Finding.fail(
                    f"{v.key} is bf16 on CPU ({target_src}): MindSpore has no bf16 CPU kernels",
                    detail=f"{BF16_CPU}. The job would stop at its first step.",
                    fix=_set(res, v, new)
                    + (
                        " (or set train.half_on_cpu: false: the trainer then runs fp32 on CPU)"
                        if res.kind == "msdoctor"
                        else " (fp16 also runs on CPU, 2-3x slower than fp32)"
                    ),
                    location=_loc(res, v),
                    code="bf16-on-cpu",
                )
            )
    if target and target.upper() == "GPU":
        for v in (x for x in (comp, param) if x.value == "bf16"):
            out.append(
                Finding.warn(
                    f"{v.key} is bf16 on GPU ({target_src}): MindSpore documents bf16 operators for Ascend only",
                    detail=f"{BF16_GPU}. Not verified on a GPU by msdoctor: if the first step runs, the kernels exist.",
                    fix=_set(res, v, "fp16" if res.kind == "msdoctor" else '"float16"')
                    + " with dynamic loss scaling, or fp32",
                    location=_loc(res, v),
                    code="bf16-on-gpu",
                )
            )
    if comp.value == "fp16" and res.loss_scale.value != "dynamic":
        ls = res.loss_scale
        how = "static loss scale" if ls.value == "static" else "no loss scaling"
        fix = (
            _set(res, ls, "dynamic")
            if res.kind == "msdoctor"
            else f"{res.where(ls) if ls.line else res.path}: set\n{MF_DYNAMIC_SCALE}"
        )
        out.append(
            Finding.warn(
                f"fp16 compute ({comp.key}) with {how} ({ls.key}"
                + (f" = {ls.value}" if ls.given else ", not set")
                + ")",
                detail=f"{FP16_SOURCE}. A fixed scale either overflows (loss nan, skipped steps) or leaves small "
                "gradients at zero; the loss stops falling hours in.",
                fix=fix,
                location=_loc(res, ls if ls.line else comp),
                code="fp16-no-dynamic-scale",
            )
        )
    if not out:
        out.append(
            Finding.passed(
                f"precision: compute {comp.value}, weights {param.value}"
                + (f", loss scaling {res.loss_scale.value}" if comp.value == "fp16" else ""),
                proved=f"{comp.said()}, {param.said()} on {target or 'an unstated device'}"
                + (f" ({target_src})" if target else "")
                + ("; fp16 with dynamic loss scaling" if comp.value == "fp16" else "")
                + ("; " + "; ".join(n for n in res.notes if "runs as fp32" in n) if res.kind == "msdoctor" else ""),
                location=_loc(res, comp),
                code="precision",
            )
        )
    return out
