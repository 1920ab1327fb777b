"""One reading of a training YAML: the training-config check's batch, layout, shape and dtype values are the
training setup's, and the cases where its old reader and the setup's disagreed are settled from MindFormers' source.

The switch was proven by equivalence (commit message): main's resolver against the setup-backed one on every YAML
under tests/data and training/configs and 18 mutations of each (640 readings): identical but for the one case
settled below (an mcore config without seq_length).
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from pathlib import Path

import pytest

from msdoctor.domain.run_plan import SHARED, resolve
from msdoctor.domain.training_setup import read
from msdoctor.facts.config import load_config

DATA = Path(__file__).parent / "data"
YAMLS = sorted(
    p
    for p in DATA.rglob("*.yaml")
    if p.is_file() and ("memory" in p.parts[len(DATA.parts)] or "training_config" in p.parts)
)
YAMLS += sorted((Path(__file__).parent.parent / "training" / "configs").glob("*.yaml"))


def _training(path: Path):
    try:
        cfg = load_config(path)
    except Exception:  # noqa: BLE001 - not a config file (a fixture of another kind)
        return None
    return cfg if cfg.kind in ("msdoctor", "mindformers") else None


def test_the_corpus_is_real():
    assert sum(1 for p in YAMLS if _training(p) is not None) >= 30


@pytest.mark.parametrize("path", YAMLS, ids=[str(p) for p in YAMLS])
def test_training_config_takes_every_shared_value_from_the_setup(path):
    """Change each shared value in the setup: the training-config reading follows (it reads no second copy)."""
    cfg = _training(path)
    if cfg is None:
        pytest.skip("not a training YAML")
    setup = read(cfg)
    assert setup.layout is not None and setup.run is not None
    layout = replace(
        setup.layout,
        data_parallel=77,
        tensor_parallel=5,
        pipeline_stages=3,
        micro_batch_size=9,
        micro_batch_num=11,
        grad_accumulation=13,
        seq_length=1234,
        context_parallel=7,
        virtual_pipeline_chunks=2,
        precision="fp32",
        param_dtype="bf16",
    )
    model = replace(setup.model, num_heads=96, num_layers=71, num_kv_heads=12) if setup.model else None
    res = resolve(cfg, replace(setup, layout=layout, model=model))
    got = {name: getattr(res, name).value for name in SHARED if getattr(res, name) is not None}
    assert got["data_parallel"] == 77 and got["tensor_parallel"] == 5 and got["pipeline_stages"] == 3
    assert got["micro_batch"] == 9 and got["micro_batch_num"] == 11 and got["grad_accumulation"] == 13
    assert got["seq_length"] == 1234 and got["vpp"] == 2 and got["param_dtype"] == "bf16"
    if cfg.kind == "mindformers":
        assert got["context_parallel"] == 7 and got["compute_dtype"] == "fp32"
    if model is not None:
        assert (got["num_heads"], got["num_layers"], got["num_kv_heads"]) == (96, 71, 12)
    # every value that came from the file says the setup's key and line
    for name, fieldname in SHARED.items():
        val, o = getattr(res, name), setup.origin(fieldname)
        if val is not None and o is not None and val.given and cfg.kind == "mindformers":
            assert (val.keys, val.line) == (o.keys, o.line), name


MCORE_QWEN3 = DATA / "memory_fresh" / "mindformers" / "v1.7.0__pretrain_qwen3_30b_a3b_4k.yaml"


def test_mcore_without_seq_length_is_4096_not_max_position_embeddings():
    """Settled: the old training-config reader took max_position_embeddings (40960) as the sequence of this mcore
    config; MindFormers does not (COMMON_CONFIG_MAPPING maps seq_length to seq_length only, and no key to it from
    max_position_embeddings: mindformers/parallel_core/transformer_config_utils.py, mindspore-lab/mindformers
    v1.7.0), so TransformerConfig's default 4096 holds (the file's dataset says seq_length 4096 too)."""
    assert "seq_length" not in MCORE_QWEN3.read_text().split("model_config:")[1].split("\n\n")[0]
    setup = read(load_config(MCORE_QWEN3))
    assert setup.layout.seq_length == 4096 and setup.run.seq_length.value == 4096
    assert setup.run.seq_length.keys == ("model", "model_config", "seq_length") and not setup.run.seq_length.given


GLM2 = DATA / "training_config" / "mindformers" / "r1.3.0" / "configs" / "glm2" / "run_glm2_6b_finetune_2k_800_32G.yaml"


def test_glm2_tensor_parallel_over_two_kv_groups_is_estimated_not_refused():
    """Settled: memory-fit refused model_parallel 8 over multi_query_group_num 2 ("must divide the KV heads") while
    training-config warned. ChatGLM2 projects Q, K and V with one fused query_key_value matrix sharded as a whole
    (mindformers/models/glm2/glm2_transformer.py), and MindFormers ships this config for one Atlas 800 (r1.3.0
    docs/model_cards/glm2.md): the job runs, so the estimate is made."""
    setup = read(load_config(GLM2))
    assert setup.ok, setup.problems
    assert setup.model.kv_heads == 2 and setup.model.fused_qkv and setup.layout.tensor_parallel == 8
    assert setup.run.num_kv_heads.value == 2


def test_glm_kv_groups_follow_chatglm2config(tmp_path):
    """ChatGLM2Config (mindformers/models/glm2/glm2_config.py): multi_query_attention defaults to True with
    multi_query_group_num 2, and n_kv_heads = multi_query_group_num only when multi_query_attention is on."""
    text = GLM2.read_text()
    absent = tmp_path / "absent.yaml"
    absent.write_text(
        text.replace("    multi_query_attention: True\n", "").replace("    multi_query_group_num: 2\n", "")
    )
    off = tmp_path / "off.yaml"
    off.write_text(text.replace("    multi_query_attention: True\n", "    multi_query_attention: False\n"))
    assert read(load_config(absent)).model.kv_heads == 2  # both defaults: ChatGLM2Config
    assert read(load_config(off)).model.kv_heads == 32  # no multi-query: every head has its K and V


# -- the device target and count of a MindFormers YAML (the device-target check, the preflight) ---------------------
MF_YAMLS = [p for p in YAMLS if (_training(p) or SimpleNamespace(kind="")).kind == "mindformers"]


@pytest.mark.parametrize("path", MF_YAMLS, ids=[str(p) for p in MF_YAMLS])
def test_device_count_and_target_are_the_setups(path):
    """ConfigFacts.device_num / devices_per_node / device_target (what the device-target check wants of this
    node) are the training setup's layout and target, not a second reading of parallel_config and context.
    Proven by equivalence when switched (commit message): main's reading against this one on every YAML under
    tests/data and training/configs and 15 mutations of each (917 readings), identical but for quoted numbers,
    settled below."""
    cfg = _training(path)
    setup = cfg.setup
    assert setup is not None and setup.layout is not None
    lay = setup.layout
    assert cfg.device_num == lay.data_parallel * lay.tensor_parallel * lay.pipeline_stages * lay.context_parallel
    cfg.__dict__["_setup"] = replace(
        setup,
        layout=replace(lay, data_parallel=77, tensor_parallel=5, pipeline_stages=3, context_parallel=7),
        target="GPU",
    )
    assert cfg.device_num == cfg.devices_per_node == 77 * 5 * 3 * 7 and cfg.device_target == "GPU"


def test_one_reading_per_run_the_fact_is_the_configs_setup():
    from helpers import make_ctx

    from msdoctor.domain.training_setup import TRAINING_SETUP
    from msdoctor.facts.config import CONFIG, requested_device_target

    cfg = load_config(MCORE_QWEN3)
    ctx = make_ctx({CONFIG.name: cfg})
    assert ctx.get(TRAINING_SETUP) is cfg.setup and requested_device_target(ctx) == cfg.setup.target == "Ascend"


def test_quoted_parallel_numbers_leave_the_device_count_unknown(tmp_path):
    """Settled: the old reading multiplied ``data_parallel: '8'`` as 8 while memory-fit and training-config
    reported it as not an integer. MindFormers refuses it: OpParallelConfig's data_parallel / model_parallel
    setters call Validator.check_positive_int (mindformers/modules/transformer/op_parallel_config.py), which
    rejects a str. So the count is unknown (no device-count claim), and the setup names the key and line."""
    src = DATA / "memory" / "mindformers" / "r1.5.0" / "configs" / "llama2" / "finetune_llama2_7b.yaml"
    text = src.read_text()
    assert "  data_parallel: 8\n" in text
    bad = tmp_path / "quoted.yaml"
    bad.write_text(text.replace("  data_parallel: 8\n", "  data_parallel: '8'\n"))
    cfg = load_config(bad)
    assert cfg.device_num is None and cfg.devices_per_node is None
    [problem] = [p for p in cfg.setup.problems if p.keys == ("parallel_config", "data_parallel")]
    assert problem.line == text.splitlines().index("  data_parallel: 8") + 1


def test_an_unknown_device_target_is_kept_as_written(tmp_path):
    """The device-target check says "NPU is not a device target" with its line: the setup, which knows only
    Ascend / GPU / CPU, gives the key; the value is the file's."""
    from helpers import make_ctx

    from msdoctor.checks.device_target import _requested
    from msdoctor.facts.config import CONFIG

    text = MCORE_QWEN3.read_text()
    assert '  device_target: "Ascend"\n' in text or "  device_target: Ascend\n" in text
    bad = tmp_path / "npu.yaml"
    bad.write_text(
        text.replace('device_target: "Ascend"', 'device_target: "NPU"').replace(
            "device_target: Ascend", "device_target: NPU"
        )
    )
    cfg = load_config(bad)
    assert cfg.setup.target is None and cfg.device_target == "NPU"
    target, where, loc = _requested(make_ctx({CONFIG.name: cfg}))
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "device_target" in t)
    assert target == "NPU" and loc.line == line and where == f"{bad}:{line}"


