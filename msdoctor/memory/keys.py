"""Key catalogues of the config formats the estimator reads, so unknown keys can be listed.

A key listed here is known: either read by the estimator or known not to change the
memory estimate. A key not listed is reported with a did-you-mean. The alias tables say
which key names (legacy ``LlamaConfig`` / ``ChatGLM2Config`` / ``InternLM2Config`` and the mcore
``TransformerConfig``) feed each estimator field, and the family tables give the defaults
each config class uses when a key is absent. Sources: mindspore-lab/mindformers r1.5.0
``configs/llama2/*.yaml``, ``configs/glm3/*.yaml``, ``mindformers/models/llama/llama_config.py``,
``mindformers/models/glm2/glm2_config.py``, ``mindformers/modules/transformer/transformer.py``,
r1.7.0 ``configs/qwen3/*.yaml`` and ``mindformers/parallel_core/transformer_config.py``, docs
``feature/configuration.md`` and ``feature/memory_optimization.md``; Hugging Face
``PretrainedConfig`` and the per-model ``configuration_*.py`` of transformers 4.57.1.
"""

from __future__ import annotations

from typing import Any

# MindFormers: top level ---------------------------------------------------------------
MF_TOP = frozenset(
    """
seed output_dir load_checkpoint load_ckpt_format src_strategy_path_or_dir auto_trans_ckpt only_save_strategy
resume_training run_mode use_legacy use_parallel trainer runner_config optimizer lr_schedule train_dataset
train_dataset_task eval_dataset eval_dataset_task do_eval eval_step_interval eval_epoch_interval parallel
parallel_config micro_batch_interleave_num recompute_config callbacks eval_callbacks context model processor
metric runner_wrapper auto_tune filepath_prefix autotune_per_step profile profile_start_step profile_stop_step
init_start_profile profile_communication profile_memory profile_level profile_rank_ids profile_pipeline
profile_output layer_scale layer_decay lr_scale_factor remote_save_url moe_config swap_config monitor_config
tensorboard load_ckpt_async transform_process_num ignore_data_skip data_skip_steps stop_step resume_by_meta
device_num local_rank model_name check_for_nan_in_loss_and_grad print_separate_loss train_precision_sync
infer_precision_sync postprocess_use_numpy use_graceful_exit ckpt_use_legacy_format exclude_cann_cpu mstx
src_strategy_path_or_dir pipeline_config pretrained_model_dir profiler_level generation_config
""".split()
)

#: top-level sections whose content changes the memory estimate
MF_RELEVANT = ("model", "parallel_config", "parallel", "recompute_config", "runner_config", "context", "optimizer")

MF_MODEL = frozenset("model_config arch".split())

MF_MODEL_CONFIG = frozenset(
    """
type batch_size seq_length hidden_size num_layers num_heads n_kv_heads vocab_size multiple_of ffn_dim_multiplier
intermediate_size rms_norm_eps bos_token_id eos_token_id pad_token_id ignore_token_id compute_dtype
layernorm_compute_type softmax_compute_type rotary_dtype param_init_type embedding_init_type residual_dtype
use_past scaling_factor extend_method use_flash_attention use_attn_mask_compression use_ring_attention
use_eod_attn_mask_compression offset checkpoint_name_or_path repetition_penalty max_decode_length top_k top_p
do_sample pp_interleave_num virtual_pipeline_model_parallel_size qkv_concat qkv_has_bias use_rope_slice fine_grain_interleave parallel_decoding_params
block_size num_blocks is_dynamic theta max_position_embedding tie_word_embeddings init_method_std fused_rms_norm
use_fused_swiglu use_fused_rope use_rope_self_define rotary_pct use_past_shard is_flash_attention_seq_parallel
output_hidden_states return_dict_in_generate chunk_prefill quant_config post_process num_experts
num_hidden_layers num_attention_heads num_key_value_heads head_dim hidden_act max_position_embeddings
initializer_range use_cache rope_theta rope_scaling attention_bias add_bias_linear attention_dropout
hidden_dropout input_sliced_sig untie_embeddings_and_output_weights position_embedding_type qk_layernorm
use_contiguous_weight_layout_attention params_dtype layernorm_compute_dtype softmax_compute_dtype
fp32_residual_connection model_type architectures normalization gated_linear_unit add_qkv_bias
mlp_has_gate ffn_concat kv_channels padded_vocab_size ffn_hidden_size multi_query_attention multi_query_group_num
layernorm_epsilon rmsnorm apply_residual_connection_post_layernorm post_layer_norm bias_dropout_fusion
apply_query_key_layer_scaling attention_softmax_in_fp32 quantization_bit pre_seq_len prefix_projection
mlp_concat rope_ratio has_bias auto_register emb_dropout_prob rotary_emb_base num_query_groups use_legacy
moe_config expert_num n_routed_experts num_moe_experts num_experts_chosen num_experts_per_tok moe_router_topk
moe_intermediate_size moe_ffn_hidden_size n_shared_experts shared_expert_num moe_shared_expert_intermediate_size
first_k_dense_replace q_lora_rank kv_lora_rank qk_nope_head_dim qk_head_dim qk_rope_head_dim qk_pos_emb_head_dim
v_head_dim mtp_depth num_nextn_predict_layers mtp_num_layers multi_latent_attention moe_grouped_gemm
router_dense_type moe_router_dtype moe_router_pre_softmax moe_token_drop_policy routed_scaling_factor
router_aux_loss_coef moe_aux_loss_coeff moe_router_load_balancing_type norm_topk_prob
""".split()
)

