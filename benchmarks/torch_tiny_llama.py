"""The tiny-cpu model and training step in PyTorch (eager, CPU), for benchmarks/bench_train.py.

Same shape as training/model.py (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention,
plain softmax attention with an additive causal mask, untied head), same step (AdamW with
weight-decay groups, global-norm clipping). Run by the benchmark in a separate venv that has
torch; prints one JSON line with the step times.

    python torch_tiny_llama.py '{"layers": 2, "hidden": 128, "heads": 4, "kv_heads": 2, "ffn": 352,
                                 "vocab": 256, "seq": 128, "batch": 8, "steps": 60}'
"""

import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, d = c["hidden"], c["hidden"] // c["heads"]
        self.nh, self.nkv, self.d = c["heads"], c["kv_heads"], d
        self.attn_norm, self.mlp_norm = RMSNorm(h), RMSNorm(h)
        self.wq = nn.Linear(h, self.nh * d, bias=False)
        self.wk = nn.Linear(h, self.nkv * d, bias=False)
        self.wv = nn.Linear(h, self.nkv * d, bias=False)
        self.wo = nn.Linear(self.nh * d, h, bias=False)
        self.w1 = nn.Linear(h, c["ffn"], bias=False)
        self.w3 = nn.Linear(h, c["ffn"], bias=False)
        self.w2 = nn.Linear(c["ffn"], h, bias=False)

    def attention(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.nh, self.d).transpose(1, 2)
        k = self.wk(x).view(b, s, self.nkv, self.d).transpose(1, 2)
        v = self.wv(x).view(b, s, self.nkv, self.d).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d) + mask, dim=-1)
        return self.wo((probs @ v).transpose(1, 2).reshape(b, s, -1))

    def forward(self, x, cos, sin, mask):
        x = x + self.attention(self.attn_norm(x), cos, sin, mask)
        return x + self.w2(F.silu(self.w1(self.mlp_norm(x))) * self.w3(self.mlp_norm(x)))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.emb = nn.Embedding(c["vocab"], c["hidden"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        d, s = c["hidden"] // c["heads"], c["seq"]
        inv = 1.0 / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = torch.outer(torch.arange(s, dtype=torch.float64), inv)
        ang = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = ang.cos().float(), ang.sin().float()
        self.mask = torch.triu(torch.full((s, s), -1e9), diagonal=1)
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens):
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin, self.mask)
        return self.head(self.norm(x))


def main(c):
    torch.manual_seed(1234)
    net = GPT(c)
    decay = [p for p in net.parameters() if p.dim() >= 2]
    rest = [p for p in net.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
        lr=3e-3,
        betas=(0.9, 0.95),
        eps=1e-8,
    )
    times, losses = [], []
    for _ in range(c["steps"]):
        tokens = torch.randint(0, c["vocab"], (c["batch"], c["seq"] + 1))
        x, y = tokens[:, :-1], tokens[:, 1:]
        started = time.perf_counter()
        loss = F.cross_entropy(net(x).reshape(-1, c["vocab"]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - started)
    print(
        json.dumps(
            {"step_times": times, "losses": losses, "threads": torch.get_num_threads(), "torch": torch.__version__}
        )
    )


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
