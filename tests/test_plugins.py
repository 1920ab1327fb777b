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
    (proj / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
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
        """)
    )
    return proj


def _doc_example() -> str:
    """The plugin of docs/plugins.md, taken from the doc itself so the doc cannot rot."""
    text = (REPO / "docs" / "plugins.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


GOOD_PLUGIN = _doc_example()

BROKEN_PLUGIN = """
    raise ImportError("this plugin needs a package that is not installed")
"""

CLASHING_PLUGIN = """
    class Clash:
        id = "python-env"
        title = "clash"
        description = "registers an id msdoctor already has"

        def run(self, ctx):
            return []
"""


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
    return subprocess.run(
        [venv.python, "-m", "msdoctor", *args], capture_output=True, text=True, env=env_with(), timeout=120
    )


@pytest.mark.slow
def test_real_third_party_plugin_runs(plugin_venvs: dict) -> None:
    res = _msdoctor(
        plugin_venvs["v1"], "check", "--quick", "--only", "npu-quota,plugin-msdoctor-broken", "--format", "json"
    )
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
    res = subprocess.run(
        [plugin_venvs["v1"].python, "-m", "msdoctor", "list-checks"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
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
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\nName: not-a-header\n"
        )
        if eps is not None:
            (d / "entry_points.txt").write_text(eps)

    dist(first, "Shared_Plugin-2.0.dist-info", "Shared.Plugin", "[msdoctor.checks]\nnew = shared_plugin:NewCheck\n")
    dist(second, "shared_plugin-1.0.dist-info", "shared-plugin", "[msdoctor.checks]\nold = shared_plugin:OldCheck\n")
    dist(
        second,
        "other-0.1.dist-info",
        "other",
        "# a comment\n[console_scripts]\nother = other:main\n\n"
        "[msdoctor.checks]\n# another comment\nfirst = other.checks:Registry.first [gpu]\nsecond=other:make\n",
    )
    dist(second, "plain-1.0.dist-info", "plain", None)
    dist(develop, "devplug.egg-info", "devplug", "[msdoctor.checks]\ndev = devplug:Check\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second), str(develop)])
    for group in ("msdoctor.checks", "console_scripts"):
        assert _rows(entry_points(group)) == _rows(_metadata_entry_points(group))
    assert _rows(entry_points()) == [
        ("dev", "devplug:Check", "devplug"),
        ("first", "other.checks:Registry.first [gpu]", "other"),
        ("new", "shared_plugin:NewCheck", "Shared.Plugin"),
        ("second", "other:make", "other"),
    ]


def test_entry_point_load_follows_dotted_attributes_and_ignores_extras(tmp_path: Path, monkeypatch) -> None:
    from msdoctor.plugins import EntryPoint, _Dist

    (tmp_path / "epmod_demo.py").write_text("class Registry:\n    class first:\n        id = 'x'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("first", "epmod_demo:Registry.first [gpu]", _Dist("demo", str(tmp_path)))
    assert ep.load().id == "x"
    assert EntryPoint("m", "epmod_demo", _Dist("demo", "")).load().__name__ == "epmod_demo"


# -- the protocol validated at registration; nothing a plugin does crashes, stalls or silently ends a run -------
# (issue 27 item 4, issue 31 items 4 and 12)

from msdoctor.context import Context, FactSpec, Options  # noqa: E402
from msdoctor.model import Finding, Status  # noqa: E402
from msdoctor.plugins import LoadedCheck, describe_check  # noqa: E402
from msdoctor.runner import RunSettings, run_checks  # noqa: E402

SOME_FACT = FactSpec("some-fact", lambda ctx: 1, slow=True)


def _with(**members):
    return type("P", (Good,), members)


@pytest.mark.parametrize(
    "members, words",
    [
        ({"prefetch": SOME_FACT}, "prefetch must be a tuple of FactSpec, got one FactSpec"),
        ({"prefetch": ("some-fact",)}, "prefetch must be a tuple of FactSpec"),
        ({"timeout_s": "10"}, "timeout_s must be a positive number"),
        ({"timeout_s": -1}, "timeout_s must be a positive number"),
        ({"timeout_s": True}, "timeout_s must be a positive number"),
        ({"timeout_s": float("nan")}, "timeout_s must be a positive number"),
        ({"order": "first"}, "order must be a number"),
        ({"needs_config": "yes"}, "needs_config must be True or False"),
        ({"title": property(lambda self: 1 / 0)}, "reading its 'title' raised ZeroDivisionError"),
    ],
)
def test_a_wrong_optional_member_is_that_checks_error_result(members: dict, words: str) -> None:
    reg = load_registry(entry_points=[FakeEP("p", "m:P", _with(**members))])
    assert reg.checks == []
    (failure,) = reg.failures
    assert words in failure.message
    assert failure.id == "good-check"  # the row carries the check's own id: --only good-check selects it


@pytest.mark.parametrize(
    "ident, words",
    [
        (property(lambda self: {}["x"]), "reading its 'id' raised KeyError"),
        (7, "has no 'id' string"),
        (b"good-check", "has no 'id' string"),
        ("Good Check", "is not kebab-case"),
    ],
)
def test_an_id_that_raises_or_is_not_a_kebab_string_is_a_failure_named_after_the_distribution(ident, words) -> None:
    reg = load_registry(entry_points=[FakeEP("p", "m:P", _with(id=ident), dist="raising"), FakeEP("g", "m:G", Good)])
    assert reg.ids() == ["good-check"]  # the other plugin's check still runs
    (failure,) = reg.failures
    assert failure.id == "plugin-raising" and words in failure.message


def test_valid_optional_members_are_read_once_at_registration() -> None:
    calls = []

    def order(self):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("read twice")
        return 5

    reg = load_registry(
        entry_points=[
            FakeEP("p", "m:P", _with(order=property(order), prefetch=[SOME_FACT], timeout_s=2, needs_config=True))
        ]
    )
    (loaded,) = reg.checks
    assert loaded.info.order == 5.0 and loaded.info.prefetch == (SOME_FACT,) and loaded.info.timeout_s == 2.0
    assert loaded.info.needs_config is True
    assert len(calls) == 1
    assert describe_check(Good()).prefetch == ()


@pytest.mark.parametrize(
    "exc, words",
    [
        (SystemExit(0), "sys.exit(0)"),
        (KeyboardInterrupt(), "KeyboardInterrupt while loading (no Ctrl-C was pressed)"),
        (GeneratorExit(), "GeneratorExit"),
    ],
)
def test_a_plugin_that_exits_or_interrupts_at_import_is_a_failure(exc: BaseException, words: str) -> None:
    reg = load_registry(entry_points=[FakeEP("x", "m:X", exc=exc, dist="exiter"), FakeEP("g", "m:G", Good)])
    assert reg.ids() == ["good-check"]
    (failure,) = reg.failures
    assert failure.id == "plugin-exiter" and words in failure.message


def test_a_real_ctrl_c_during_plugin_import_still_stops_msdoctor() -> None:
    import os
    import signal
    import time

    class SlowEP(FakeEP):
        def load(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(2)  # the signal arrives here
            return Good

    with pytest.raises(KeyboardInterrupt):
        load_registry(entry_points=[SlowEP("s", "m:S")])


def _ctx(tmp_path: Path) -> Context:
    return Context(Options(project_dir=tmp_path), environ={})


def _loaded(check) -> LoadedCheck:
    return LoadedCheck(check, "thirdparty", f"{check.id} = m:X")


@pytest.mark.parametrize(
    "exc, words", [(SystemExit(0), "called sys.exit(0)"), (KeyboardInterrupt(), "crashed: KeyboardInterrupt")]
)
def test_a_check_that_exits_in_run_is_an_error_result_at_once(tmp_path: Path, exc: BaseException, words: str) -> None:
    import time

    def run(self, ctx):
        raise exc

    started = time.monotonic()
    (res,) = run_checks([_loaded(_with(run=run)())], _ctx(tmp_path), RunSettings(check_timeout_s=60))
    assert time.monotonic() - started < 10  # not the check's timeout: the thread's exit was a result
    assert res.status is Status.ERROR and words in res.findings[0].title


def _bogus_status_finding() -> Finding:
    f = Finding.warn("looks fine")
    object.__setattr__(f, "status", "ok")
    return f


def _bogus_evidence_finding() -> Finding:
    f = Finding.warn("looks fine")
    object.__setattr__(f, "evidence", ["not", "a", "mapping"])
    return f


@pytest.mark.parametrize(
    "make, words", [(_bogus_status_finding, "status 'ok'"), (_bogus_evidence_finding, "evidence of type list")]
)
def test_a_finding_that_bypassed_its_constructor_is_the_checks_error(tmp_path: Path, make, words: str) -> None:
    (res,) = run_checks([_loaded(_with(run=lambda self, ctx: [make()])())], _ctx(tmp_path))
    assert res.status is Status.ERROR and words in res.findings[0].title
    assert res.id == "good-check"


def test_needs_config_skips_the_check_without_running_it(tmp_path: Path) -> None:
    def run(self, ctx):
        raise AssertionError("ran without a config")

    (res,) = run_checks([_loaded(_with(run=run, needs_config=True)())], _ctx(tmp_path))
    assert res.status is Status.SKIP and "pass --config FILE" in res.findings[0].detail


# -- real plugin distributions on PYTHONPATH, through the real `msdoctor` command --------------------------------
def _dist_on_path(root: Path, module: str, body: str) -> Path:
    """A plugin as an installed distribution: module + NAME-0.1.dist-info (METADATA, entry_points.txt)."""
    (root / f"{module}.py").write_text(textwrap.dedent(body))
    info = root / f"{module.replace('_', '-')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[msdoctor.checks]\n{module.replace('_', '-')} = {module}:Plug\n")
    return root


def _cli(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    from helpers import msdoctor_exe

    return subprocess.run(
        [msdoctor_exe(), *args],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=timeout,
        env=env_with({"PYTHONPATH": str(root)}),
    )


PLUGIN_TAIL = """
class Plug:
    id, title, description = "plug", "Plug", "a plugin"

    def run(self, ctx):
        from msdoctor.api import Finding
        return [Finding.passed("fine", proved="nothing")]
"""


@pytest.mark.parametrize(
    "head, words",
    [
        ("import sys\nsys.exit(0)\n", "sys.exit(0)"),
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
        ("import os\nos._exit(0)\n", "ended the interpreter (exit code 0"),
    ],
)
def test_a_plugin_that_ends_the_process_at_import_does_not_pass_the_gate(tmp_path: Path, head: str, words: str) -> None:
    _dist_on_path(tmp_path, "exit_plugin", head + PLUGIN_TAIL)
    listed = _cli(tmp_path, "list-checks")
    assert "plugin-exit-plugin" in listed.stdout and words in listed.stdout, listed
    res = _cli(tmp_path, "check", "--quick", "--only", "python-env,plugin-exit-plugin", "--format", "json")
    assert res.returncode == 1, res.stderr
    rows = {c["id"]: c for c in json.loads(res.stdout)["checks"]}
    assert rows["plugin-exit-plugin"]["status"] == "error"
    assert words in rows["plugin-exit-plugin"]["findings"][0]["detail"]
    assert rows["python-env"]["status"] in ("pass", "warn", "fail")


def test_a_plugin_whose_import_hangs_is_given_up_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from msdoctor import plugin_trial, plugins

    _dist_on_path(tmp_path, "hang_plugin", "import time\ntime.sleep(120)\n" + PLUGIN_TAIL)
    monkeypatch.setattr(plugin_trial, "TRIAL_TIMEOUT_S", 2.0)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [ep for ep in plugins.entry_points(path=[str(tmp_path)])]
    reg = load_registry(entry_points=eps, trial=True)
    (failure,) = reg.failures
    assert "did not finish within 2 s" in failure.message
    assert "hang_plugin" not in sys.modules  # never imported in-process


def test_a_plugin_that_leaves_a_child_running_does_not_stall_the_run(tmp_path: Path) -> None:
    import os
    import time

    pidfile = tmp_path / "child.pid"
    _dist_on_path(
        tmp_path,
        "child_plugin",
        f"""
class Plug:
    id, title, description = "plug", "Plug", "a plugin"

    def run(self, ctx):
        import subprocess
        from msdoctor.api import Finding
        child = subprocess.Popen(["sleep", "300"])  # inherits msdoctor's stdout
        open({str(pidfile)!r}, "w").write(str(child.pid))
        return [Finding.passed("started a child", proved="it runs")]
""",
    )
    started = time.monotonic()
    res = _cli(tmp_path, "check", "--quick", "--only", "plug", timeout=60)  # the pipe closes: no stall
    assert time.monotonic() - started < 60 and res.returncode == 0, res
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        raise AssertionError("the plugin's child outlived msdoctor")


def test_the_api_exports_the_facts_a_plugin_may_read() -> None:
    import msdoctor.api as api

    facts = [name for name in api.__all__ if name.isupper()]
    assert {"TARGET", "CONFIG", "CANN", "NPU_SMI", "NVIDIA", "LIVE_DEVICE", "MATRIX"} <= set(facts)
    for name in api.__all__:
        value = getattr(api, name)  # each lazy name resolves
        if name.isupper():
            assert isinstance(value, FactSpec), name
    with pytest.raises(AttributeError):
        api.NOT_A_FACT  # noqa: B018
    # the compat matrix a plugin reads is the packaged one, parsed once per run as the built-in checks read it
    ctx = api.Context(api.Options())
    matrix = ctx.get(api.MATRIX)
    assert isinstance(matrix, api.Matrix) and matrix.mindspore("2.7.0") is not None
    assert ctx.get(api.MATRIX) is matrix