# -- the layers of each pipeline stage (training-config's pp-layers rule, memory-fit's stage) -----------------------
TELECHAT = DATA / "memory_fresh2" / "mindformers" / "v1.7.0__finetune_telechat_115b.yaml"


def _placements(cfg):
    """(training-config's stage layers or why refused, memory's stage layers or its problem)."""
    from msdoctor.checks.training_config.rules import stage_layers
    from msdoctor.memory.estimator import stage_layers as memory_stages
    from msdoctor.memory.sources import validate

    setup = cfg.setup
    res = setup.run
    mtp = int(res.mtp_depth.value) if res.mtp_depth is not None and res.mtp_depth.value else 0
    counts, why = stage_layers(
        int(res.num_layers.value) + mtp,
        int(res.pipeline_stages.value),
        int(res.vpp.value) if res.vpp else 1,
        res.offset.value if res.offset else None,
    )
    problems = [p for p in validate(setup.source) if p.keys[-1] in ("offset", "pipeline_stage", "num_layers")]
    return (counts, why), (None if problems else memory_stages(setup.model, setup.layout), problems)


def _pipelined(path: Path) -> bool:
    cfg = _training(path)
    return bool(
        cfg and cfg.setup.model is not None and cfg.setup.source is not None and cfg.setup.layout.pipeline_stages > 1
    )


