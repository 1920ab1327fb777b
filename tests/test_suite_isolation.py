"""The suite itself: it writes only under temporary folders, and it finds the machine's Pythons as the set-up does.

tests/conftest.py moves XDG_CACHE_HOME to a temporary folder of the pytest run before any test starts, so the
trainer's token files ($XDG_CACHE_HOME/msdoctor/tokens, training/data.py) never land in the user's ~/.cache.
tests/helpers.which_python looks in $PYENV_ROOT/versions, as scripts/_python.sh does, not in a fixed ~/.pyenv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import helpers
from conftest import REAL_CACHE_HOME
from helpers import BASE_PYTHON, env_with


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*")) if root.is_dir() else set()


def test_the_trainers_token_cache_of_a_test_subprocess_is_in_the_runs_temporary_cache(tmp_path: Path) -> None:
    """A subprocess started the way tests start them (env_with) tokenizes into the run's cache, not ~/.cache."""
    temp_cache = Path(os.environ["MSDOCTOR_TEST_CACHE_HOME"])
    assert os.environ["XDG_CACHE_HOME"] == str(temp_cache)
    assert not temp_cache.resolve().is_relative_to(REAL_CACHE_HOME.resolve())
    real = REAL_CACHE_HOME / "msdoctor"
    before = _files(real)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("isolation test corpus\n" * 50)
    code = textwrap.dedent(f"""
        from pathlib import Path
        from msdoctor.training.data import TokenFile, make_tokenizer
        tf = TokenFile.build([Path({str(corpus)!r})], make_tokenizer("byte"))
        print(tf.path)
        """)
    res = subprocess.run(
        [BASE_PYTHON, "-c", code], capture_output=True, text=True, env=env_with(), cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr
    written = Path(res.stdout.strip())
    assert written.is_file() and written.parent == temp_cache / "msdoctor" / "tokens", written
    assert _files(real) == before  # nothing new in the user's own msdoctor cache


def test_pip_keeps_the_users_cache_while_xdg_cache_home_is_moved() -> None:
    """Moving XDG_CACHE_HOME must not make every venv a test builds download its wheels again."""
    assert os.environ["PIP_CACHE_DIR"] != os.path.join(os.environ["XDG_CACHE_HOME"], "pip")
    res = subprocess.run([BASE_PYTHON, "-m", "pip", "cache", "dir"], capture_output=True, text=True, timeout=60)
    if res.returncode == 0:  # pip answers "cache is disabled" with an error where PIP_NO_CACHE_DIR is set
        assert res.stdout.strip() == os.environ["PIP_CACHE_DIR"]


def test_which_python_looks_in_pyenv_root_not_a_fixed_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = "%d.%d" % sys.version_info[:2]
    root = tmp_path / "elsewhere-pyenv"
    exe = root / "versions" / f"{version}.99" / "bin" / "python"
    exe.parent.mkdir(parents=True)
    exe.symlink_to(sys.executable)
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no python3.X on PATH: only pyenv's folder can answer
    helpers.which_python.cache_clear()
    try:
        assert helpers.pyenv_root() == root
        assert helpers.which_python(version) == str(exe)
        assert str(root / "versions") in helpers.no_python_reason("3.6")
        monkeypatch.delenv("PYENV_ROOT")
        assert helpers.pyenv_root() == Path.home() / ".pyenv"
    finally:
        helpers.which_python.cache_clear()


def test_tests_sharing_a_module_fixture_stay_on_one_worker_and_the_others_spread(tmp_path: Path) -> None:
    """scripts/test.sh's --dist loadgroup through tests/conftest.py, on a copy of it in a scratch suite: the module
    fixture is built once and its tests run on one worker; independent tests of one file use both workers."""
    here = Path(__file__).resolve().parent
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("conftest.py", "helpers.py"):
        (suite / name).write_text((here / name).read_text())
    log = tmp_path / "log"
    log.mkdir()
    (suite / "test_shared.py").write_text(
        textwrap.dedent(f"""
        import os, pytest
        LOG = {str(log)!r}
        @pytest.fixture(scope="module")
        def costly():
            open(os.path.join(LOG, "built-" + os.environ["PYTEST_XDIST_WORKER"] + "-" + str(os.getpid())), "w").close()
            return 1
        @pytest.mark.parametrize("i", range(6))
        def test_uses(costly, i):
            open(os.path.join(LOG, f"shared-{{i}}-" + os.environ["PYTEST_XDIST_WORKER"]), "w").close()
        """)
    )
    (suite / "test_single.py").write_text(
        textwrap.dedent(f"""
        import os, time, pytest
        LOG = {str(log)!r}
        @pytest.mark.parametrize("i", range(6))
        def test_alone(i):
            time.sleep(0.3)
            open(os.path.join(LOG, f"single-{{i}}-" + os.environ["PYTEST_XDIST_WORKER"]), "w").close()
        """)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MSDOCTOR_TEST_", "PYTEST_"))}
    res = subprocess.run(
        [
            BASE_PYTHON,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "--no-loadscope-reorder",
            "-o",
            "addopts=",
            str(suite),
        ],
        capture_output=True,
        text=True,
        cwd=suite,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    names = sorted(p.name for p in log.iterdir())
    built = [n for n in names if n.startswith("built-")]
    assert len(built) == 1, names  # the module fixture once, not once per worker
    assert {n.rsplit("-", 1)[1] for n in names if n.startswith("shared-")} == {built[0].split("-")[1]}
    assert {n.rsplit("-", 1)[1] for n in names if n.startswith("single-")} == {"gw0", "gw1"}, names


def _tiny_wheel(where: Path, version: str) -> Path:
    """A real wheel of ``tinyx`` with a module and a console script (METADATA, WHEEL, entry_points, RECORD)."""
    import base64
    import hashlib
    import zipfile

    info = f"tinyx-{version}.dist-info"
    files = {
        "tinyx.py": f"VERSION = {version!r}\ndef main():\n    print(VERSION)\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tinyx\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: msdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\ntinyx = tinyx:main\n",
    }
    rows = [
        f"{rel},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},"
        f"{len(t.encode())}"
        for rel, t in files.items()
    ] + [f"{info}/RECORD,,"]
    path = where / f"tinyx-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path


def test_a_linked_copy_of_a_venv_is_installed_into_without_changing_the_original(tmp_path: Path) -> None:
    """tests/helpers.linked_copy: the real pip replaces a package in the copy; the original keeps its files."""
    wheels = [_tiny_wheel(tmp_path, v) for v in ("1.0", "2.0")]
    original = helpers.make_venv(tmp_path / "original")
    original.pip("install", "--no-deps", "--no-index", "--no-compile", "--quiet", str(wheels[0]))
    module = original.site_packages / "tinyx.py"
    copy = helpers.linked_copy(original, tmp_path / "copy")
    assert os.path.samefile(module, copy.site_packages / "tinyx.py")  # linked, not copied
    assert (copy.bin / "tinyx").read_text().startswith(f"#!{copy.python}")
    assert (original.bin / "tinyx").read_text().startswith(f"#!{original.python}")
    copy.pip("install", "--no-deps", "--no-index", "--no-compile", "--quiet", str(wheels[1]))
    run = [[str(v.bin / "tinyx")] for v in (original, copy)]
    assert [subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip() for argv in run] == [
        "1.0",
        "2.0",
    ]
    assert "VERSION = '1.0'" in module.read_text() and (original.site_packages / "tinyx-1.0.dist-info").is_dir()
    assert not (copy.site_packages / "tinyx-1.0.dist-info").exists()


def test_built_once_builds_once_and_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    name = f"probe-{tmp_path.name}"
    builds = []

    def fails(folder: Path) -> None:
        folder.mkdir()
        raise RuntimeError("no index")

    with pytest.raises(RuntimeError):
        helpers.built_once(name, fails)

    def build(folder: Path) -> None:
        builds.append(folder)
        folder.mkdir()
        (folder / "made").write_text("x")

    first = helpers.built_once(name, build)
    assert helpers.built_once(name, build) == first and len(builds) == 1 and (first / "made").is_file()


def test_free_ports_are_free_and_outside_the_ephemeral_range() -> None:
    """A port a test holds for minutes before msrun binds it must not be one the OS hands to outgoing connections."""
    import socket

    from helpers import free_port

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert all(20000 <= p < low for p in ports), ports
    assert len(set(ports)) > 40  # random: parallel workers do not collide
    with socket.socket() as s:
        s.bind(("", ports[0]))  # free when handed out
