"""Check discovery through the msdoctor.checks entry-point group, with real plugin distributions."""

from __future__ import annotations

import json
import sys
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, env_with, make_venv
from msdoctor.plugins import DuplicateCheckId, load_registry, validate_check


class FakeEP:
    """Stands in for importlib.metadata.EntryPoint in unit tests of the loader."""

    def __init__(self, name: str, value: str, obj=None, dist: str = "thirdparty", exc: Exception | None = None):
        self.name, self.value, self._obj, self._exc = name, value, obj, exc
        self.dist = type("D", (), {"name": dist})()

    def load(self):
        if self._exc:
            raise self._exc
        return self._obj


class Good:
    id, title, description = "good-check", "Good", "a good check"

    def run(self, ctx):
        return []


def test_builtin_checks_are_registered_through_the_entry_point_group() -> None:
    reg = load_registry(plugins=False)
    assert "python-env" in reg.ids()
    assert reg.get("python-env").provider == "msdoctor"
    assert not reg.failures


def test_loader_instantiates_classes_instances_and_factories() -> None:
    eps = [
        FakeEP("a", "m:A", Good),
        FakeEP("b", "m:B", type("B", (Good,), {"id": "b-check"})()),
        FakeEP("c", "m:C", lambda: [type("C", (Good,), {"id": "c-check"})()]),
    ]
    reg = load_registry(entry_points=eps)
    assert reg.ids() == ["b-check", "c-check", "good-check"]  # plugins ordered by id


def test_broken_plugin_becomes_a_failure_named_after_its_distribution() -> None:
    eps = [FakeEP("x", "bad_pkg:X", exc=ImportError("No module named 'torch'"), dist="bad-plugin")]
    reg = load_registry(entry_points=eps)
    assert reg.checks == []
    (failure,) = reg.failures
    assert failure.id == "plugin-bad-plugin"
    assert "No module named 'torch'" in failure.message


def test_invalid_check_object_is_a_failure() -> None:
    bad = type("Bad", (), {"id": "Not Kebab", "title": "t", "description": "d", "run": lambda self, ctx: []})
    reg = load_registry(entry_points=[FakeEP("bad", "m:Bad", bad)])
    assert reg.failures and "kebab-case" in reg.failures[0].message
    assert validate_check(Good()) is None


def test_duplicate_ids_are_refused_naming_both_providers() -> None:
    eps = [FakeEP("a", "one:A", Good, dist="one-dist"), FakeEP("b", "two:B", Good, dist="two-dist")]
    with pytest.raises(DuplicateCheckId) as exc:
        load_registry(entry_points=eps)
    assert "one-dist" in str(exc.value) and "two-dist" in str(exc.value)


def test_no_plugins_loads_only_builtins() -> None:
    eps = [FakeEP("a", "m:A", Good, dist="thirdparty"), FakeEP("b", "m:B", Good, dist="msdoctor")]
    reg = load_registry(plugins=False, entry_points=eps)
    assert [c.provider for c in reg.checks] == ["msdoctor"]