MF_PARALLEL_CONFIG = frozenset(
    """
data_parallel model_parallel pipeline_stage context_parallel micro_batch_num use_seq_parallel vocab_emb_dp
gradient_aggregation_group optimizer_shard expert_parallel context_parallel_algo ulysses_degree_in_cp mem_coeff
seq_split_num select_recompute recompute use_sep_parallel
data_parallel_size tensor_model_parallel_size pipeline_model_parallel_size context_parallel_size
expert_model_parallel_size virtual_pipeline_model_parallel_size sequence_parallel
""".split()
)

MF_PARALLEL = frozenset(
    """
parallel_mode gradients_mean enable_alltoall full_batch search_mode enable_parallel_optimizer
strategy_ckpt_save_file strategy_ckpt_load_file strategy_ckpt_config parallel_optimizer_config dataset_strategy
pipeline_config loss_repeated_mean device_num dump_local_norm dump_device_local_norm auto_pipeline
""".split()
)

MF_PIPELINE = frozenset("pipeline_interleave pipeline_scheduler".split())

MF_OPTIMIZER_PARALLEL = frozenset(
    """
gradient_accumulation_shard parallel_optimizer_threshold optimizer_weight_shard_size optimizer_level
""".split()
)

MF_RECOMPUTE = frozenset(
    """
recompute select_recompute parallel_optimizer_comm_recompute mp_comm_recompute recompute_slice_activation
select_comm_recompute select_recompute_exclude select_comm_recompute_exclude
""".split()
)

MF_RUNNER = frozenset(
    "epochs batch_size sink_mode sink_size gradient_accumulation_steps initial_epoch initial_step".split()
)

MF_CONTEXT = frozenset(
    """
mode device_target max_call_depth max_device_memory save_graphs save_graphs_path device_id memory_optimize_level
jit_config ascend_config enable_graph_kernel graph_kernel_flags runtime_num_threads mempool_block_size
affinity_cpu_list deterministic pynative_synchronize enable_compile_cache compile_cache_path variable_memory_max_size
max_device_memory_ratio
""".split()
)

MF_OPTIMIZER = frozenset("type beta1 beta2 betas eps learning_rate weight_decay momentum loss_scale".split())

MF_SECTIONS = {
    ("model",): MF_MODEL,
    ("model", "model_config"): MF_MODEL_CONFIG,
    ("parallel_config",): MF_PARALLEL_CONFIG,
    ("parallel",): MF_PARALLEL,
    ("parallel", "parallel_optimizer_config"): MF_OPTIMIZER_PARALLEL,
    ("parallel", "pipeline_config"): MF_PIPELINE,
    ("recompute_config",): MF_RECOMPUTE,
    ("runner_config",): MF_RUNNER,
    ("context",): MF_CONTEXT,
    ("optimizer",): MF_OPTIMIZER,
}

