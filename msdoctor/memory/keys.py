"""Key catalogues of the config formats the estimator reads, so unknown keys can be listed.

A key listed here is known: either read by the estimator or known not to change the
memory estimate. A key not listed is reported with a did-you-mean. Sources:
mindspore-lab/mindformers r1.5.0 ``configs/llama2/pretrain_llama2_{7b,13b}.yaml`` and
``mindformers/models/llama/llama_config.py``, master ``configs/qwen3/pretrain_qwen3_32b_4k.yaml``,
docs ``feature/configuration.md`` and ``feature/memory_optimization.md`` (research/memory.md
7.2-7.4); Hugging Face ``PretrainedConfig`` and the Llama / Qwen2 / Mistral / GPT-2 configs
of transformers 4.57.
"""

from __future__ import annotations

# MindFormers: top level ---------------------------------------------------------------
MF_TOP = frozenset("""
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
src_strategy_path_or_dir pipeline_config
""".split())

#: top-level sections whose content changes the memory estimate
MF_RELEVANT = ("model", "parallel_config", "parallel", "recompute_config", "runner_config", "context", "optimizer")

MF_MODEL = frozenset("model_config arch".split())

MF_MODEL_CONFIG = frozenset("""
type batch_size seq_length hidden_size num_layers num_heads n_kv_heads vocab_size multiple_of ffn_dim_multiplier
intermediate_size rms_norm_eps bos_token_id eos_token_id pad_token_id ignore_token_id compute_dtype
layernorm_compute_type softmax_compute_type rotary_dtype param_init_type embedding_init_type residual_dtype
use_past scaling_factor extend_method use_flash_attention use_attn_mask_compression use_ring_attention
use_eod_attn_mask_compression offset checkpoint_name_or_path repetition_penalty max_decode_length top_k top_p
do_sample pp_interleave_num qkv_concat qkv_has_bias use_rope_slice fine_grain_interleave parallel_decoding_params
block_size num_blocks is_dynamic theta max_position_embedding tie_word_embeddings init_method_std fused_rms_norm
use_fused_swiglu use_fused_rope use_rope_self_define rotary_pct use_past_shard is_flash_attention_seq_parallel
output_hidden_states return_dict_in_generate chunk_prefill quant_config post_process num_experts
num_hidden_layers num_attention_heads num_key_value_heads head_dim hidden_act max_position_embeddings
initializer_range use_cache rope_theta rope_scaling attention_bias add_bias_linear attention_dropout
hidden_dropout input_sliced_sig untie_embeddings_and_output_weights position_embedding_type qk_layernorm
use_contiguous_weight_layout_attention params_dtype layernorm_compute_dtype softmax_compute_dtype
fp32_residual_connection model_type architectures normalization gated_linear_unit add_qkv_bias
mlp_has_gate ffn_concat kv_channels
""".split())

MF_PARALLEL_CONFIG = frozenset("""
data_parallel model_parallel pipeline_stage context_parallel micro_batch_num use_seq_parallel vocab_emb_dp
gradient_aggregation_group optimizer_shard expert_parallel context_parallel_algo ulysses_degree_in_cp mem_coeff
seq_split_num select_recompute recompute use_sep_parallel
""".split())

MF_PARALLEL = frozenset("""
parallel_mode gradients_mean enable_alltoall full_batch search_mode enable_parallel_optimizer
strategy_ckpt_save_file strategy_ckpt_load_file strategy_ckpt_config parallel_optimizer_config dataset_strategy
pipeline_config loss_repeated_mean device_num dump_local_norm dump_device_local_norm auto_pipeline
""".split())

MF_OPTIMIZER_PARALLEL = frozenset("""
gradient_accumulation_shard parallel_optimizer_threshold optimizer_weight_shard_size optimizer_level
""".split())

MF_RECOMPUTE = frozenset("""
recompute select_recompute parallel_optimizer_comm_recompute mp_comm_recompute recompute_slice_activation
select_comm_recompute select_recompute_exclude select_comm_recompute_exclude
""".split())

MF_RUNNER = frozenset("epochs batch_size sink_mode sink_size gradient_accumulation_steps initial_epoch initial_step".split())

MF_CONTEXT = frozenset("""
mode device_target max_call_depth max_device_memory save_graphs save_graphs_path device_id memory_optimize_level
jit_config ascend_config enable_graph_kernel graph_kernel_flags runtime_num_threads mempool_block_size
affinity_cpu_list deterministic pynative_synchronize enable_compile_cache compile_cache_path variable_memory_max_size
max_device_memory_ratio
""".split())

MF_OPTIMIZER = frozenset("type beta1 beta2 betas eps learning_rate weight_decay momentum loss_scale".split())

MF_SECTIONS = {
    ("model",): MF_MODEL,
    ("model", "model_config"): MF_MODEL_CONFIG,
    ("parallel_config",): MF_PARALLEL_CONFIG,
    ("parallel",): MF_PARALLEL,
    ("parallel", "parallel_optimizer_config"): MF_OPTIMIZER_PARALLEL,
    ("recompute_config",): MF_RECOMPUTE,
    ("runner_config",): MF_RUNNER,
    ("context",): MF_CONTEXT,
    ("optimizer",): MF_OPTIMIZER,
}

# Hugging Face config.json ---------------------------------------------------------------
HF_READ = frozenset("""
num_hidden_layers n_layer num_layers hidden_size n_embd d_model num_attention_heads n_head num_key_value_heads
num_kv_heads multi_query intermediate_size n_inner ffn_dim vocab_size max_position_embeddings n_positions
seq_length hidden_act activation_function tie_word_embeddings attention_bias mlp_bias bias head_dim torch_dtype
dtype rms_norm_eps layer_norm_eps layer_norm_epsilon attention_dropout hidden_dropout resid_pdrop attn_pdrop
embd_pdrop model_type architectures num_local_experts num_experts n_routed_experts qk_norm
""".split())

HF_IGNORED = frozenset("""
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
use_return_dict cache_implementation mlp_only_layers decoder_sparse_step norm_topk_prob
rope_type original_max_position_embeddings attention_multiplier embedding_multiplier logits_scaling
residual_multiplier
""".split())

HF_KNOWN = HF_READ | HF_IGNORED
HF_MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
