"""The distribution: a real wheel holds everything under msdoctor/, nothing generic at the top level."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, REPO, env_with, make_venv, msdoctor_exe


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # build from a copy: setuptools writes build/ and *.egg-info into the source tree it builds
    src = out / "src"
    shutil.copytree(
        REPO,
        src,
        ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "runs"
        ),
    )
    subprocess.run(
        [BASE_PYTHON, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (whl,) = out.glob("msdoctor-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_installs_nothing_generic_at_top_level(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"msdoctor", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    for sub in ("checks", "training", "compat_matrix"):
        assert any(n.startswith(f"msdoctor/{sub}/") for n in names), sub
    assert "msdoctor/probe/target_probe.py" in names
    assert "msdoctor/checks/python_env/__init__.py" in names
    assert "msdoctor/training/config.py" in names


@pytest.mark.slow
def test_wheel_ships_every_check_module(wheel: Path) -> None:
    """pyproject lists packages by hand: a check sub-package missing from that list would ship without its rules."""
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = [p.relative_to(REPO).as_posix() for p in (REPO / "checks").rglob("*.py")]
    assert any("/" in rel[len("checks/") :] for rel in sources)  # one sub-package per check
    for rel in sources:
        assert f"msdoctor/{rel}" in names, rel


@pytest.mark.slow
def test_wheel_ships_data_files(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    repo_data = [p.relative_to(REPO).as_posix() for p in (REPO / "compat_matrix").glob("*.toml")]
    repo_data += [p.relative_to(REPO).as_posix() for p in (REPO / "training" / "configs").glob("*.yaml")]
    zf = zipfile.ZipFile(wheel)
    for rel in repo_data:
        assert f"msdoctor/{rel}" in names, rel
        assert zf.read(f"msdoctor/{rel}") == (REPO / rel).read_bytes(), rel


@pytest.mark.slow
def test_wheel_ships_the_docs(wheel: Path) -> None:
    """Messages name docs/ files (msdoctor/shipped.py): a pip user has them as msdoctor/docs/."""
    zf = zipfile.ZipFile(wheel)
    docs = [p for p in (REPO / "docs").iterdir() if p.suffix in (".md", ".json")]
    assert {"training-config.md", "memory.md", "training-config-check.md"} <= {p.name for p in docs}
    for p in docs:
        assert zf.read(f"msdoctor/docs/{p.name}") == p.read_bytes(), p.name


#: absolute paths to a shipped file or folder in msdoctor's output (messages, help, findings)
NAMED = re.compile(r"(/[^\s()'`;,]+(?:\.md|\.yaml|/configs))(?![\w/])")


def named_in_messages(exe: str, cwd: Path) -> dict[str, list[Path]]:
    """Every message, help text and finding that points at a shipped file, from a directory with no docs/ in it:
    what it is -> the paths it names."""

    def run(*args: str, rc: int) -> str:
        res = subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, env=env_with(), timeout=120)
        assert res.returncode == rc, (args, res.stdout, res.stderr)
        return res.stdout + res.stderr

    out: dict[str, str] = {}
    (cwd / "empty.yaml").write_text("")
    out["empty config"] = run("check", "--quick", "--config", "empty.yaml", rc=2)
    (cwd / "bad.yaml").write_text("name: x\nmodel:\n  hiden_size: 64\n")
    out["bad key"] = run("train", "--config", "bad.yaml", rc=2)
    (cwd / "hf.json").write_text(json.dumps({"model_type": "llama"}))
    out["not msdoctor's config"] = run("train", "--config", "hf.json", rc=2)
    out["train --help"] = run("train", "--help", rc=0)
    tiny = re.search(r"--config (\S+/tiny-cpu\.yaml)", out["train --help"])
    assert tiny, out["train --help"]
    out["bad override"] = run("train", "--config", tiny.group(1), "--max-steps", "1", rc=2)  # warmup >= max_steps
    out["memory -v"] = run("memory", "--config", tiny.group(1), "-v", rc=0)
    (cwd / "directive.yaml").write_text("# msdoctor: devices=many\nname: x\n")
    report = json.loads(
        run("check", "--quick", "--only", "training-config", "--config", "directive.yaml", "--format", "json", rc=0)
    )
    out["directive finding"] = json.dumps(
        [f["detail"] for c in report["checks"] for f in c["findings"] if f["code"] == "directive"]
    )
    # the user's own files (the configs above) aside; a relative docs/x.md would show up as /x.md and not exist
    return {
        what: [Path(p) for p in NAMED.findall(text) if not Path(p).is_relative_to(cwd)] for what, text in out.items()
    }


def assert_shipped(named: dict[str, list[Path]], root: Path) -> None:
    for what, paths in named.items():
        assert paths, f"{what}: names no shipped file"
        for p in paths:
            assert p.exists() and p.is_relative_to(root), (what, p)
    everything = {p.name for paths in named.values() for p in paths}
    assert {"training-config.md", "memory.md", "training-config-check.md", "tiny-cpu.yaml", "configs"} <= everything


def test_messages_name_files_this_install_has(tmp_path: Path) -> None:
    """The clone's editable install: the pointers are the clone's own docs/ and training/configs/."""
    assert_shipped(named_in_messages(msdoctor_exe(), tmp_path), REPO)


@pytest.mark.slow
def test_wheel_registers_console_script_and_builtin_checks(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    ep = next(n for n in zf.namelist() if n.endswith("entry_points.txt"))
    text = zf.read(ep).decode()
    assert "msdoctor = msdoctor.cli:main" in text
    assert "[msdoctor.checks]" in text and "python-env = msdoctor.checks.python_env:PythonEnvCheck" in text


@pytest.mark.slow
def test_installed_wheel_runs_from_a_plain_venv(wheel: Path, tmp_path: Path) -> None:
    """A plain (non-editable) install with its dependencies into a fresh venv, as `pip install .` does."""
    venv = make_venv(tmp_path / "v")
    venv.pip("install", str(wheel))
    site = venv.site_packages
    assert (site / "msdoctor" / "checks" / "python_env" / "__init__.py").exists()
    assert not (site / "checks").exists() and not (site / "training").exists()
    res = subprocess.run(
        [str(venv.bin / "msdoctor"), "check", "--quick", "--only", "python-env"],
        capture_output=True,
        text=True,
        env=env_with(),
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    import_path = venv.run("import msdoctor; print(msdoctor.__file__)", cwd=tmp_path).stdout.strip()
    assert import_path.startswith(str(site))
    # every file a message points at is in the installed package, not in a clone the user does not have
    work = tmp_path / "work"
    work.mkdir()
    assert_shipped(named_in_messages(str(venv.bin / "msdoctor"), work), site / "msdoctor")


def test_every_package_directory_is_listed_for_the_wheel() -> None:
    """pyproject lists packages by hand (the top-level folders map into msdoctor): a package directory left
    out ships without its modules, and the installed msdoctor fails with 'No module named ...' (as
    msdoctor.domain and msdoctor.explain once did). Read from the source tree, so it runs in the fast tier."""
    from msdoctor.tomlcompat import tomllib

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    mapped = setuptools["package-dir"]
    on_disk = set()
    for name, folder in mapped.items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root).parts
            if any(part in ("__pycache__",) for part in rel):
                continue
            # a sub-folder that is itself mapped is counted under its own name
            dotted = ".".join((name, *rel)) if rel else name
            on_disk.add(dotted)
    missing = sorted(on_disk - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    assert "msdoctor.domain" in listed and "msdoctor.checks.memory_fit" in listed