# Hugging Face config.json ---------------------------------------------------------------
HF_READ = frozenset(
    """
num_hidden_layers n_layer num_layers hidden_size n_embd d_model num_attention_heads n_head num_key_value_heads
num_kv_heads multi_query intermediate_size n_inner ffn_dim vocab_size max_position_embeddings n_positions
seq_length hidden_act activation_function tie_word_embeddings attention_bias mlp_bias bias head_dim torch_dtype
dtype rms_norm_eps layer_norm_eps layer_norm_epsilon attention_dropout hidden_dropout resid_pdrop attn_pdrop
embd_pdrop model_type architectures num_local_experts num_experts n_routed_experts qk_norm num_experts_per_tok
moe_intermediate_size n_shared_experts router_aux_loss_coef output_router_logits router_jitter_noise
first_k_dense_replace shared_expert_intermediate_size q_lora_rank kv_lora_rank qk_nope_head_dim qk_rope_head_dim
v_head_dim num_nextn_predict_layers decoder_sparse_step mlp_only_layers
""".split()
)

HF_IGNORED = frozenset(
    """
bos_token_id eos_token_id pad_token_id sep_token_id decoder_start_token_id transformers_version use_cache
initializer_range initializer_factor rope_theta rope_scaling rope_parameters pretraining_tp partial_rotary_factor
rotary_pct rotary_emb_base use_sliding_window sliding_window max_window_layers layer_types attn_implementation
_name_or_path name_or_path is_decoder is_encoder_decoder add_cross_attention cross_attention_hidden_size
output_attentions output_hidden_states return_dict id2label label2id problem_type num_labels
tokenizer_class prefix task_specific_params torchscript use_bfloat16 pruned_heads chunk_size_feed_forward
finetuning_task scale_attn_weights scale_attn_by_inverse_layer_idx reorder_and_upcast_attn summary_type
summary_use_proj summary_activation summary_proj_to_labels summary_first_dropout n_ctx auto_map
quantization_config bad_words_ids begin_suppress_tokens suppress_tokens forced_bos_token_id forced_eos_token_id
remove_invalid_values exponential_decay_length_penalty max_length min_length do_sample early_stopping
num_beams num_beam_groups diversity_penalty temperature top_k top_p typical_p repetition_penalty
length_penalty no_repeat_ngram_size encoder_no_repeat_ngram_size num_return_sequences
output_scores return_dict_in_generate tie_encoder_decoder torch_compile architectures_map
use_return_dict cache_implementation norm_topk_prob
rope_type original_max_position_embeddings attention_multiplier embedding_multiplier logits_scaling
residual_multiplier
""".split()
)

HF_KNOWN = HF_READ | HF_IGNORED

#: config.json integer fields: estimator field -> key names across model families (first present wins)
HF_INTS = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size",),
    "num_kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "ffn_size": ("intermediate_size", "n_inner", "ffn_dim"),
    "head_dim": ("head_dim",),
    "seq_length": ("max_position_embeddings", "n_positions", "seq_length"),
}
HF_GELU_TYPES = ("gpt2", "gpt_neox", "gptj")  # GeLU when the config names no activation
HF_BIAS_TYPES = ("gpt2", "gpt_neox", "gptj", "gpt_bigcode")  # biases in every linear layer
HF_LEARNED_POSITIONS = ("gpt2", "gpt_bigcode", "opt")  # a learned n_positions x h table
HF_LAYERNORM_EPS = ("layer_norm_eps", "layer_norm_epsilon")  # LayerNorm (weight + bias), else RMSNorm
HF_DROPOUT = ("hidden_dropout", "resid_pdrop", "embd_pdrop")
HF_ATTENTION_DROPOUT = ("attention_dropout", "attn_pdrop")
HF_MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")


