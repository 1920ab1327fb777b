"""The jit-compiled training step: forward, backward, gradient all-reduce, loss scaling, clipping, update.

GRAPH mode with one ``@ms.jit`` function per step is the fast path on CPU (PyNative eager is ~30x
slower there: observed, benchmarks/bench_train.py). With gradient accumulation, micro-steps add
into Parameter buffers inside the graph and one apply step updates (observed: one compiled graph
for all micro-steps); the optimizer
steps, the schedule and the checkpoints all count apply steps.
"""

from __future__ import annotations

from typing import Any

from .config import RunConfig


class Steps:
    """The jit-compiled step functions: one fused step, or micro-steps + apply with accumulation."""

    def __init__(self, run_cfg: RunConfig, loss_net: Any, opt: Any, scaler: Any, world: int, mode: str) -> None:
        import mindspore as ms

        self.accum = run_cfg.train.grad_accumulation
        params = opt.parameters
        finish = _finish(opt, scaler, run_cfg.train.grad_clip, world, mode)
        grad_fn = _grad_fn(loss_net, scaler, params)

        @ms.jit
        def train_step(x, y, lr):
            (_, loss), grads = grad_fn(x, y)
            return finish(grads, loss, lr)

        self.train_step = train_step
        self.eval_loss = ms.jit(loss_net)  # forward only, for held-out batches
        if self.accum == 1:
            return
        self.acc, self.loss_acc, self.micro_step, self.apply_step = _accumulating(grad_fn, finish, params, self.accum)

    def __call__(self, batches: list, lr: float) -> tuple[float, float, bool]:
        import mindspore as ms

        lr_t = ms.Tensor(lr, ms.float32)
        if self.accum == 1:
            out = self.train_step(ms.Tensor(batches[0][0]), ms.Tensor(batches[0][1]), lr_t)
        else:
            for x, y in batches:
                self.micro_step(ms.Tensor(x), ms.Tensor(y))
            out = self.apply_step(lr_t)
        loss, norm, finite = out
        return float(loss.asnumpy()), float(norm.asnumpy()), bool(finite.asnumpy())


def _grad_fn(loss_net: Any, scaler: Any, params: Any) -> Any:
    """(scaled loss, loss) and the gradients of the scaled loss."""
    import mindspore as ms

    def forward(x, y):
        loss = loss_net(x, y)
        return (scaler.scale(loss) if scaler is not None else loss), loss

    return ms.value_and_grad(forward, None, params, has_aux=True)


def _finish(opt: Any, scaler: Any, clip: float, world: int, mode: str) -> Any:
    """The end of every step, traced into its graph: reduce over ranks, unscale, check, clip, update."""
    import mindspore as ms
    from mindspore import nn, ops

    reducer = None
    if mode == "data_parallel":
        from mindspore.communication import GlobalComm

        reducer = nn.DistributedGradReducer(opt.parameters, mean=True, degree=world, group=GlobalComm.WORLD_COMM_GROUP)
        allreduce = ops.AllReduce(group=GlobalComm.WORLD_COMM_GROUP)

    def finish(grads, loss, lr):
        """Reduce over ranks, unscale, check, clip, update; skip the update on inf/nan."""
        # the lr enters the graph as an input: Parameter.set_data() from Python with a fresh
        # Tensor was observed to leave the optimizer reading freed memory (lr ~1e34) in GRAPH mode
        ops.assign(opt.learning_rate, lr)
        if reducer is not None:
            grads = reducer(grads)
            loss = allreduce(loss) / world
        if scaler is not None:
            grads = scaler.unscale(grads)
        finite = ms.amp.all_finite(grads)
        norm = ops.sqrt(ops.addn([ops.reduce_sum(ops.square(g.astype(ms.float32))) for g in grads]))
        if clip > 0:
            scale = clip / ops.maximum(norm, clip)  # clip by global norm (Pascanu et al. 2013)
            grads = tuple(g * scale.astype(g.dtype) for g in grads)
        if finite:
            opt(grads)
        if scaler is not None:
            scaler.adjust(finite)
        return loss, norm, finite

    return finish


def _accumulating(grad_fn: Any, finish: Any, params: Any, accum: int) -> tuple[Any, Any, Any, Any]:
    """Gradient accumulation in Parameters updated inside the graph (observed: keeps one compiled graph):
    the buffers, the loss buffer, micro_step (adds one micro-batch) and apply_step (updates, then clears)."""
    import mindspore as ms
    from mindspore import Parameter, ops

    acc = ms.ParameterTuple(Parameter(ops.zeros_like(p), name="accum." + p.name, requires_grad=False) for p in params)
    loss_acc = Parameter(ms.Tensor(0.0, ms.float32), name="accum.loss", requires_grad=False)
    n = float(accum)

    @ms.jit
    def micro_step(x, y):
        (_, loss), grads = grad_fn(x, y)
        for a, g in zip(acc, grads):
            ops.assign_add(a, g)
        ops.assign_add(loss_acc, loss)
        return loss

    @ms.jit
    def apply_step(lr):
        out = finish(tuple(a / n for a in acc), loss_acc / n, lr)
        for a in acc:
            ops.assign(a, ops.zeros_like(a))
        ops.assign(loss_acc, ops.zeros_like(loss_acc))
        return out

    return acc, loss_acc, micro_step, apply_step
