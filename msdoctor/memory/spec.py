"""The estimator's inputs and outputs: model shape, training setup, device, components, estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from msdoctor.memory.units import GIB

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
DTYPES = tuple(DTYPE_BYTES)
RECOMPUTE = ("none", "selective", "full")
SHARDING = ("none", "optimizer", "grads", "params")
OPTIMIZERS = ("adamw", "sgd")
ACTIVATIONS = ("swiglu", "gelu")
NORMS = ("rmsnorm", "layernorm")
FRAMEWORKS = ("mindspore", "megatron", "deepspeed", "zero-paper")
SCHEDULERS = ("1f1b", "gpipe", "seqpipe", "interleaved")
TARGETS = ("Ascend", "GPU", "CPU")

#: headroom below which a config that fits is called tight (under 10% of the capacity left)
TIGHT_HEADROOM = 0.10


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer (Llama / GPT style).

    Attributes:
        num_layers, hidden_size, num_heads: L, h, a.
        vocab_size: V as configured; padded to a multiple of ``vocab_multiple`` x TP.
        num_kv_heads: g, KV heads for GQA / MQA (None: = num_heads).
        ffn_size: f (None: 4h for GeLU, the Llama rule 256 * ceil(8h/3 / 256) for SwiGLU).
        activation: "swiglu" (gate, up and down projections) or "gelu" (two projections).
        head_dim: per-head width (None: h / a). Qwen3-32B has 128 with h / a = 80.
        tie_embeddings: output head shares the input embedding.
        bias: biases in all linear layers (GPT-2, add_bias_linear).
        qkv_bias: biases on the Q, K, V projections only (Qwen2, ChatGLM add_qkv_bias).
        norm: "rmsnorm" (1 weight per channel) or "layernorm" (weight + bias).
        qk_norm: per-head norms on Q and K (Qwen3).
        position_embeddings: learned absolute positions (GPT-2 n_positions); 0 for rotary.
        vocab_multiple: pad V to a multiple of this x TP (Megatron: 128).
        dropout: hidden dropout after attention and MLP (stores 1-byte masks).
        attention_dropout: dropout on the attention probabilities (matters without flash attention).
        num_experts: mixture of experts: routed FFN experts per layer (0: dense); each token goes to
            ``experts_per_token`` of them, each expert takes up to ``capacity_factor`` x its share.
        expert_ffn_size: one routed expert's FFN width (None: ffn_size; DeepSeek/Qwen3-MoE
            ``moe_intermediate_size``, mcore ``moe_ffn_hidden_size``).
        shared_experts: experts every token goes through (DeepSeek ``n_shared_experts``), each
            ``expert_ffn_size`` wide unless ``shared_ffn_size`` gives their total width (Qwen2-MoE).
        dense_layers: the first layers keep a dense FFN of ffn_size (DeepSeek ``first_k_dense_replace``).
        q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim: multi-head latent
            attention (DeepSeek-V2/V3), on when kv_lora_rank > 0; q_lora_rank 0 projects Q directly.
        mtp_layers: multi-token-prediction modules after the last layer (DeepSeek-V3 ``num_nextn_predict_layers``).
        fused_qkv: Q, K and V come from one projection sharded as a whole over tensor parallel (ChatGLM's
            ``query_key_value``, mindformers/models/glm2/glm2_transformer.py), so tensor parallel need not divide
            the KV heads (MindSpore redistributes them).
    """

    num_layers: int
    hidden_size: int
    num_heads: int
    vocab_size: int
    num_kv_heads: Optional[int] = None
    ffn_size: Optional[int] = None
    activation: str = "swiglu"
    head_dim: Optional[int] = None
    tie_embeddings: bool = False
    bias: bool = False
    qkv_bias: bool = False
    norm: str = "rmsnorm"
    qk_norm: bool = False
    position_embeddings: int = 0
    vocab_multiple: int = 1
    dropout: bool = False
    attention_dropout: bool = False
    num_experts: int = 0
    experts_per_token: int = 1
    capacity_factor: float = 1.0
    expert_ffn_size: Optional[int] = None
    shared_experts: int = 0
    shared_ffn_size: Optional[int] = None
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_layers: int = 0
    fused_qkv: bool = False

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe(self) -> bool:
        return self.num_experts > 1

    @property
    def expert_ffn(self) -> int:
        return self.expert_ffn_size or self.ffn

    @property
    def moe_layers(self) -> int:
        return max(0, self.num_layers - self.dense_layers) if self.moe else 0

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def ffn(self) -> int:
        if self.ffn_size:
            return self.ffn_size
        if self.activation == "gelu":
            return 4 * self.hidden_size
        return 256 * math.ceil(int(8 * self.hidden_size / 3) / 256)

    @property
    def head_width(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    def padded_vocab(self, tensor_parallel: int = 1) -> int:
        step = max(1, self.vocab_multiple) * max(1, tensor_parallel)
        return -(-self.vocab_size // step) * step


@dataclass(frozen=True)
class Setup:
    """How the model is trained: batch, parallel layout, precision, optimizer, recompute.

    ``framework`` selects the accounting conventions (each term's source is in
    msdoctor.memory.estimator):

    * ``mindspore``: weights are stored in ``param_dtype`` and are the optimizer's
      master copy (no separate fp32 master); gradients have the weights' dtype;
      gradient accumulation over micro-steps or pipeline micro-batches keeps one more
      weight-sized buffer (``accu_grads``); the parallel optimizer (``optimizer`` =
      level1, ``grads`` = level2, ``params`` = level3) stores a 1/d shard of every
      weight above ``shard_threshold`` bytes, its gradient shard and optimizer states,
      and all-gathers the weights for use (in the compute dtype when the weights are
      cast); level1/level2 keep the gathered copy from forward to backward, level3 and
      ``comm_recompute`` gather again in backward and keep about two layers at a time.
    * ``megatron``: 16-bit weights with an fp32 master copy and fp32 main gradients
      (18 B/param for bf16, 20 for fp16); the distributed optimizer (ZeRO-1) shards
      master weights and Adam states only.
    * ``deepspeed``: DeepSpeed's own estimators (``estimate_zero2_model_states_mem_needs``,
      ``..._zero3_...``): 16-bit weights and gradients, fp32 master, Adam m/v and an fp32
      gradient partition (18 B/param sharded); ZeRO-3 keeps two gathered blocks.
    * ``zero-paper``: Rajbhandari et al. 2020 (arXiv 1910.02054) Figure 1: (2 + 2 + K)
      B/param with K = 12, partitioned per stage P_os / P_os+g / P_os+g+p.

    Selective recompute has two meanings: Megatron / Korthikanti et al. recompute the
    attention core only; MindFormers' ``select_recompute: True`` (and msdoctor's trainer)
    also recompute the FFN activation (``feed_forward.mul``, ``feed_forward.w1.activation.silu``,
    the default patterns of ``LayerSetting`` in mindformers/models/utils.py).
    ``selective_ffn`` picks one (None: True for mindspore, False otherwise).

    Attributes:
        micro_batch_num: micro-batches per step through the pipeline (pp > 1; Megatron:
            its number of micro-batches). Stage i keeps min(pp - i, micro_batch_num) in flight.
        optimizer_sharding: none | optimizer (ZeRO-1, MindSpore parallel optimizer,
            Megatron distributed optimizer) | grads (+ZeRO-2) | params (+ZeRO-3).
        optimizer_shard_size: devices a state is sharded over (None: data x context parallel).
        precision: compute (activation) dtype.
        param_dtype: dtype of the stored weights.
        master_weights, grad_dtype: None means the framework's convention (see above).
        optimizer_state_dtype: Adam m/v dtype (MindSpore's plain AdamWeightDecay keeps
            them in the weights' dtype; FP32StateAdamWeightDecay and AdamW in fp32).
        recompute_layers: per pipeline stage, how many layers full recompute applies to
            (MindFormers ``recompute: [4, 0]``); None: every layer when recompute is full.
        accumulation_buffer: None: MindSpore keeps one when grad_accumulation > 1 or pp > 1.
        accumulation_shard: MindSpore gradient_accumulation_shard (buffer sharded with
            the parallel optimizer).
        comm_recompute: MindSpore parallel_optimizer_comm_recompute (gather weights again
            in backward instead of keeping them).
        embedding_tp_sharded: False for MindFormers ``vocab_emb_dp: True``.
        stage_offsets: MindFormers ``offset``: extra layers per stage (sums to 0 when
            the layers divide evenly).
        pipeline_scheduler: 1f1b | gpipe | seqpipe (MindSpore ``pipeline_config.pipeline_scheduler``)
            | interleaved; seqpipe splits each micro-batch's sequence into ``seq_split_num``
            chunks that go through the pipeline as units and keeps a K/V cache per layer.
        selective_layers: per stage, layers with selective recompute (MindFormers
            ``select_recompute: [n, ...]``); None: every layer that is not fully recomputed
            when recompute is selective, or the layers a full-recompute list leaves over when
            ``recompute_layers`` is set with selective on.
        comm_recompute_layers: per stage, layers whose gathered norm outputs are recomputed
            (MindFormers ``select_comm_recompute``); None: none.
        shard_threshold: parameters smaller than this many bytes are not sharded by the
            parallel optimizer (MindSpore ``parallel_optimizer_threshold``, 64 KB).
    """

    seq_length: int
    micro_batch_size: int = 1
    grad_accumulation: int = 1
    data_parallel: int = 1
    tensor_parallel: int = 1
    pipeline_stages: int = 1
    context_parallel: int = 1
    micro_batch_num: int = 1
    virtual_pipeline_chunks: int = 1
    sequence_parallel: bool = False
    optimizer_sharding: str = "none"
    optimizer_shard_size: Optional[int] = None
    precision: str = "bf16"
    param_dtype: str = "fp32"
    master_weights: Optional[bool] = None
    grad_dtype: Optional[str] = None
    optimizer: str = "adamw"
    optimizer_state_dtype: str = "fp32"
    recompute: str = "none"
    recompute_layers: Optional[tuple] = None
    flash_attention: bool = True
    accumulation_buffer: Optional[bool] = None
    accumulation_shard: bool = False
    comm_recompute: bool = False
    embedding_tp_sharded: bool = True
    stage_offsets: Optional[tuple] = None
    framework: str = "mindspore"
    pipeline_scheduler: str = "1f1b"
    seq_split_num: int = 1
    selective_ffn: Optional[bool] = None
    selective_layers: Optional[tuple] = None
    comm_recompute_layers: Optional[tuple] = None
    shard_threshold: int = 64 * 1024
    expert_parallel: int = 1

    @property
    def devices(self) -> int:
        return self.data_parallel * self.tensor_parallel * self.pipeline_stages * self.context_parallel

    @property
    def ffn_selective(self) -> bool:
        return self.selective_ffn if self.selective_ffn is not None else self.framework == "mindspore"

    @property
    def pipeline_micro_batches(self) -> int:
        return self.micro_batch_num if self.pipeline_stages > 1 else 1

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step: micro-batch x data parallel x accumulation x pipeline micro-batches."""
        return self.micro_batch_size * self.data_parallel * self.grad_accumulation * self.pipeline_micro_batches

    def with_(self, **changes: Any) -> "Setup":
        return replace(self, **changes)


@dataclass(frozen=True)
class Device:
    """What the estimate is compared against.

    Attributes:
        target: Ascend | GPU | CPU.
        capacity: usable bytes per device (None: unknown).
        reserve: bytes the runtime takes that the estimate must count (CANN, CUDA
            context and communication buffers); 0 when the capacity is already a
            framework pool cap such as MindSpore's max_device_memory.
        reserve_why: one line on where the reserve comes from.
        fragmentation: allocator margin, as a fraction of the allocated bytes.
        source: where the capacity came from, for a person.
        count: devices available (None: unknown); bounds the layouts suggested.
        notes: anything a person should know about the capacity.
    """

    target: str = "GPU"
    capacity: Optional[int] = None
    reserve: int = 0
    reserve_why: str = ""
    fragmentation: float = 0.05
    source: str = "unknown"
    count: Optional[int] = None
    notes: tuple = ()


@dataclass(frozen=True)
class Component:
    """One line of the breakdown: bytes per device and the formula with values substituted."""

    key: str
    label: str
    bytes: int
    why: str
    kind: str = "state"  # state | activation | overhead

    @property
    def gib(self) -> float:
        return self.bytes / GIB


MODEL_STATE_KEYS = ("parameters", "gradients", "master_weights", "optimizer_states", "accumulation")


@dataclass(frozen=True)
class StageTotal:
    stage: int
    layers: int
    params: int
    total: int


@dataclass(frozen=True)
class Estimate:
    """Per-device memory on the most loaded pipeline stage."""

    model: ModelShape
    setup: Setup
    device: Device
    stage: int
    components: tuple
    params_total: int
    params_on_device: int
    stages: tuple = ()
    notes: tuple = field(default=())

    @property
    def total(self) -> int:
        return sum(c.bytes for c in self.components)

    @property
    def model_states(self) -> int:
        """Weights, gradients, master weights, optimizer states and accumulation buffer: the ZeRO
        paper's "model states" (no gathered working copies, no activations)."""
        return sum(self.bytes_of(k) for k in MODEL_STATE_KEYS)

    @property
    def allocated(self) -> int:
        """What the framework's allocator hands out (no runtime reserve, no fragmentation):
        the quantity torch's max_memory_allocated and MindSpore's "Used peak memory" measure."""
        return sum(c.bytes for c in self.components if c.kind != "overhead")

    def component(self, key: str) -> Component:
        for c in self.components:
            if c.key == key:
                return c
        raise KeyError(key)

    def bytes_of(self, key: str) -> int:
        for c in self.components:
            if c.key == key:
                return c.bytes
        return 0

    @property
    def capacity(self) -> Optional[int]:
        return self.device.capacity

    @property
    def headroom(self) -> Optional[int]:
        return None if self.capacity is None else self.capacity - self.total

    @property
    def headroom_fraction(self) -> Optional[float]:
        if self.capacity is None or self.capacity <= 0:
            return None
        return (self.capacity - self.total) / self.capacity

    @property
    def unconfirmed(self) -> tuple:
        """(component key, label, bytes, why) of the terms no hardware measurement has confirmed."""
        return tuple(
            (c.key, c.label, c.bytes, UNCONFIRMED[c.key])
            for c in self.components
            if c.key in UNCONFIRMED and c.bytes > 0
        )

    @property
    def low(self) -> int:
        """The low end of the band: the total without the unconfirmed terms."""
        return self.total - sum(u[2] for u in self.unconfirmed)

    @property
    def verdict(self) -> str:
        """fits | tight (under 10% headroom, or over the capacity only by unconfirmed terms: may not
        fit) | does not fit (even the band's low end is over) | unknown (no capacity)."""
        return band_verdict(self.low, self.total, self.capacity)

    @property
    def may_not_fit(self) -> bool:
        """Inside the band: the high end is over the capacity, the low end is not."""
        return self.capacity is not None and self.low <= self.capacity < self.total


#: terms of the estimate that no hardware measurement has confirmed: what each one assumes. The
#: band's low end leaves them out; "does not fit" is said only when even the low end is over.
UNCONFIRMED = {
    "accumulation": "a full-size accumulation buffer resident next to full-size gradients (MindSpore may "
    "accumulate into the gradients in place)",
    "recompute_working_set": "one recomputed layer's working set on top of the stored activations",
    "sp_gathered_inputs": "sequence parallel's all-gathered layer inputs kept whole until backward (MindSpore graph "
    "mode may free them and gather again, as Megatron does)",
    "fragmentation": "the allocator fragmentation margin",
}

#: how to settle a verdict inside the band (MindFormers docs: DryRun memory estimation; MindSpore
#: environment variable MS_SIMULATION_LEVEL, docs "environment variables" and "dry run")
MEASURE_HINT = (
    "measure it: run the job once with MS_SIMULATION_LEVEL=1 (MindSpore's DryRun: it compiles the "
    "graph for one rank without devices) and read the peak it logs ('Actual peak memory usage' / "
    "'Used peak memory'), or run a few steps and read the peak with the profiler"
)


def band_verdict(low: int, total: int, capacity: Optional[int]) -> str:
    if capacity is None:
        return "unknown"
    if low > capacity:
        return "does not fit"
    return verdict_of(total, capacity) if total <= capacity else "tight"


def verdict_of(total: int, capacity: Optional[int]) -> str:
    if capacity is None:
        return "unknown"
    if total > capacity:
        return "does not fit"
    if capacity - total < TIGHT_HEADROOM * capacity:
        return "tight"
    return "fits"