# MindFormers: which keys feed which estimator field (first present wins) ----------------------
#: model.model_config integer fields
MF_MODEL_INTS = {
    "num_layers": ("num_layers", "num_hidden_layers"),
    "hidden_size": ("hidden_size",),
    "num_heads": ("num_heads", "num_attention_heads"),
    "vocab_size": ("padded_vocab_size", "vocab_size"),  # ChatGLM2Config names the embedding size padded_vocab_size
    "num_kv_heads": ("n_kv_heads", "num_key_value_heads", "num_query_groups"),
    "head_dim": ("head_dim", "kv_channels"),
    "ffn_size": ("intermediate_size", "ffn_hidden_size"),
    "seq_length": ("seq_length", "max_position_embeddings"),
}
#: ChatGLM2Config: multi_query_group_num KV groups when multi_query_attention (default True, 2 groups)
MF_GLM_KV = ("multi_query_attention", "multi_query_group_num")
#: model_config.type of the ChatGLM configs (ChatGLM2Config, ChatGLM3Config, ChatGLM4Config: mindformers/models/glm2/)
MF_GLM_TYPE = "chatglm"
MF_BIAS_KEYS = ("add_bias_linear", "has_bias")  # every linear layer
MF_QKV_BIAS_KEYS = ("qkv_has_bias", "add_qkv_bias", "attention_bias")  # Q, K, V projections
MF_DTYPE_KEYS = {
    "precision": ("compute_dtype",),
    "param_dtype": ("param_init_type", "params_dtype"),
}
#: keys that only the legacy (use_legacy: True) model configs have
MF_LEGACY_MARKERS = ("num_layers", "num_heads", "param_init_type", "n_kv_heads", "padded_vocab_size")
#: keys that only the mcore TransformerConfig has
MF_MCORE_MARKERS = ("num_hidden_layers", "params_dtype", "untie_embeddings_and_output_weights")

#: parallel_config fields: estimator field -> (key, default)
MF_PARALLEL_INTS = {
    "data_parallel": ("data_parallel", 1),
    "tensor_parallel": ("model_parallel", 1),
    "pipeline_stages": ("pipeline_stage", 1),
    "context_parallel": ("context_parallel", 1),
    "micro_batch_num": ("micro_batch_num", 1),
    "seq_split_num": ("seq_split_num", 1),
}


#: Per config family, the defaults MindFormers applies when the key is absent.
#: legacy: TransformerOpParallelConfig(vocab_emb_dp=True) (mindformers/modules/transformer/transformer.py),
#:   LlamaConfig(tie_word_embeddings=False, param_init_type float16, compute_dtype float16)
#:   (mindformers/models/llama/llama_config.py);
#: mcore: ModelParallelConfig vocab_emb_dp False, and TransformerConfig turns a True into False
#:   ("vocab_emb_dp is not supported in MCore", mindformers/parallel_core/transformer_config.py r1.7.0),
#:   params_dtype float32, compute_dtype bfloat16 (the configs/qwen3 defaults); TransformerConfig
#:   use_flash_attention True and seq_length 4096 (mindformers 2.1.0 parallel_core/transformer_config.py).
MF_FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "legacy": {
        "vocab_emb_dp": True,
        "param_dtype": "fp16",
        "precision": "fp16",
        "tie_embeddings": False,
        "flash_attention": False,
        "seq_length": None,
    },
    "mcore": {
        "vocab_emb_dp": False,
        "param_dtype": "fp32",
        "precision": "bf16",
        "tie_embeddings": False,
        "flash_attention": True,
        "seq_length": 4096,
    },
}

#: MindFormers recompute_config: select_recompute True means these patterns (LayerSetting's
#: default_patterns, mindformers/models/utils.py r1.5.0); select_comm_recompute True: the norms.
MF_SELECT_DEFAULT = (r"feed_forward\.mul", r"feed_forward\.w1\.activation\.silu")
MF_SELECT_COMM_DEFAULT = (r".*\.norm",)
#: a select_recompute pattern that names one of these recomputes the FFN activation
MF_FFN_PATTERN_WORDS = ("mul", "silu", "activat", "gelu", "swiglu")

#: pipeline_config.pipeline_scheduler values MindSpore accepts (mindspore/context.py 2.7:
#: gpipe/1f1b/seqpipe/seqvpp/seqsmartvpp/zero_bubble_v) -> what the estimate models
MF_SCHEDULERS = {
    "1f1b": "1f1b",
    "gpipe": "gpipe",
    "seqpipe": "seqpipe",
    "seqvpp": "seqpipe",
    "seqsmartvpp": "seqpipe",
    "zero_bubble_v": "1f1b",
}


