"""A Llama-style decoder in MindSpore: RMSNorm, rotary embeddings, SwiGLU, grouped-query attention.

    from msdoctor.training.config import ModelConfig
    from msdoctor.training.model import GPT, LossNet
    net = GPT(ModelConfig(num_layers=2, hidden_size=64, num_heads=4, vocab_size=256), seq_length=64)
    loss = LossNet(net)(tokens, targets)          # int32 (batch, seq) each -> scalar fp32

References: Llama (Touvron et al. 2023, arXiv 2302.13971) for the block layout; RoPE (Su et al.,
arXiv 2104.09864); SwiGLU (Shazeer 2020, arXiv 2002.05202); grouped-query attention (Ainslie et
al. 2023, arXiv 2305.13245); Megatron-LM (Shoeybi et al. 2019, arXiv 1909.08053) for which
matmuls split along which axis under tensor parallelism.

Everything is built from primitives that have CPU kernels in MindSpore 2.7: the fused ops
(ops.rms_norm, flash_attention_score, rotary_position_embedding) and mint.nn.Embedding have none
(observed with MindSpore 2.7.0 on CPU; benchmarks/bench_train.py measures it). Each primitive is its own instance so that semi-auto
parallel can give it a shard strategy (see :mod:`.parallel`); on CPU no strategy is applied.
"""

from __future__ import annotations

import math

import numpy as np

import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.common.initializer import Normal, initializer

from .config import ModelConfig

DTYPES = {"fp32": ms.float32, "fp16": ms.float16, "bf16": ms.bfloat16}


class Embedding(nn.Cell):
    """Token lookup into an fp32 table (ops.Gather; mint.nn.Embedding has no CPU kernel)."""

    def __init__(self, vocab: int, dim: int, std: float) -> None:
        super().__init__()
        self.weight = Parameter(initializer(Normal(std), (vocab, dim), ms.float32), name="weight")
        self.gather = ops.Gather()

    def construct(self, tokens):
        b, s = tokens.shape
        return self.gather(self.weight, tokens.reshape(-1), 0).reshape(b, s, -1)


class Linear(nn.Cell):
    """y = x W^T (+ b); fp32 weight, matmul in the compute dtype (weights are the fp32 master copy)."""

    def __init__(self, n_in: int, n_out: int, bias: bool, std: float, compute_dtype=ms.float32) -> None:
        super().__init__()
        self.n_out = n_out
        self.weight = Parameter(initializer(Normal(std), (n_out, n_in), ms.float32), name="weight")
        self.bias = Parameter(initializer("zeros", (n_out,), ms.float32), name="bias") if bias else None
        self.matmul = ops.MatMul(transpose_b=True)
        self.add = ops.Add()
        self.cast = ops.Cast()
        self.dtype = compute_dtype

    def construct(self, x):
        lead = x.shape[:-1]
        x = x.reshape(-1, x.shape[-1])  # 2-D matmul: the batch*seq rows split over data parallel
        if self.dtype == ms.float32:  # no Cast kernels in the fp32 graph (CPU runs every Cast it is given)
            y = self.matmul(x, self.weight)
        else:
            y = self.matmul(self.cast(x, self.dtype), self.cast(self.weight, self.dtype))
        if self.bias is not None:
            y = self.add(y, self.cast(self.bias, y.dtype))
        return y.reshape(lead + (self.n_out,))