#: the files with a model shape and more than one pipeline stage (the others have no placement to compare)
PIPELINED = [p for p in MF_YAMLS if _pipelined(p)]


def test_enough_files_have_a_pipeline_to_compare():
    assert len(PIPELINED) >= 20, len(PIPELINED)


@pytest.mark.parametrize("path", PIPELINED, ids=[str(p) for p in PIPELINED])
def test_the_check_and_the_estimate_place_the_layers_alike(path):
    """One placement (msdoctor.domain.pipeline.stage_layers, MindFormers' LayerSetting) for both. Proven by
    equivalence when switched (commit message): main's estimates against these on every YAML under tests/data and
    312 offset mutations: identical on every real file; the mutations where they differed are settled below."""
    (counts, why), (stages, problems) = _placements(_training(path))
    assert counts == stages, (why, problems)


def test_interleaved_offsets_are_placed_per_chunk(tmp_path):
    """Settled: with pp_interleave_num > 1 each chunk gets L // (pp x vpp) + its offset (LayerSetting), so a stage
    holds vpp x (L // (pp x vpp)) + its offsets, not L // pp + its offsets (memory-fit's old sum, which refused
    this layout while training-config placed it). 100 layers over pp 4 x vpp 3: 8 per chunk, 4 left over."""
    text = TELECHAT.read_text()
    assert "    pp_interleave_num: 3\n" in text and "pipeline_stage: 8" in text
    bad = tmp_path / "vpp.yaml"
    bad.write_text(
        text.replace("pipeline_stage: 8", "pipeline_stage: 4")
        .replace(
            "    offset: [ [ -1, -1, 0, 0, 0, 0, 0, 0 ], [ -1, 0, 0, 0, 0, 0, 0, 0 ], [ 0, 0, 0, 1, 1, 1, 1, -1 ] ]",
            "    offset: [ [ 0, 0, 0, 0 ], [ 0, 0, 0, 0 ], [ 1, 1, 1, 1 ] ]",
        )
        .replace("num_layers: 96", "num_layers: 100")
    )
    cfg = load_config(bad)
    assert cfg.setup.model.num_layers == 100 and cfg.setup.layout.virtual_pipeline_chunks == 3
    (counts, _), (stages, problems) = _placements(cfg)
    assert counts == stages == [25, 25, 25, 25] and not problems


def test_an_int_offset_is_placed_as_mindformers_does(tmp_path):
    """Settled: ``offset: 1`` on 62 layers over 2 stages was ignored by memory-fit ("not modelled", estimated
    evenly) while training-config failed the file; LayerSetting broadcasts the int and requires the offsets to sum
    to L % stages (0 here), so both refuse it now, naming model_config.offset."""
    src = DATA / "memory/mindformers/r1.5.0/research/deepseek/deepseek_33b/finetune_deepseek_33b.yaml"
    text = src.read_text()
    assert "num_layers: 62" in text and "offset: 0" in text
    bad = tmp_path / "int_offset.yaml"
    bad.write_text(text.replace("offset: 0", "offset: 1"))
    cfg = load_config(bad)
    (counts, why), (_, problems) = _placements(cfg)
    assert counts is None and "sum to 1" in why
    [problem] = problems
    assert problem.keys == ("model", "model_config", "offset") and "sum to 1" in problem.message
