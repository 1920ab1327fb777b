"""registry-collisions: every verdict is checked against what really happens when the file runs.

Ground truth by execution: each case's project file is also run for real, in a forked child of a
process that imported the real transformers 4.57.1 of the test environment (a fresh registry per
case). A `fail` for a built-in name must match a real ValueError; a negative case must run clean;
a silent replacement (exist_ok=True, a name registered twice, MindFormers' register) must really
replace the class.

MindFormers itself does not install here (1.3.2 needs an older MindSpore; 2.x needs packages absent
from PyPI: hyper-parallel~=1.0.0 is not there, observed with pip install mindformers==2.0.0), so the executed MindFormers cases use a fixture distribution
shaped like its registry API (MindFormerRegister / MindFormerModuleType / models.auto.AutoConfig, as
read in the mindformers 1.3.2 wheel), written for these tests and installed with the real pip. The
real 1.3.2 wheel (and MindNLP 0.4.1's) is still read statically in `test_real_mindformers_and_mindnlp_wheels`.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from helpers import BASE_PYTHON, check_of, make_ctx, make_venv, probe_json, run_json, skip_if_index_unreachable

from msdoctor.checks.registry_collisions import RegistryCollisionsCheck
from msdoctor.checks.registry_collisions.rules import evaluate
from msdoctor.facts.registries import builtins_of, scan_installed, scan_project
from msdoctor.facts.target import TARGET, TargetFacts
from msdoctor.model import Status
from msdoctor.registry_scan.collide import free_name
from msdoctor.registry_scan.parse import parse_source
from msdoctor.registry_scan.sources import SourceFile, SourceSet

# -- ground truth: run project files for real ----------------------------------------------------
DRIVER = r"""
import json, os, runpy, sys
import transformers  # imported once; each case runs in a fork, with the registry as transformers ships it
from transformers import AutoConfig, PretrainedConfig
cases = json.loads(sys.argv[1])
out = {}
for c in cases:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        res = {"error": None, "after": None, "after_error": None}
        try:
            os.chdir(c["dir"])
            sys.path.insert(0, c["dir"])
            ns = runpy.run_path(c["entry"], run_name="__main__")
        except BaseException as e:
            res["error"] = "%s: %s" % (type(e).__name__, e)
        else:
            if c.get("after"):
                scope = dict(ns)
                try:
                    exec(c["after"], scope)
                    res["after"] = scope.get("result")
                except BaseException as e:
                    res["after_error"] = "%s: %s" % (type(e).__name__, e)
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    out[c["name"]] = json.loads(data)
print("@@TRUTH@@" + json.dumps(out))
"""


def run_truth(python: str, cases: list[dict[str, Any]]) -> dict[str, dict]:
    res = subprocess.run([python, "-c", DRIVER, json.dumps(cases)], capture_output=True, text=True, timeout=180)
    marker = res.stdout.rfind("@@TRUTH@@")
    assert marker >= 0, f"driver failed (rc={res.returncode}):\n{res.stdout}\n{res.stderr}"
    return json.loads(res.stdout[marker + len("@@TRUTH@@") :])


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


CFG = "from transformers import AutoConfig, PretrainedConfig\n"

#: name -> (files, entry, expected (status, code, line of the finding in entry-relative file), truth, after)
CASES: dict[str, dict[str, Any]] = {
    "literal": dict(
        files={
            "run.py": CFG + "class MyAim(PretrainedConfig):\n    model_type = 'aimv2'\n"
            "AutoConfig.register('aimv2', MyAim)\n"
        },
        expect=[("fail", "builtin-name", "run.py", 4)],
        truth="ValueError: 'aimv2' is already used by a Transformers config, pick another name.",
    ),
    "cls_model_type": dict(
        files={
            "run.py": CFG + "class MyAim(PretrainedConfig):\n    model_type = 'aimv2'\n"
            "AutoConfig.register(MyAim.model_type, MyAim)\n"
        },
        expect=[("fail", "builtin-name", "run.py", 4)],
        truth="ValueError: 'aimv2' is already used by a Transformers config",
    ),
    "other_module": dict(
        files={
            "models/__init__.py": "from .configs import MyLlama\n",
            "models/names.py": "LLAMA = 'llama'\n",
            "models/configs.py": "from transformers import PretrainedConfig\nfrom .names import LLAMA\n"
            "class MyLlama(PretrainedConfig):\n    model_type = LLAMA\n",
            "run.py": "from transformers import AutoConfig as AC\nfrom models import MyLlama\n"
            "AC.register(MyLlama.model_type, MyLlama)\n",
        },
        expect=[("fail", "builtin-name", "run.py", 3)],
        truth="ValueError: 'llama' is already used by a Transformers config",
    ),
    "exist_ok": dict(
        files={
            "run.py": CFG + "class MyAim(PretrainedConfig):\n    model_type = 'aimv2'\n"
            "AutoConfig.register('aimv2', MyAim, exist_ok=True)\n"
        },
        expect=[("warn", "builtin-name-exist-ok", "run.py", 4)],
        truth=None,
        after="result = type(AutoConfig.for_model('aimv2')).__name__",
        after_is="MyAim",
    ),
    "duplicate": dict(
        files={
            "a.py": CFG + "class A(PretrainedConfig):\n    model_type = 'acme'\nAutoConfig.register('acme', A)\n",
            "b.py": CFG + "class B(PretrainedConfig):\n    model_type = 'acme'\nAutoConfig.register('acme', B)\n",
            "run.py": "import a\nimport b\n",
        },
        expect=[("fail", "duplicate", "b.py", 4)],
        truth=None,
        after="from transformers import AutoConfig\nresult = type(AutoConfig.for_model('acme')).__name__",
        after_is="B",
    ),
    "mismatch": dict(
        files={
            "run.py": CFG + "class C(PretrainedConfig):\n    model_type = 'acme_b'\nAutoConfig.register('acme_a', C)\n"
        },
        expect=[("fail", "model-type-mismatch", "run.py", 4)],
        truth="ValueError: The config you are passing has a `model_type` attribute that is not consistent",
    ),
    # AutoModel* without torch is a placeholder at the top level; the class itself lives in modeling_auto
    "auto_model": dict(
        files={
            "run.py": "from transformers import LlamaConfig\n"
            "from transformers.models.auto.modeling_auto import AutoModelForCausalLM\n"
            "class MyModel:\n    pass\nAutoModelForCausalLM.register(LlamaConfig, MyModel)\n"
        },
        expect=[("fail", "builtin-model", "run.py", 5)],
        truth="is already used by a Transformers model",
    ),
    "auto_tokenizer": dict(
        files={
            "run.py": "from transformers import AutoTokenizer, LlamaConfig\n"
            "class MyTok:\n    pass\n"
            "AutoTokenizer.register(LlamaConfig, slow_tokenizer_class=MyTok)\n"
        },
        expect=[("fail", "builtin-model", "run.py", 4)],
        truth="is already used by a Transformers model",
    ),
    "latent": dict(
        files={"run.py": CFG + "class Mine(PretrainedConfig):\n    model_type = 'qwen2'\n"},
        expect=[("warn", "builtin-model-type-unregistered", "run.py", 3)],
        truth=None,
        after="AutoConfig.register(Mine.model_type, Mine)",
        after_error="ValueError: 'qwen2' is already used by a Transformers config",
    ),
    "free_names": dict(
        files={
            "run.py": CFG + "from transformers.models.auto.modeling_auto import AutoModelForCausalLM\n"
            "class Acme(PretrainedConfig):\n    model_type = 'acme_lm'\n"
            "class AcmeModel:\n    config_class = Acme\n"
            "AutoConfig.register('acme_lm', Acme)\n"
            "AutoModelForCausalLM.register(Acme, AcmeModel)\n"
        },
        expect=[("pass", None, None, None)],
        truth=None,
        after="result = type(AutoConfig.for_model('acme_lm')).__name__",
        after_is="Acme",
    ),
    "no_registrations": dict(
        files={"run.py": "import json\nprint(json.dumps({'ok': 1}))\n", "lib/util.py": "X = 1\n"},
        expect=[("pass", None, None, None)],
        truth=None,
    ),
    "syntax_error": dict(
        files={"run.py": "from transformers import AutoConfig\nAutoConfig.register('x', \n"},
        expect=[("skip", "unparsable-file", "run.py", 2)],
        truth="SyntaxError",
    ),
}


@pytest.fixture(scope="module")
def base_target() -> TargetFacts:
    return TargetFacts.from_probe(probe_json())


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("projects")
    return {name: write_tree(root / name, case["files"]) for name, case in CASES.items()}


@pytest.fixture(scope="module")
def truth(projects: dict[str, Path]) -> dict[str, dict]:
    cases = [{"name": n, "dir": str(projects[n]), "entry": "run.py", "after": c.get("after")} for n, c in CASES.items()]
    return run_truth(BASE_PYTHON, cases)


def run_check(target: TargetFacts, project: Path, **options: Any) -> list:
    ctx = make_ctx(facts={TARGET.name: target}, project_dir=project, **options)
    return RegistryCollisionsCheck().run(ctx)


@pytest.mark.parametrize("name", list(CASES))
def test_verdict_matches_execution(
    name: str, base_target: TargetFacts, projects: dict[str, Path], truth: dict[str, dict]
) -> None:
    case, project, real = CASES[name], projects[name], truth[name]
    findings = run_check(base_target, project)
    worst_status, code, rel, line = case["expect"][0]
    problems = [f for f in findings if f.status is not Status.PASS]
    if worst_status == "pass":
        assert not problems, [f.title for f in problems]
        assert findings and findings[0].status is Status.PASS and findings[0].proved
    else:
        hits = [f for f in findings if f.code == code]
        assert len(hits) == 1, [(f.status, f.code, f.title) for f in findings]
        f = hits[0]
        assert f.status.value == worst_status
        assert f.location is not None and f.location.path == str(project / rel) and f.location.line == line
        if f.status.value in ("fail", "warn"):
            assert f.fix and f.detail
    # the ground truth: the same file run for real
    if case["truth"] is None:
        assert real["error"] is None, real
    else:
        assert real["error"] is not None and case["truth"] in real["error"], real
    if "after_is" in case:
        assert real["after"] == case["after_is"], real
    if "after_error" in case:
        assert real["after_error"] and case["after_error"] in real["after_error"], real


def test_fail_names_owner_version_and_a_checked_free_name(base_target: TargetFacts, projects: dict[str, Path]) -> None:
    [f] = [f for f in run_check(base_target, projects["cls_model_type"]) if f.code == "builtin-name"]
    assert "transformers 4.57.1: Aimv2Config" in f.title and f.evidence["owner"] == "transformers 4.57.1: Aimv2Config"
    assert 'from "aimv2" to "my_aimv2"' in f.fix and f"{projects['cls_model_type'] / 'run.py'}:3" in f.fix
    # the matrix knows when transformers added aimv2 (observed in the 4.53.0 / 4.54.0 wheels)
    assert "transformers<4.54.0" in f.fix and f.fix.count(base_target.python_cmd()) == 1
    taken = {"aimv2", "my_aimv2"}
    assert free_name("aimv2", taken) == "custom_aimv2"
    assert free_name("X", {"MyX", "CustomX", "ProjectX"}, class_style=True) == "MyX2"


def test_suggested_rename_passes_and_runs_clean(base_target: TargetFacts, tmp_path: Path) -> None:
    """Apply the fix's free name to the literal case: the check passes and the file really runs."""
    project = write_tree(tmp_path / "p", CASES["literal"]["files"])
    [f] = [f for f in run_check(base_target, project) if f.code == "builtin-name"]
    new = f.fix.split('to "', 1)[1].split('"', 1)[0]
    run = project / "run.py"
    run.write_text(run.read_text().replace("'aimv2'", repr(new)))
    after = run_check(base_target, project)
    assert [x.status for x in after] == [Status.PASS], [x.title for x in after]
    real = run_truth(
        BASE_PYTHON,
        [
            {
                "name": "fixed",
                "dir": str(project),
                "entry": "run.py",
                "after": f"result = type(AutoConfig.for_model({new!r})).__name__",
            }
        ],
    )
    assert real["fixed"] == {"error": None, "after": "MyAim", "after_error": None}


