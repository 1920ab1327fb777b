"""registry-collisions against the real MindFormers 2.1.0 registry: legacy= and search_names= keyed as MindFormers does.

MindFormers 2.x files a MODELS / CONFIG class registered with ``legacy=False`` under ``mcore_<name>``
(``MindFormerRegister._add_class_name_prefix``, mindformers 2.1.0 ``tools/register/register.py``), and
``search_names`` into a ``search_names_map`` that ``get_cls`` consults first. The verdicts here are checked
by execution: the real ``register.py`` of the installed wheel runs in a subprocess (its two imports that
would pull MindSpore and the hub code, ``mindformers.core.context.is_legacy_model`` and
``mindformers.tools.hub.dynamic_module_utils``, are replaced by stand-ins; the registry code itself is
the wheel's), MindFormers' own decorators are replayed from the wheel's source lines that msdoctor
read, and then the project file runs. The wheel is installed ``--no-deps`` from the package index
(no torch, no MindSpore download); the test skips when the index cannot be reached.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any, Optional

import pytest

from helpers import BASE_PYTHON, make_venv, probe_json, skip_if_index_unreachable

from msdoctor.checks.registry_collisions.rules import evaluate
from msdoctor.facts.registries import builtins_of, scan_installed, scan_project
from msdoctor.facts.target import TargetFacts
from msdoctor.model import Status

MF_VERSION = "2.1.0"

TRUTH = r"""
import importlib.util, json, sys, types
site, user_file, replay, lookups = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
state = {"legacy": True}
def stub(name, **attrs):
    m = types.ModuleType(name); m.__path__ = []; m.__dict__.update(attrs); sys.modules[name] = m; return m
for pkg in ("mindformers", "mindformers.core", "mindformers.tools", "mindformers.tools.hub"):
    stub(pkg)
stub("mindformers.core.context", is_legacy_model=lambda: state["legacy"])
stub("mindformers.tools.hub.dynamic_module_utils", get_class_from_dynamic_module=None)
spec = importlib.util.spec_from_file_location(
    "mindformers.tools.register.register", site + "/mindformers/tools/register/register.py")
reg_mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = reg_mod
spec.loader.exec_module(reg_mod)  # the wheel's own registry code
stub("mindformers.tools.register", MindFormerRegister=reg_mod.MindFormerRegister,
     MindFormerModuleType=reg_mod.MindFormerModuleType)
sys.modules["mindformers.tools"].MindFormerRegister = reg_mod.MindFormerRegister
sys.modules["mindformers.tools"].MindFormerModuleType = reg_mod.MindFormerModuleType
R, T = reg_mod.MindFormerRegister, reg_mod.MindFormerModuleType
builtin = {}
for deco, cls in replay:  # MindFormers' own decorators, as written in the wheel
    ns = {"MindFormerRegister": R, "MindFormerModuleType": T}
    exec(deco + "\nclass " + cls + ":\n    pass\n", ns)
    builtin[cls] = ns[cls]
before = {mt: dict(v) for mt, v in R.registry.items()}
ns = {"__name__": "__main__"}
exec(compile(open(user_file).read(), user_file, "exec"), ns)
replaced = sorted("%s:%s" % (mt, k) for mt, v in before.items() for k, c in v.items() if R.registry[mt][k] is not c)
found = {}
for mt, name, legacy in lookups:
    state["legacy"] = legacy
    try:
        c = R.get_cls(getattr(T, mt), name)
        found["%s:%s:%s" % (mt, name, legacy)] = "builtin" if builtin.get(c.__name__) is c else "project:" + c.__name__
    except ValueError as e:
        found["%s:%s:%s" % (mt, name, legacy)] = "missing"
print(json.dumps({"replaced": replaced, "found": found}))
"""


@pytest.fixture(scope="module")
def mf_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[TargetFacts, Any, Path]:
    venv = make_venv(tmp_path_factory.mktemp("mf2") / "venv")
    res = venv.pip("install", "--no-deps", "--no-compile", f"mindformers=={MF_VERSION}", check=False, timeout=300)
    skip_if_index_unreachable(res)
    assert res.returncode == 0, res.stderr
    target = TargetFacts.from_probe(probe_json(venv.python))
    return target, builtins_of(target), venv.site_packages


def _project(root: Path, code: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.py").write_text(textwrap.dedent(code))
    return root


def _findings(env: tuple, project: Path) -> list:
    target, builtins, _ = env
    return evaluate(
        builtins, scan_project(str(project)), scan_installed(target, builtins, str(project)), target.python_cmd()
    )


def _replay(builtins: Any, keys: list[tuple[str, str]]) -> list[list[str]]:
    """The wheel's own decorator lines (as msdoctor located them) for the built-in keys named."""
    mf = builtins.libraries["mindformers"]
    out = []
    for mt, key in keys:
        owner = mf.decorated[mt][key]
        lines = Path(owner.path).read_text().splitlines()
        deco = lines[owner.line - 1].strip()
        assert deco.startswith("@MindFormerRegister.register("), deco
        out.append([deco, owner.cls])
    return out