def _plugin_project(root: Path, dist: str, module: str, body: str, ep: str) -> Path:
    proj = root / dist
    (proj / module).mkdir(parents=True)
    (proj / module / "__init__.py").write_text(textwrap.dedent(body))
    (proj / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{dist}"
        version = "0.1.0"

        [project.entry-points."msdoctor.checks"]
        {ep}

        [tool.setuptools]
        packages = ["{module}"]
        """))
    return proj


def _doc_example() -> str:
    """The plugin of docs/plugins.md, taken from the doc itself so the doc cannot rot."""
    text = (REPO / "docs" / "plugins.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


GOOD_PLUGIN = _doc_example()

BROKEN_PLUGIN = '''
    raise ImportError("this plugin needs a package that is not installed")
'''

CLASHING_PLUGIN = '''
    class Clash:
        id = "python-env"
        title = "clash"
        description = "registers an id msdoctor already has"

        def run(self, ctx):
            return []
'''


@pytest.fixture(scope="module")
def plugin_venvs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two real venvs over the test env: one with a good and a broken plugin, one with a clashing id."""
    root = tmp_path_factory.mktemp("plugins")
    good = _plugin_project(root, "msdoctor-npu-quota", "npu_quota", GOOD_PLUGIN, 'npu-quota = "npu_quota:NpuQuota"')
    broken = _plugin_project(root, "msdoctor-broken", "broken_plugin", BROKEN_PLUGIN, 'broken = "broken_plugin:Check"')
    clash = _plugin_project(root, "msdoctor-clash", "clash_plugin", CLASHING_PLUGIN, 'clash = "clash_plugin:Clash"')
    v1 = make_venv(root / "v1", layered=True)
    v1.pip("install", "--no-deps", "--no-build-isolation", str(good), str(broken))
    v2 = make_venv(root / "v2", layered=True)
    v2.pip("install", "--no-deps", "--no-build-isolation", str(clash))
    return {"v1": v1, "v2": v2}


def _msdoctor(venv, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([venv.python, "-m", "msdoctor", *args], capture_output=True, text=True,
                          env=env_with(), timeout=120)


@pytest.mark.slow
def test_real_third_party_plugin_runs(plugin_venvs: dict) -> None:
    res = _msdoctor(plugin_venvs["v1"], "check", "--quick", "--only", "npu-quota,plugin-msdoctor-broken",
                    "--format", "json")
    data = json.loads(res.stdout)
    checks = {c["id"]: c for c in data["checks"]}
    assert checks["npu-quota"]["provider"] == "msdoctor-npu-quota"
    assert checks["npu-quota"]["status"] == "warn"
    assert checks["npu-quota"]["findings"][0]["title"].startswith("quota unknown for 3.")
    # the broken plugin is an error result named after its distribution, not a crash
    broken = checks["plugin-msdoctor-broken"]
    assert broken["status"] == "error"
    assert "needs a package that is not installed" in broken["findings"][0]["detail"]
    assert res.returncode == 1
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_real_plugins_can_be_switched_off(plugin_venvs: dict) -> None:
    res = _msdoctor(plugin_venvs["v1"], "list-checks", "--no-plugins")
    assert "npu-quota" not in res.stdout and "python-env" in res.stdout
    env = env_with({"MSDOCTOR_DISABLE_PLUGIN_AUTOLOAD": "1"})
    res = subprocess.run([plugin_venvs["v1"].python, "-m", "msdoctor", "list-checks"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert "npu-quota" not in res.stdout
    res = _msdoctor(plugin_venvs["v1"], "list-checks")
    assert "npu-quota" in res.stdout and "[msdoctor-npu-quota]" in res.stdout
    assert "(failed to load)" in res.stdout


@pytest.mark.slow
def test_real_duplicate_id_is_refused(plugin_venvs: dict) -> None:
    res = _msdoctor(plugin_venvs["v2"], "check", "--quick")
    assert res.returncode == 2
    assert "registered twice" in res.stderr
    assert "msdoctor-clash" in res.stderr and "msdoctor" in res.stderr
    assert "Traceback" not in res.stderr
    # the way out it suggests works
    res = _msdoctor(plugin_venvs["v2"], "check", "--quick", "--no-plugins", "--only", "python-env")
    assert res.returncode in (0, 1), res.stderr


# -- the entry-point scan (msdoctor.plugins.entry_points) against importlib.metadata --------------------------
def _rows(eps) -> list:
    return sorted((e.name, e.value, e.dist.name) for e in eps)


@pytest.mark.parametrize("group", ["msdoctor.checks", "console_scripts", "pytest11"])
def test_entry_point_scan_matches_importlib_metadata_in_the_test_environment(group: str) -> None:
    from msdoctor.plugins import _metadata_entry_points, entry_points

    assert _rows(entry_points(group)) == _rows(_metadata_entry_points(group))


def test_entry_point_scan_matches_importlib_metadata_on_odd_layouts(tmp_path: Path, monkeypatch) -> None:
    """Two copies of one distribution (the first on sys.path wins), an egg-info from a develop install,
    comments, extras, a dotted attribute, an unrelated section and a distribution without entry points."""
    from msdoctor.plugins import _metadata_entry_points, entry_points

    first, second, develop = tmp_path / "first", tmp_path / "second", tmp_path / "develop"

    def dist(where: Path, dirname: str, name: str, eps: "str | None") -> None:
        d = where / dirname
        d.mkdir(parents=True)
        (d / ("PKG-INFO" if dirname.endswith(".egg-info") else "METADATA")).write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\nName: not-a-header\n")
        if eps is not None:
            (d / "entry_points.txt").write_text(eps)

    dist(first, "Shared_Plugin-2.0.dist-info", "Shared.Plugin", "[msdoctor.checks]\nnew = shared_plugin:NewCheck\n")
    dist(second, "shared_plugin-1.0.dist-info", "shared-plugin", "[msdoctor.checks]\nold = shared_plugin:OldCheck\n")
    dist(second, "other-0.1.dist-info", "other", "# a comment\n[console_scripts]\nother = other:main\n\n"
         "[msdoctor.checks]\n# another comment\nfirst = other.checks:Registry.first [gpu]\nsecond=other:make\n")
    dist(second, "plain-1.0.dist-info", "plain", None)
    dist(develop, "devplug.egg-info", "devplug", "[msdoctor.checks]\ndev = devplug:Check\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second), str(develop)])
    for group in ("msdoctor.checks", "console_scripts"):
        assert _rows(entry_points(group)) == _rows(_metadata_entry_points(group))
    assert _rows(entry_points()) == [("dev", "devplug:Check", "devplug"), ("first", "other.checks:Registry.first [gpu]",
                                     "other"), ("new", "shared_plugin:NewCheck", "Shared.Plugin"),
                                     ("second", "other:make", "other")]


def test_entry_point_load_follows_dotted_attributes_and_ignores_extras(tmp_path: Path, monkeypatch) -> None:
    from msdoctor.plugins import EntryPoint, _Dist

    (tmp_path / "epmod_demo.py").write_text("class Registry:\n    class first:\n        id = 'x'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("first", "epmod_demo:Registry.first [gpu]", _Dist("demo", str(tmp_path)))
    assert ep.load().id == "x"
    assert EntryPoint("m", "epmod_demo", _Dist("demo", "")).load().__name__ == "epmod_demo"