def test_matrix_of_added_names_agrees_with_the_installed_transformers(base_target: TargetFacts) -> None:
    """Every name the matrix says was added up to 4.57.1 is a built-in of the real 4.57.1, and the rest predate 4.40."""
    from msdoctor.facts.registries import added_versions

    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib

    added, baseline = added_versions()
    removed = tomllib.loads((Path(__file__).parents[1] / "compat_matrix/transformers_model_types.toml").read_text())[
        "removed"
    ]
    assert removed == {"llava-next-video": "4.45.0", "parakeet": "4.57.1"}
    still = set(added) - set(removed)
    builtins = builtins_of(base_target).libraries["transformers"]
    assert builtins.label == "transformers 4.57.1" and baseline == "4.40.0"
    assert added["aimv2"] == "4.54.0" and still <= set(builtins.configs)
    assert len(set(builtins.configs) - still) == 250  # the 4.40.0 wheel's CONFIG_MAPPING_NAMES (none removed since)


def test_free_name_suggestion_skips_a_name_the_project_took(base_target: TargetFacts, tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "run.py": CFG + "class A(PretrainedConfig):\n    model_type = 'my_llama'\n"
            "AutoConfig.register('my_llama', A)\n"
            "class B(PretrainedConfig):\n    model_type = 'llama'\n"
            "AutoConfig.register('llama', B)\n"
        },
    )
    [f] = [f for f in run_check(base_target, tmp_path) if f.code == "builtin-name"]
    assert '"custom_llama"' in f.fix and "pinning an older release is no way out" in f.fix