def _truth(env: tuple, project: Path, keys: list[tuple[str, str]], lookups: list[tuple[str, str, bool]]) -> dict:
    _, builtins, site = env
    res = subprocess.run(
        [
            BASE_PYTHON,
            "-I",
            "-c",
            TRUTH,
            str(site),
            str(project / "model.py"),
            json.dumps(_replay(builtins, keys)),
            json.dumps(lookups),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _mf(findings: list) -> list:
    return [f for f in findings if (f.code or "").startswith("mindformers-")]


def test_builtin_keys_are_read_as_mindformers_files_them(mf_env: tuple) -> None:
    _, builtins, _ = mf_env
    mf = builtins.libraries["mindformers"]
    assert mf.version == MF_VERSION
    models, configs = mf.decorated["MODELS"], mf.decorated["CONFIG"]
    assert "mcore_Qwen3ForCausalLM" in models and "Qwen3ForCausalLM" not in models
    assert "mcore_Glm4ForCausalLM" in models and models["mcore_Glm4ForCausalLM"].cls == "Glm4ForCausalLM"
    assert "mcore_Qwen3Config" in configs
    assert mf.search_names[("CONFIG", "mcore_qwen3")] == "mcore_Qwen3Config"
    assert mf.search_names[("CONFIG", "mcore_deepseek_mtp")] == "mcore_DeepseekV3Config"
    assert "LlamaForCausalLM" in models  # legacy classes keep their plain name


def test_legacy_default_registration_replaces_nothing(mf_env: tuple, tmp_path: Path) -> None:
    project = _project(
        tmp_path / "p",
        """\
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister

        @MindFormerRegister.register(MindFormerModuleType.MODELS)
        class Qwen3ForCausalLM:
            pass
        """,
    )
    assert _mf(_findings(mf_env, project)) == []
    truth = _truth(
        mf_env,
        project,
        [("MODELS", "mcore_Qwen3ForCausalLM")],
        [("MODELS", "Qwen3ForCausalLM", False), ("MODELS", "Qwen3ForCausalLM", True)],
    )
    assert truth["replaced"] == []
    assert truth["found"] == {
        "MODELS:Qwen3ForCausalLM:False": "builtin",
        "MODELS:Qwen3ForCausalLM:True": "project:Qwen3ForCausalLM",
    }


def _apply_fix(project: Path, fix: str) -> None:
    deco = re.search(r"(@MindFormerRegister\.register\(.*?\)) at ", fix)
    assert deco, fix
    src = (project / "model.py").read_text()
    (project / "model.py").write_text(
        re.sub(r"@MindFormerRegister\.register\(.*\)", lambda _: deco.group(1), src, count=1)
    )


def test_new_style_registration_replaces_and_the_fix_keeps_legacy_false(mf_env: tuple, tmp_path: Path) -> None:
    project = _project(
        tmp_path / "p",
        """\
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister

        @MindFormerRegister.register(MindFormerModuleType.MODELS, legacy=False)
        class Glm4ForCausalLM:
            pass
        """,
    )
    [warn] = _mf(_findings(mf_env, project))
    assert warn.status is Status.WARN and warn.code == "mindformers-builtin"
    assert warn.evidence["registry_key"] == "mcore_Glm4ForCausalLM" and warn.location.line == 3
    assert "legacy=False" in warn.fix and 'alias="MyGlm4ForCausalLM"' in warn.fix
    keys, look = [("MODELS", "mcore_Glm4ForCausalLM")], [("MODELS", "Glm4ForCausalLM", False)]
    assert _truth(mf_env, project, keys, look) == {
        "replaced": ["models:mcore_Glm4ForCausalLM"],
        "found": {"MODELS:Glm4ForCausalLM:False": "project:Glm4ForCausalLM"},
    }

    _apply_fix(project, warn.fix)
    assert _mf(_findings(mf_env, project)) == []
    after = _truth(mf_env, project, keys, look + [("MODELS", "MyGlm4ForCausalLM", False)])
    assert after == {
        "replaced": [],
        "found": {
            "MODELS:Glm4ForCausalLM:False": "builtin",
            "MODELS:MyGlm4ForCausalLM:False": "project:Glm4ForCausalLM",
        },
    }


def test_search_name_taking_a_builtin_model_type_is_found_and_fixed(mf_env: tuple, tmp_path: Path) -> None:
    project = _project(
        tmp_path / "p",
        """\
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister

        @MindFormerRegister.register(MindFormerModuleType.CONFIG, legacy=False, search_names="glm4")
        class MyGlm4Config:
            pass
        """,
    )
    [warn] = _mf(_findings(mf_env, project))
    assert warn.code == "mindformers-search-name" and warn.evidence["registry_key"] == "mcore_glm4"
    keys, look = [("CONFIG", "mcore_Glm4Config")], [("CONFIG", "glm4", False)]
    assert _truth(mf_env, project, keys, look)["found"] == {"CONFIG:glm4:False": "project:MyGlm4Config"}

    _apply_fix(project, warn.fix)
    assert "legacy=False" in (project / "model.py").read_text()
    assert _mf(_findings(mf_env, project)) == []
    after = _truth(mf_env, project, keys, look + [("CONFIG", "my_glm4", False)])
    assert after["found"] == {"CONFIG:glm4:False": "builtin", "CONFIG:my_glm4:False": "project:MyGlm4Config"}


def test_legacy_expression_checks_both_keys(mf_env: tuple, tmp_path: Path) -> None:
    project = _project(
        tmp_path / "p",
        """\
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister
        NEW = True

        @MindFormerRegister.register(MindFormerModuleType.MODELS, legacy=not NEW)
        class Qwen3ForCausalLM:
            pass
        """,
    )
    [warn] = _mf(_findings(mf_env, project))
    key: Optional[str] = warn.evidence["registry_key"]
    assert key == "mcore_Qwen3ForCausalLM" and "expression" in warn.detail and "legacy=not NEW" in warn.fix