class RMSNorm(nn.Cell):
    """x / sqrt(mean(x^2) + eps) * g, computed in fp32 (Zhang & Sennrich 2019, arXiv 1910.07467)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = Parameter(initializer("ones", (dim,), ms.float32), name="weight")
        self.eps = eps
        self.square = ops.Square()
        self.mean = ops.ReduceMean(keep_dims=True)
        self.rsqrt = ops.Rsqrt()
        self.mul = ops.Mul()
        self.mul_w = ops.Mul()
        self.cast = ops.Cast()

    def construct(self, x):
        dtype = x.dtype
        x = self.cast(x, ms.float32)
        x = self.mul(x, self.rsqrt(self.mean(self.square(x), -1) + self.eps))
        return self.cast(self.mul_w(x, self.weight), dtype)


def rope_tables(seq_length: int, head_dim: int, theta: float) -> tuple[Tensor, Tensor]:
    """cos and sin of shape (1, 1, seq, head_dim), frequencies theta^(-2i/d) (RoFormer eq. 15)."""
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq_length, dtype=np.float64), inv)
    angles = np.concatenate([angles, angles], axis=-1)[None, None]  # "rotate half" layout
    return Tensor(np.cos(angles), ms.float32), Tensor(np.sin(angles), ms.float32)


class Rotary(nn.Cell):
    """Apply rotary position embeddings to (batch, heads, seq, head_dim)."""

    def __init__(self, seq_length: int, head_dim: int, theta: float) -> None:
        super().__init__()
        self.cos, self.sin = rope_tables(seq_length, head_dim, theta)
        self.half = head_dim // 2
        self.split = ops.Split(axis=-1, output_num=2)
        self.concat = ops.Concat(axis=-1)
        self.neg = ops.Neg()
        self.mul_cos = ops.Mul()
        self.mul_sin = ops.Mul()
        self.add = ops.Add()
        self.cast = ops.Cast()

    def construct(self, x):
        dtype = x.dtype
        x = self.cast(x, ms.float32)
        x1, x2 = self.split(x)
        rotated = self.concat((self.neg(x2), x1))
        return self.cast(self.add(self.mul_cos(x, self.cos), self.mul_sin(rotated, self.sin)), dtype)


class Attention(nn.Cell):
    """Causal self-attention with grouped KV heads (GQA): softmax attention, or Ascend's fused flash kernel."""

    def __init__(self, cfg: ModelConfig, seq_length: int, dtype, std_out: float, flash: bool = False) -> None:
        super().__init__()
        self.n_head, self.n_kv, self.head_dim = cfg.num_heads, cfg.kv_heads, cfg.head_dim
        self.n_rep = self.n_head // self.n_kv
        h, d, b = cfg.hidden_size, cfg.head_dim, cfg.bias
        self.wq = Linear(h, self.n_head * d, b, cfg.init_std, dtype)
        self.wk = Linear(h, self.n_kv * d, b, cfg.init_std, dtype)
        self.wv = Linear(h, self.n_kv * d, b, cfg.init_std, dtype)
        self.wo = Linear(self.n_head * d, h, b, std_out, dtype)
        self.rope_q = Rotary(seq_length, d, cfg.rope_theta)
        self.rope_k = Rotary(seq_length, d, cfg.rope_theta)
        # additive causal mask, fp32: -1e9 above the diagonal
        mask = np.triu(np.full((seq_length, seq_length), -1e9, dtype=np.float32), k=1)
        self.mask = Tensor(mask[None, None], ms.float32)
        self.scale = 1.0 / math.sqrt(d)
        self.dtype = dtype
        self.t_q, self.t_k, self.t_v, self.t_out = ops.Transpose(), ops.Transpose(), ops.Transpose(), ops.Transpose()
        self.tile_k, self.tile_v = ops.Tile(), ops.Tile()
        self.qk = ops.BatchMatMul(transpose_b=True)
        self.pv = ops.BatchMatMul()
        self.mul_scale = ops.Mul()
        self.add_mask = ops.Add()
        self.softmax = ops.Softmax(axis=-1)
        self.cast = ops.Cast()
        self.flash = None
        if flash:  # Ascend only (no CPU kernel): fp16/bf16 inputs, GQA native, causal mask compressed to 2048^2
            from mindspore.ops.operations.nn_ops import FlashAttentionScore

            self.flash = FlashAttentionScore(self.n_head, scale_value=self.scale, input_layout="BNSD", sparse_mode=2)
            self.flash_mask = Tensor(np.triu(np.ones((2048, 2048), dtype=np.uint8), k=1))

    def _heads(self, x, n, transpose):
        b, s, _ = x.shape
        return transpose(x.reshape(b, s, n, self.head_dim), (0, 2, 1, 3))  # (b, n, s, d)

    def _repeat_kv(self, x, tile):
        """(b, kv, s, d) -> (b, kv * rep, s, d): each KV head serves n_rep query heads."""
        if self.n_rep == 1:
            return x
        b, kv, s, d = x.shape
        x = tile(x.reshape(b, kv, 1, s, d), (1, 1, self.n_rep, 1, 1))
        return x.reshape(b, kv * self.n_rep, s, d)

    def construct(self, x):
        b, s, _ = x.shape
        q = self.rope_q(self._heads(self.wq(x), self.n_head, self.t_q))
        k = self.rope_k(self._heads(self.wk(x), self.n_kv, self.t_k))
        v = self._heads(self.wv(x), self.n_kv, self.t_v)
        if self.flash is not None:
            out = self.flash(
                self.cast(q, self.dtype),
                self.cast(k, self.dtype),
                self.cast(v, self.dtype),
                None,
                None,
                None,
                self.flash_mask,
                None,
            )[3]
            out = self.t_out(out, (0, 2, 1, 3)).reshape(b, s, self.n_head * self.head_dim)
            return self.wo(out)
        k, v = self._repeat_kv(k, self.tile_k), self._repeat_kv(v, self.tile_v)
        scores = self.mul_scale(self.cast(self.qk(q, k), ms.float32), self.scale)
        probs = self.softmax(self.add_mask(scores, self.mask))  # softmax in fp32 for fp16/bf16 stability
        out = self.pv(self.cast(probs, self.dtype), v)
        out = self.t_out(out, (0, 2, 1, 3)).reshape(b, s, self.n_head * self.head_dim)
        return self.wo(out)