def test_config_folder_code_and_unresolved_names(base_target: TargetFacts, tmp_path: Path) -> None:
    """Remote-code models keep their .py next to config.json: --config's folder is scanned too."""
    project = write_tree(
        tmp_path / "project",
        {
            "run.py": CFG + "def pick():\n    return 'x'\n"
            "class Z(PretrainedConfig):\n    model_type = 'zz_custom'\n"
            "AutoConfig.register(pick(), Z)\n"
        },
    )
    model = write_tree(
        tmp_path / "model",
        {
            "config.json": '{"model_type": "gemma"}\n',
            "configuration_x.py": CFG + "class G(PretrainedConfig):\n"
            "    model_type = 'gemma'\n"
            "AutoConfig.register('gemma', G)\n",
        },
    )
    findings = run_check(base_target, project, config_path=model / "config.json")
    [fail] = [f for f in findings if f.status is Status.FAIL]
    assert fail.location.path == str(model / "configuration_x.py") and fail.location.line == 4
    [skip] = [f for f in findings if f.code == "unresolved-name"]
    assert skip.status is Status.SKIP and "run.py:6 AutoConfig.register(pick())" in skip.detail


def test_src_layout_class_is_one_class(base_target: TargetFacts, tmp_path: Path) -> None:
    """src/acme/cfg.py is both `src.acme.cfg` and `acme.cfg`: still one class, registered once."""
    write_tree(
        tmp_path,
        {
            "src/acme/__init__.py": "from .cfg import AcmeCfg\n",
            "src/acme/cfg.py": "from transformers import PretrainedConfig\n"
            "class AcmeCfg(PretrainedConfig):\n    model_type = 'bert'\n",
            "train.py": "from transformers import AutoConfig\nfrom acme import AcmeCfg\n"
            "AutoConfig.register(AcmeCfg.model_type, AcmeCfg, exist_ok=True)\n",
        },
    )
    findings = run_check(base_target, tmp_path)
    assert [(f.status, f.code) for f in findings] == [(Status.WARN, "builtin-name-exist-ok")]
    assert f"{tmp_path / 'src/acme/cfg.py'}:3" in findings[0].fix