# Hugging Face: tie_word_embeddings when config.json does not say (the config class default) ----
#: transformers 4.57.1 models/<type>/configuration_<type>.py; PretrainedConfig's own default is True.
#: tests/test_memory_mindformers.py reads these defaults from the installed transformers' source.
HF_TIE_DEFAULT = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "qwen2_moe": False,
    "qwen3": False,
    "qwen3_moe": False,
    "phi": False,
    "phi3": False,
    "olmo": False,
    "olmo2": False,
    "glm": False,
    "glm4": False,
    "deepseek_v2": False,
    "deepseek_v3": False,
    "gemma": True,
    "gemma2": True,
    "gemma3_text": True,
}
#: remote-code models transformers does not ship (their config.json files say it when they tie)
HF_TIE_DEFAULT_REMOTE = {"internlm2": False, "chatglm": False, "baichuan": False}
HF_TIE_FALLBACK = True  # PretrainedConfig.__init__ tie_word_embeddings=True
#: model types whose attention always has Q, K, V biases (transformers Qwen2Attention: bias=True on q/k/v)
HF_QKV_BIAS = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl")


# MindFormers aliases for MoE, MLA and MTP (one name per meaning; the first present wins) -----------
#: MindFormers' own alias table, ``COMMON_CONFIG_MAPPING`` in mindformers/parallel_core/transformer_config_utils.py
#: (mindspore-lab/mindformers v1.7.0): mcore model_config keys and their legacy / Hugging Face spellings map to one
#: TransformerConfig field. The legacy ``moe_config`` section (MoEConfig in
#: mindformers/modules/transformer/moe.py, v1.5.0) uses expert_num, num_experts_chosen, shared_expert_num,
#: moe_intermediate_size and first_k_dense_replace.
MF_MOE_ALIASES = {
    "num_experts": ("expert_num", "n_routed_experts", "num_experts", "num_moe_experts"),
    "experts_per_token": ("num_experts_chosen", "num_experts_per_tok", "moe_router_topk"),
    "expert_ffn_size": ("moe_intermediate_size", "moe_ffn_hidden_size"),
    "shared_experts": ("n_shared_experts", "shared_expert_num"),
    "shared_ffn_size": ("moe_shared_expert_intermediate_size",),
    "dense_layers": ("first_k_dense_replace",),
    "capacity_factor": ("capacity_factor", "moe_expert_capacity_factor"),
}
MF_MLA_ALIASES = {
    "q_lora_rank": ("q_lora_rank",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim", "qk_head_dim"),
    "qk_rope_head_dim": ("qk_rope_head_dim", "qk_pos_emb_head_dim"),
    "v_head_dim": ("v_head_dim",),
}
MF_MTP_ALIASES = ("mtp_depth", "num_nextn_predict_layers", "mtp_num_layers")
#: parallel_config: the mcore ModelParallelConfig names are aliases of the legacy ones
#: (COMMON_CONFIG_MAPPING; both at once is MindFormers' "Multiple configurations provided for the same setting")
MF_PARALLEL_ALIASES = {
    "data_parallel": ("data_parallel", "data_parallel_size"),
    "tensor_parallel": ("model_parallel", "tensor_model_parallel_size"),
    "pipeline_stages": ("pipeline_stage", "pipeline_model_parallel_size"),
    "context_parallel": ("context_parallel", "context_parallel_size"),
    "expert_parallel": ("expert_parallel", "expert_model_parallel_size"),
}
#: virtual pipeline chunks and sequence parallel under their legacy and mcore names (COMMON_CONFIG_MAPPING)
MF_VPP_ALIASES = ("pp_interleave_num", "virtual_pipeline_model_parallel_size")
MF_SEQ_PARALLEL_ALIASES = ("use_seq_parallel", "sequence_parallel")
#: Hugging Face config.json spellings (transformers configuration_deepseek_v3.py, configuration_qwen2_moe.py,
#: configuration_qwen3_moe.py, configuration_mixtral.py)
HF_MOE_ALIASES = {
    "num_experts": ("n_routed_experts", "num_experts", "num_local_experts"),
    "experts_per_token": ("num_experts_per_tok",),
    "expert_ffn_size": ("moe_intermediate_size",),
    "shared_experts": ("n_shared_experts",),
    "shared_ffn_size": ("shared_expert_intermediate_size",),
    "dense_layers": ("first_k_dense_replace",),
}
HF_MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
HF_MTP_KEYS = ("num_nextn_predict_layers",)
#: Qwen2MoeConfig / Qwen3MoeConfig: a sparse MLP every decoder_sparse_step layers, except mlp_only_layers
HF_SPARSE_STEP = ("decoder_sparse_step",)
HF_MLP_ONLY_LAYERS = ("mlp_only_layers",)