class MLP(nn.Cell):
    """SwiGLU: w2(silu(w1 x) * w3 x); GELU: w2(gelu(w1 x))."""

    def __init__(self, cfg: ModelConfig, dtype, std_out: float) -> None:
        super().__init__()
        h, f, b = cfg.hidden_size, cfg.ffn_size, cfg.bias
        self.gated = cfg.activation == "swiglu"
        self.w1 = Linear(h, f, b, cfg.init_std, dtype)
        self.w3 = Linear(h, f, b, cfg.init_std, dtype) if self.gated else None
        self.w2 = Linear(f, h, b, std_out, dtype)
        self.sigmoid = ops.Sigmoid()  # silu(x) = x * sigmoid(x): there is no SiLU primitive to shard
        self.mul_silu = ops.Mul()
        self.gelu = ops.GeLU()
        self.mul = ops.Mul()

    def construct(self, x):
        up = self.w1(x)
        if not self.gated:
            return self.w2(self.gelu(up))
        hidden = self.mul(self.mul_silu(up, self.sigmoid(up)), self.w3(x))
        return self.w2(hidden)


class Block(nn.Cell):
    """Pre-norm residual block: x + attn(norm(x)), then + mlp(norm(x))."""

    def __init__(self, cfg: ModelConfig, seq_length: int, dtype, flash: bool = False) -> None:
        super().__init__()
        # residual projections get std / sqrt(2L) (GPT-2 paper section 2.3; nanoGPT model.py)
        std_out = cfg.init_std / math.sqrt(2 * cfg.num_layers)
        self.attn_norm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.attn = Attention(cfg, seq_length, dtype, std_out, flash)
        self.mlp_norm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.mlp = MLP(cfg, dtype, std_out)
        self.add_attn, self.add_mlp = ops.Add(), ops.Add()
        self.cast = ops.Cast()

    def construct(self, x):
        x = self.add_attn(x, self.cast(self.attn(self.attn_norm(x)), ms.float32))
        return self.add_mlp(x, self.cast(self.mlp(self.mlp_norm(x)), ms.float32))


class GPT(nn.Cell):
    """Token embedding, ``num_layers`` blocks, final RMSNorm, LM head (optionally tied to the embedding)."""

    def __init__(self, cfg: ModelConfig, seq_length: int, compute_dtype: str = "fp32", flash: bool = False) -> None:
        super().__init__()
        self.cfg = cfg
        dtype = DTYPES[compute_dtype]
        self.vocab = cfg.padded_vocab_size
        self.embedding = Embedding(self.vocab, cfg.hidden_size, cfg.init_std)
        self.blocks = nn.CellList([Block(cfg, seq_length, dtype, flash) for _ in range(cfg.num_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.head = None if cfg.tie_embeddings else Linear(cfg.hidden_size, self.vocab, False, cfg.init_std, dtype)
        self.head_matmul = ops.MatMul(transpose_b=True)
        self.cast = ops.Cast()
        self.dtype = dtype

    def construct(self, tokens):
        b, s = tokens.shape
        x = self.embedding(tokens)  # the residual stream stays fp32
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        if self.head is not None:
            return self.head(x)
        flat = self.head_matmul(
            self.cast(x.reshape(b * s, -1), self.dtype), self.cast(self.embedding.weight, self.dtype)
        )
        return flat.reshape(b, s, self.vocab)


class LossNet(nn.Cell):
    """Mean next-token cross entropy in fp32."""

    def __init__(self, net: GPT) -> None:
        super().__init__()
        self.net = net
        self.cast = ops.Cast()
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, tokens, targets):
        logits = self.cast(self.net(tokens), ms.float32)
        return self.loss(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def set_recompute(net: GPT, mode: str) -> None:
    """full: keep only each block's input and recompute the block in backward; selective: recompute
    the attention core and the FFN activation, the biggest activations per FLOP (Korthikanti et al.
    2022, arXiv 2205.05198, section 4)."""
    if mode == "full":
        for block in net.blocks:
            block.recompute()
    elif mode == "selective":
        for block in net.blocks:
            a, m = block.attn, block.mlp
            for prim in (a.qk, a.mul_scale, a.add_mask, a.softmax, a.pv, m.sigmoid, m.mul_silu, m.gelu, m.mul):
                prim.recompute()


def count_params(net: nn.Cell) -> int:
    return sum(int(np.prod(p.shape)) for p in net.trainable_params())


def decay_groups(net: nn.Cell, weight_decay: float) -> list[dict]:
    """AdamW groups: decay matrices (weights, embedding), not norms or biases (nanoGPT configure_optimizers)."""
    params = net.trainable_params()
    decay = [p for p in params if len(p.shape) >= 2]
    rest = [p for p in params if len(p.shape) < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if rest:
        groups.append({"params": rest, "weight_decay": 0.0})
    return groups