def test_project_scan_skips_env_and_vcs_dirs(tmp_path: Path) -> None:
    reg = CFG + "class X(PretrainedConfig):\n    model_type = 'bert'\nAutoConfig.register('bert', X)\n"
    write_tree(
        tmp_path,
        {
            "ok.py": "import atexit\natexit.register(print)\n",
            ".git/hooks/h.py": reg,
            "node_modules/m.py": reg,
            "myenv/lib/site.py": reg,
            "myenv/pyvenv.cfg": "home = /usr\n",
            "build/lib/copy.py": reg,
            "__pycache__/c.py": reg,
        },
    )
    scan = scan_project(str(tmp_path))
    assert scan.result.files_seen == 1 and scan.result.registrations == []
    assert scan.result.files_parsed == 0  # "register" without a registry name: not worth a parse


def test_relative_imports_and_reexports_resolve() -> None:
    facts = parse_source("from ..a import B as C\nfrom . import d\nimport e.f\n", "p.py", "pkg.sub.mod")
    assert facts.imports == {"C": ("pkg.a", "B"), "d": ("pkg.sub", "d"), "e": ("e", None)}
    pkg = parse_source("from .mod import X\n", "i.py", "pkg", is_package=True)
    assert pkg.imports["X"] == ("pkg.mod", "X")


def test_installed_distribution_registrations_are_found_without_text_false_positives(tmp_path: Path) -> None:
    """A module that only mentions AutoConfig.register in text passes the prefilter but yields nothing."""
    pkg = write_tree(
        tmp_path,
        {
            "doc.py": '"""Call AutoConfig.register(name, cls) to register(...)."""\n',
            "reg.py": "import transformers\nclass K(transformers.PretrainedConfig):\n    model_type = 'gpt2'\n"
            "transformers.AutoConfig.register(K.model_type, K, exist_ok=flag)\n",
        },
    )
    sources = SourceSet(
        "thirdparty 1.0",
        str(pkg),
        [SourceFile(str(pkg / "doc.py"), "tp.doc"), SourceFile(str(pkg / "reg.py"), "tp.reg")],
        script_style=False,
    )
    result = sources.scan()
    [reg] = result.registrations
    assert (reg.name, reg.library, reg.exist_ok, reg.at.line) == ("gpt2", "transformers", None, 4)


def _wheel(out: Path, name: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> Path:
    """A minimal real wheel (pip installs it like any other)."""
    info = f"{name}-{version}.dist-info"
    path = out / f"{name}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    wheel = "Wheel-Version: 1.0\nGenerator: msdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = {**{k: textwrap.dedent(v) for k, v in files.items()}, f"{info}/METADATA": meta, f"{info}/WHEEL": wheel}
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in entries.items():
            z.writestr(rel, text)
        z.writestr(f"{info}/RECORD", "".join(f"{rel},,\n" for rel in entries) + f"{info}/RECORD,,\n")
    return path


MF_FIXTURE = {
    "mindformers/__init__.py": '''\
        """Test fixture shaped like MindFormers' registry API (read in the mindformers 1.3.2 wheel); not MindFormers."""
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister
        from mindformers.models.auto import AutoConfig
        from mindformers.models.llama import LlamaConfig
        ''',
    "mindformers/tools/__init__.py": "",
    "mindformers/tools/register/__init__.py": "from .register import MindFormerModuleType, MindFormerRegister\n",
    "mindformers/tools/register/register.py": """\
        class MindFormerModuleType:
            CONFIG = "config"
            MODELS = "models"
            TOOLS = "tools"


        class MindFormerRegister:
            registry = {}

            @classmethod
            def register(cls, module_type=MindFormerModuleType.TOOLS, alias=None):
                def wrapper(register_class):
                    # like MindFormers' own: an existing entry of the same name is replaced, never refused
                    name = alias if alias is not None else register_class.__name__
                    cls.registry.setdefault(module_type, {})[name] = register_class
                    return register_class
                return wrapper

            @classmethod
            def get_cls(cls, module_type, class_name):
                return cls.registry[module_type][class_name]
        """,
    "mindformers/models/__init__.py": "",
    "mindformers/models/configuration_utils.py": "class PretrainedConfig:\n    model_type = ''\n",
    "mindformers/models/llama/__init__.py": "from .llama_config import LlamaConfig\n",
    "mindformers/models/llama/llama_config.py": """\
        from mindformers.models.configuration_utils import PretrainedConfig
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister


        @MindFormerRegister.register(MindFormerModuleType.CONFIG)
        class LlamaConfig(PretrainedConfig):
            model_type = "llama"
        """,
    "mindformers/models/auto/__init__.py": "from .configuration_auto import CONFIG_MAPPING, AutoConfig\n",
    "mindformers/models/auto/configuration_auto.py": """\
        from collections import OrderedDict

        CONFIG_MAPPING_NAMES = OrderedDict([("glm2", "ChatGLM2Config"), ("llama", "LlamaConfig")])


        class _LazyConfigMapping(OrderedDict):
            def __init__(self, mapping):
                super().__init__()
                self._mapping = mapping
                self._extra_content = {}

            def register(self, key, value, exist_ok=False):
                if key in self._mapping.keys() and not exist_ok:
                    raise ValueError(f"'{key}' is already used by a Mindformers config, pick another name.")
                self._extra_content[key] = value


        CONFIG_MAPPING = _LazyConfigMapping(CONFIG_MAPPING_NAMES)


        class AutoConfig:
            @staticmethod
            def register(model_type, config, exist_ok=False):
                CONFIG_MAPPING.register(model_type, config, exist_ok=exist_ok)
        """,
}

FANCY = {  # a third-party package in the vLLM pattern: it registers a name transformers added later
    "fancy_models/__init__.py": """\
        from transformers import AutoConfig, PretrainedConfig


        class FancyConfig(PretrainedConfig):
            model_type = "fancy"


        AutoConfig.register("fancy", FancyConfig)
        """,
    "fancy_models/aim.py": """\
        from transformers import AutoConfig, PretrainedConfig


        class AIMv2Config(PretrainedConfig):
            model_type = "aimv2"


        AutoConfig.register("aimv2", AIMv2Config)
        """,
}

LAYERED_PROJECT = {
    "mf_decorator.py": """\
        from mindformers.tools.register import MindFormerModuleType, MindFormerRegister


        @MindFormerRegister.register(MindFormerModuleType.CONFIG, alias="LlamaConfig")
        class MyLlamaConfig:
            model_type = "my_llama"
        """,
    "mf_auto.py": """\
        from mindformers import AutoConfig


        class MyGlm:
            model_type = "glm2"


        AutoConfig.register("glm2", MyGlm)
        """,
    "fancy_user.py": """\
        import fancy_models
        from transformers import AutoConfig, PretrainedConfig


        class MyFancy(PretrainedConfig):
            model_type = "fancy"


        AutoConfig.register("fancy", MyFancy)
        """,
}


@pytest.fixture(scope="module")
def layered(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("layered")
    venv = make_venv(root / "venv", layered=True)
    wheels = [
        _wheel(root, "mindformers", "1.3.2+fixture", MF_FIXTURE),
        _wheel(root, "fancy_models", "0.9.1", FANCY, requires=("transformers>=4.40",)),
    ]
    venv.pip("install", "--no-deps", "--no-index", "--no-compile", *map(str, wheels))
    project = write_tree(root / "project", LAYERED_PROJECT)
    target = TargetFacts.from_probe(probe_json(venv.python))
    return venv, project, target


@pytest.mark.slow
def test_mindformers_and_third_party_package_in_a_real_venv(layered) -> None:
    venv, project, target = layered
    all_findings = run_check(target, project)
    findings = {f.code: f for f in all_findings}
    mf_dec = findings["mindformers-builtin"]
    [mf_auto] = [f for f in all_findings if f.code == "builtin-name" and f.location.path.endswith("mf_auto.py")]
    assert (
        mf_dec.status is Status.WARN
        and mf_dec.location.line == 4
        and "mindformers 1.3.2+fixture: LlamaConfig" in mf_dec.title
    )
    assert 'alias="MyLlamaConfig"' in mf_dec.fix
    assert mf_auto.status is Status.FAIL and mf_auto.location.line == 8
    assert "mindformers 1.3.2+fixture: ChatGLM2Config" in mf_auto.title and "Mindformers config" in mf_auto.detail
    # the installed package's own registration of aimv2 (a file in site-packages), and its clash with the project
    installed = [f for f in all_findings if f.code == "builtin-name" and "fancy_models" in f.location.path]
    assert len(installed) == 1 and installed[0].location.line == 8 and "fancy_models 0.9.1" in installed[0].detail
    assert "pip install --upgrade fancy_models" in installed[0].fix and "transformers<4.54.0" in installed[0].fix
    dup = findings["duplicate"]
    assert dup.status is Status.FAIL and "'fancy' is registered 2 times" in dup.title
    assert {s.rsplit(":", 1)[0].rsplit(os.sep, 2)[-1] for s in dup.evidence["sites"]} == {
        "fancy_user.py",
        "__init__.py",
    }

    # ground truth in the venv: what each of these really does
    real = run_truth(
        venv.python,
        [
            {
                "name": "mf_decorator",
                "dir": str(project),
                "entry": "mf_decorator.py",
                "after": "result = MindFormerRegister.get_cls('config', 'LlamaConfig').__name__",
            },
            {"name": "mf_auto", "dir": str(project), "entry": "mf_auto.py"},
            {
                "name": "fancy_user",
                "dir": str(project),
                "entry": "fancy_user.py",
                "after": "result = type(AutoConfig.for_model('fancy')).__name__",
            },
        ],
    )
    assert real["mf_decorator"] == {"error": None, "after": "MyLlamaConfig", "after_error": None}
    assert "'glm2' is already used by a Mindformers config" in real["mf_auto"]["error"]
    assert real["fancy_user"]["error"] is None and real["fancy_user"]["after"] == "MyFancy"
    res = venv.run("import fancy_models.aim")
    assert res.returncode != 0 and "ValueError: 'aimv2' is already used by a Transformers config" in res.stderr


@pytest.mark.slow
def test_cli_json_and_environment_without_transformers(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "project", CASES["literal"]["files"])
    bare = make_venv(tmp_path / "bare", layered=False)
    res, report = run_json("check", "--only", "registry-collisions", "--python", bare.python, "--project", str(project))
    check = check_of(report, "registry-collisions")
    assert check["status"] == "skip", check
    assert "not installed" in check["findings"][0]["title"]
    res, report = run_json("check", "--only", "registry-collisions", "--project", str(project))
    check = check_of(report, "registry-collisions")
    assert res.returncode == 1 and check["status"] == "fail"
    assert any(f["code"] == "builtin-name" and f["location"]["line"] == 4 for f in check["findings"])


@pytest.mark.slow
def test_real_mindformers_and_mindnlp_wheels(tmp_path: Path) -> None:
    """The built-in names of the real MindFormers 1.3.2 and MindNLP 0.4.1 wheels (installed --no-deps; read, not run)."""
    venv = make_venv(tmp_path / "venv", layered=False)
    res = venv.pip(
        "install", "--no-deps", "--no-compile", "mindformers==1.3.2", "mindnlp==0.4.1", check=False, timeout=300
    )
    skip_if_index_unreachable(res)
    assert res.returncode == 0, res.stderr
    target = TargetFacts.from_probe(probe_json(venv.python))
    builtins = builtins_of(target)
    mf, mn = builtins.libraries["mindformers"], builtins.libraries["mindnlp"]
    assert set(mf.configs) == {"glm2", "llama"} and mf.configs["llama"].label == "mindformers 1.3.2: LlamaConfig"
    assert mf.decorated["CONFIG"]["LlamaConfig"].path.endswith(os.path.join("models", "llama", "llama_config.py"))
    assert sum(len(v) for v in mf.decorated.values()) > 200 and not mf.unreadable
    assert len(mn.configs) > 200 and mn.configs["llama"].label == "mindnlp 0.4.1: LlamaConfig"
    assert "llama" in mn.auto["AutoModelForCausalLM"] and "transformers" not in builtins.libraries
    project = write_tree(
        tmp_path / "p",
        {
            "run.py": "from mindnlp.transformers import AutoConfig\n"
            "class L:\n    model_type = 'llama'\n"
            "AutoConfig.register('llama', L)\n"
        },
    )
    findings = evaluate(
        builtins, scan_project(str(project)), scan_installed(target, builtins, str(project)), target.python_cmd()
    )
    [fail] = [f for f in findings if f.status is Status.FAIL]
    assert fail.evidence["owner"] == "mindnlp 0.4.1: LlamaConfig" and fail.location.line == 4


def test_auto_tables_of_the_real_transformers_are_read_only_when_compared() -> None:
    """The built-in model/tokenizer tables (modeling_auto.py and 7 more files) are parsed when a registration is
    compared with them, not on every run; configuration_auto.py (the config names) always is."""
    from msdoctor.registry_scan.builtins import read_library
    from msdoctor.registry_scan.parse import ParseCache

    target = TargetFacts.from_probe(probe_json(BASE_PYTHON))
    pkg = os.path.dirname(target.module_origin("transformers"))
    reg = read_library("transformers", pkg, "transformers", target.dist("transformers").version, ParseCache())
    assert reg.files_read == 1 and len(reg.configs) > 400
    assert "llama" in reg.auto["AutoModelForCausalLM"] and reg.files_read > 5
    read = reg.files_read
    assert reg.auto["MODEL_FOR_CAUSAL_LM_MAPPING"] and reg.files_read == read  # read once
