"""duplicate-installs: the pure evaluation over probe facts, with tiny builders.

The probe facts are plain dicts in the probe's schema (as target_probe.py prints them); the
files a check reads itself (RECORD, entry_points.txt, scripts on PATH) are tiny real trees
written in tmp_path by `site()` / `write_dist()`, with real sha256 hashes in RECORD.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Any, Optional

import pytest

from helpers import make_ctx
from msdoctor.checks.duplicate_installs import DuplicateInstallsCheck, evaluate
from msdoctor.checks.duplicate_installs.record import Records, file_hash
from msdoctor.checks.duplicate_installs.scripts import shebang_interpreter
from msdoctor.facts.target import TARGET, TargetFacts
from msdoctor.model import Status

PY = "3.11"


# -- builders ------------------------------------------------------------------------------------
def site(root: Path) -> Path:
    """An environment prefix with bin/python* and bin/pip* (as venv and ensurepip make them) and
    lib/python3.11/site-packages; returns site-packages."""
    sp = root / "lib" / f"python{PY}" / "site-packages"
    sp.mkdir(parents=True)
    for name in ("python", "python3", f"python{PY}"):
        exe(root / "bin" / name, "")
    for name in ("pip", "pip3"):
        exe(root / "bin" / name, f"#!{root}/bin/python{PY}\n")
    return sp


def exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def write_dist(
    sp: Path,
    name: str,
    version: str,
    files: dict[str, str],
    *,
    top: Optional[list[str]] = None,
    meta: bool = True,
    record: bool = True,
    scripts: Optional[dict[str, str]] = None,
    editable: Optional[Path] = None,
    installer: str = "pip",
    dirname: Optional[str] = None,
) -> dict:
    """Install-like tree: the files, a dist-info with METADATA and a RECORD with real hashes.
    Returns the probe's dict for it."""
    info = sp / (dirname or f"{name.replace('-', '_')}-{version}.dist-info")
    info.mkdir(parents=True)
    rows = []
    for rel, text in files.items():
        p = sp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        rows.append(f"{rel},{file_hash(str(p))},{len(text)}")
    if meta:
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if scripts:
        (info / "entry_points.txt").write_text(
            "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())
        )
    if record:
        (info / "RECORD").write_text("\n".join(rows + [f"{info.name}/RECORD,,"]) + "\n")
    listing = sorted(os.listdir(info))
    top_level = top if top is not None else sorted({r.split("/")[0].split(".")[0] for r in files})
    return {
        "path": str(info),
        "location": str(sp),
        "kind": "dist-info",
        "files": listing,
        "name": name,
        "version": version,
        "requires": [],
        "requires_python": None,
        "top_level": top_level,
        "installer": installer,
        "editable": editable is not None,
        "direct_url": editable.as_uri() if editable is not None else None,
    }


def spec(origin: str) -> dict:
    return {
        "found": True,
        "origin": origin,
        "locations": [os.path.dirname(origin)] if origin.endswith("__init__.py") else [],
        "namespace": False,
    }


def facts(
    prefix: Path,
    dists: list[dict],
    *,
    path: Optional[list[str]] = None,
    specs: Optional[dict] = None,
    env: Optional[dict] = None,
    pth: Optional[list] = None,
    cwd: str = "/nonexistent-project",
    in_venv: bool = True,
    base_prefix: Optional[Path] = None,
    user_site: Optional[str] = None,
    leftovers: Optional[dict[str, list[str]]] = None,
    cfg: Optional[dict] = None,
) -> TargetFacts:
    """TargetFacts from the probe's schema; sys.path defaults to the dists' directories in order."""
    entries = path if path is not None else list(dict.fromkeys(d["location"] for d in dists))
    sp = prefix / "lib" / f"python{PY}" / "site-packages"
    return TargetFacts.from_probe(
        {
            "probe_schema": 1,
            "executable": str(prefix / "bin" / "python"),
            "version": [3, 11, 7],
            "prefix": str(prefix),
            "base_prefix": str(base_prefix or prefix),
            "in_venv": in_venv,
            "cwd": cwd,
            "sys_path": [
                {"entry": e, "abspath": e, "exists": True, "is_dir": True, "leftovers": (leftovers or {}).get(e, [])}
                for e in entries
            ],
            "distributions": dists,
            "pth_files": pth or [],
            "find_spec": {},
            "top_level_specs": specs or {},
            "env": env or {},
            "site_packages": [str(sp)],
            "pyvenv_cfg": cfg,
            "user_site": {"path": user_site, "enabled": bool(user_site), "exists": bool(user_site)},
            "scheme": {
                "purelib": str(sp),
                "platlib": str(sp),
                "scripts": str(prefix / "bin"),
                "stdlib": "/usr/lib/python3.11",
                "platstdlib": "/usr/lib/python3.11",
            },
        }
    )


def codes(findings: list) -> list[str]:
    return [f.code for f in findings]


def one(findings: list, code: str) -> Any:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, [(f.code, f.title) for f in findings]
    return found[0]


@pytest.fixture
def env(tmp_path: Path) -> tuple[Path, Path]:
    """(prefix, site-packages) of a target environment."""
    prefix = tmp_path / "env"
    return prefix, site(prefix)


# -- 1. one project twice ---------------------------------------------------------------------------
def test_stack_package_twice_fails_and_each_copy_gets_its_own_remover(tmp_path: Path, env) -> None:
    prefix, sp = env
    other_sp = site(tmp_path / "conda_base")  # another environment, reached through a .pth line
    pypath = tmp_path / "pp"
    a = write_dist(pypath, "numpy", "1.24.0", {"numpy/__init__.py": "a"})
    b = write_dist(sp, "numpy", "1.26.4", {"numpy/__init__.py": "b"})
    c = write_dist(other_sp, "numpy", "2.0.0", {"numpy/__init__.py": "c"})
    pth = [
        {
            "path": str(sp / "base.pth"),
            "lines": [{"line": str(other_sp), "kind": "path", "resolved": str(other_sp), "exists": True}],
        }
    ]
    t = facts(
        prefix,
        [a, b, c],
        env={"PYTHONPATH": str(pypath)},
        pth=pth,
        specs={"numpy": spec(str(pypath / "numpy" / "__init__.py"))},
    )
    f = one(evaluate(t), "same-project-twice")
    assert f.status is Status.FAIL
    assert f.title == (
        "numpy is installed 3 times on sys.path (1.24.0, 1.26.4, 2.0.0); "
        "the import uses 1.24.0 from a PYTHONPATH directory"
    )
    assert f.evidence["imported_from"] == str(pypath) and f.evidence["keep"] == str(sp)
    assert f.evidence["pip_can_uninstall_it"] is False  # a venv's pip does not touch files outside it
    first, third = f.fix.split(" ; ")
    assert first == (
        f"remove {pypath} from PYTHONPATH, or delete this copy: "
        f"rm -rf {pypath / 'numpy-1.24.0.dist-info'} {pypath / 'numpy'}"
    )
    assert third == (
        f"delete the line naming {other_sp} from {sp / 'base.pth'} (it adds that directory here), "
        f"or remove that copy: {tmp_path / 'conda_base' / 'bin' / 'python3.11'} -m pip uninstall -y numpy"
    )


def test_non_stack_twice_warns_and_user_site_copy_goes_through_the_base_interpreter(tmp_path: Path, env) -> None:
    prefix, sp = env
    base = tmp_path / "base"
    site(base)
    user = tmp_path / "home" / ".local" / "lib" / f"python{PY}" / "site-packages"
    a = write_dist(sp, "six", "1.17.0", {"six.py": "a"})
    b = write_dist(user, "six", "1.16.0", {"six.py": "b"})
    t = facts(prefix, [a, b], user_site=str(user), base_prefix=base, env={"PYTHONUSERBASE": str(tmp_path / "home")})
    f = one(evaluate(t), "same-project-twice")
    assert f.status is Status.WARN and f.title.endswith("the import uses 1.17.0 from this environment")
    assert f.evidence["imported_from"] is None  # no find_spec answer: the title falls back to sys.path order
    assert f.fix == f"PYTHONUSERBASE={tmp_path / 'home'} {base / 'bin' / 'python3.11'} -m pip uninstall -y six"


def test_conda_env_with_a_user_site_copy_first_is_fixed_by_its_own_pip(tmp_path: Path, env) -> None:
    """Outside a venv the user site comes before site-packages, and pip may remove it (not a venv)."""
    prefix, sp = env
    user = tmp_path / "home" / ".local" / "lib" / f"python{PY}" / "site-packages"
    a = write_dist(user, "mindspore", "2.2.14", {"mindspore/__init__.py": "old"})
    b = write_dist(sp, "mindspore", "2.7.0", {"mindspore/__init__.py": "new"})
    t = facts(
        prefix,
        [a, b],
        user_site=str(user),
        in_venv=False,
        specs={"mindspore": spec(str(user / "mindspore" / "__init__.py"))},
    )
    f = one(evaluate(t), "same-project-twice")
    assert f.status is Status.FAIL
    assert f.title.endswith("the import uses 2.2.14 from the user site (pip install --user)")
    assert f.evidence["pip_can_uninstall_it"] is True and f.evidence["keep"] == str(sp)
    assert f.fix == f"{prefix}/bin/python -m pip uninstall -y mindspore"


def test_import_from_the_second_copy_is_reported_when_the_first_lost_its_files(tmp_path: Path, env) -> None:
    prefix, sp = env
    other = site(tmp_path / "other")
    a = write_dist(sp, "tokenizers", "0.22.2", {"tokenizers/__init__.py": "a"})
    b = write_dist(other, "tokenizers", "0.21.0", {"tokenizers/__init__.py": "b"})
    t = facts(prefix, [a, b], specs={"tokenizers": spec(str(other / "tokenizers" / "__init__.py"))})
    f = one(evaluate(t), "same-project-twice")
    assert f.title.endswith("the import uses 0.21.0 from outside this environment")
    assert f.evidence["pip_acts_on"] == str(sp) and f.evidence["imported_from"] == str(other)


def test_editable_egg_info_in_its_own_source_tree_is_not_a_second_copy(tmp_path: Path, env) -> None:
    prefix, sp = env
    src = tmp_path / "proj"
    (src / "mypkg").mkdir(parents=True)
    (src / "mypkg" / "__init__.py").write_text("")
    (src / "mypkg.egg-info").mkdir()
    (src / "mypkg.egg-info" / "PKG-INFO").write_text("Name: mypkg\nVersion: 0.1\n")
    egg = {
        "path": str(src / "mypkg.egg-info"),
        "location": str(src),
        "kind": "egg-info",
        "files": ["PKG-INFO"],
        "name": "mypkg",
        "version": "0.1",
        "top_level": ["mypkg"],
        "editable": False,
        "direct_url": None,
    }
    ed = write_dist(sp, "mypkg", "0.1", {"__editable__.mypkg-0.1.pth": "x"}, top=["mypkg"], editable=src)
    t = facts(
        prefix,
        [egg, ed],
        path=[str(src), str(sp)],
        cwd=str(src),
        specs={"mypkg": spec(str(src / "mypkg" / "__init__.py"))},
    )
    result = evaluate(t)
    assert codes(result) == [None] and result[0].status is Status.PASS


# -- 2. rival distributions ---------------------------------------------------------------------------
def test_legacy_mindspore_wheel_sharing_files_with_the_unified_one_fails(env) -> None:
    prefix, sp = env
    a = write_dist(sp, "mindspore", "2.7.0", {"mindspore/__init__.py": "new", "mindspore/lib/libms.so": "x"})
    b = write_dist(sp, "mindspore-ascend", "2.2.14", {"mindspore/__init__.py": "new", "mindspore/old.py": "o"})
    t = facts(prefix, [a, b], specs={"mindspore": spec(str(sp / "mindspore" / "__init__.py"))})
    f = one(evaluate(t), "rival-distributions")
    assert f.status is Status.FAIL
    assert f.title == "import package mindspore is installed by 2 projects: mindspore 2.7.0, mindspore-ascend 2.2.14"
    assert f.evidence["shared_examples"] == ["mindspore/__init__.py"] and "legacy per-device" in f.detail
    assert f.fix == (
        f"{prefix}/bin/python -m pip uninstall -y mindspore-ascend ; "
        f"{prefix}/bin/python -m pip install --force-reinstall --no-deps mindspore==2.7.0"
    )


def test_namespace_packages_and_side_by_side_portions_are_not_rivals(env) -> None:
    prefix, sp = env
    a = write_dist(sp, "protobuf", "5.0", {"google/protobuf/__init__.py": ""})
    b = write_dist(sp, "googleapis-common-protos", "1.0", {"google/api/__init__.py": ""})
    t = facts(prefix, [a, b])  # no find_spec answer: RECORDs share no file, so it is a namespace
    assert codes(evaluate(t)) == [None]
    t = facts(
        prefix,
        [a, b],
        specs={"google": {"found": True, "origin": None, "namespace": True, "locations": [str(sp / "google")]}},
    )
    assert codes(evaluate(t)) == [None]


def test_mindnlp_bundled_mindtorch_beside_the_separate_project_is_a_rival_across_directories(tmp_path, env) -> None:
    prefix, sp = env
    other = site(tmp_path / "other")
    a = write_dist(sp, "mindnlp", "0.5.1", {"mindnlp/__init__.py": "", "mindtorch/__init__.py": "bundled"})
    b = write_dist(other, "mindtorch", "0.4.0", {"mindtorch/__init__.py": "separate"})
    t = facts(prefix, [a, b], specs={"mindtorch": spec(str(sp / "mindtorch" / "__init__.py"))})
    f = one(evaluate(t), "rival-distributions")
    assert f.status is Status.FAIL  # mindnlp is a stack package
    assert f.evidence["imported_from"] == str(sp) and f.evidence["shared_files"] == 0


# -- 3. shadowing ---------------------------------------------------------------------------------------
def test_module_in_the_project_directory_shadowing_an_installed_package(tmp_path: Path, env) -> None:
    prefix, sp = env
    proj = tmp_path / "proj"
    d = write_dist(sp, "safetensors", "0.8.0", {"safetensors/__init__.py": ""})
    t = facts(
        prefix, [d], path=[str(proj), str(sp)], cwd=str(proj), specs={"safetensors": spec(str(proj / "safetensors.py"))}
    )
    f = one(evaluate(t), "shadowed-module")
    assert f.status is Status.FAIL and f.location.path == str(proj / "safetensors.py")
    assert "current (project) directory" in f.detail
    assert f.fix.startswith(f"rename it (mv {proj / 'safetensors.py'} {proj / 'safetensors.py'}_local)")


def test_shadowing_from_pythonpath_and_from_a_pth_tree_name_their_source(tmp_path: Path, env) -> None:
    prefix, sp = env
    pp, tree = tmp_path / "pp", tmp_path / "tree"
    d1 = write_dist(sp, "six", "1.17.0", {"six.py": ""})
    d2 = write_dist(sp, "idna", "3.10", {"idna/__init__.py": ""})
    pth = [
        {
            "path": str(sp / "dev.pth"),
            "lines": [{"line": str(tree), "kind": "path", "resolved": str(tree), "exists": True}],
        }
    ]
    t = facts(
        prefix,
        [d1, d2],
        path=[str(pp), str(sp), str(tree)],
        env={"PYTHONPATH": str(pp)},
        pth=pth,
        specs={"six": spec(str(pp / "six.py")), "idna": spec(str(tree / "idna" / "__init__.py"))},
    )
    found = {f.evidence["module"]: f for f in evaluate(t) if f.code == "shadowed-module"}
    assert found["six"].status is Status.WARN and found["six"].fix.startswith(f"remove {pp} from PYTHONPATH")
    assert found["idna"].fix.startswith(f"delete the line naming {tree} from {sp / 'dev.pth'}")


def test_stdlib_over_a_backport_an_editable_source_and_a_stray_tests_package_are_not_shadowing(
    tmp_path: Path, env
) -> None:
    prefix, sp = env
    src, proj = tmp_path / "src", tmp_path / "proj"
    back = write_dist(sp, "dataclasses", "0.8", {"dataclasses.py": ""})
    ed = write_dist(sp, "mylib", "1.0", {"__editable__.mylib-1.0.pth": ""}, top=["mylib"], editable=src)
    sloppy = write_dist(sp, "sloppy", "1.0", {"sloppy/__init__.py": "", "tests/__init__.py": ""})
    (src / "mylib").mkdir(parents=True)
    t = facts(
        prefix,
        [back, ed, sloppy],
        path=[str(proj), str(sp)],
        cwd=str(proj),
        specs={
            "dataclasses": spec("/usr/lib/python3.11/dataclasses.py"),
            "mylib": spec(str(src / "mylib" / "__init__.py")),
            "tests": spec(str(proj / "tests" / "__init__.py")),
        },
    )  # the project's own tests/
    assert codes(evaluate(t)) == [None]


def test_config_directory_modules_would_shadow_for_scripts_run_there(tmp_path: Path, env) -> None:
    prefix, sp = env
    job = tmp_path / "job"
    (job / "numpy").mkdir(parents=True)
    (job / "numpy" / "__init__.py").write_text("")
    (job / "transformers").mkdir()  # namespace portion: loses to the installed regular package
    (job / "numpy.libs").mkdir()
    (job / "tokenizers.cpython-311-x86_64-linux-gnu.so").write_text("")
    dists = [write_dist(sp, n, "1.0", {f"{n}/__init__.py": ""}) for n in ("numpy", "transformers", "tokenizers")]
    found = [
        f for f in evaluate(facts(prefix, dists), script_dirs=[str(job)]) if f.code == "shadowed-module-script-dir"
    ]
    assert sorted(f.evidence["module"] for f in found) == ["numpy", "tokenizers"]
    assert all(f.status is Status.FAIL for f in found)


def test_editable_with_deleted_source_reported_once_and_stale_pth_lines(tmp_path: Path, env) -> None:
    prefix, sp = env
    src = tmp_path / "gone_src"
    ed = write_dist(
        sp, "mindformers", "1.6.0", {"__editable__.mindformers-1.6.0.pth": str(src)}, top=["mindformers"], editable=src
    )
    other = write_dist(sp, "plugin", "0.1", {"plugin.pth": "/old/plugin"}, top=[])
    pth = [
        {
            "path": str(sp / "__editable__.mindformers-1.6.0.pth"),
            "lines": [{"line": str(src), "kind": "path", "resolved": str(src), "exists": False}],
        },
        {
            "path": str(sp / "plugin.pth"),
            "lines": [{"line": "/old/plugin", "kind": "path", "resolved": "/old/plugin", "exists": False}],
        },
        {
            "path": str(sp / "loose.pth"),
            "lines": [{"line": "../x", "kind": "path", "resolved": str(tmp_path / "x"), "exists": False}],
        },
    ]
    result = evaluate(facts(prefix, [ed, other], pth=pth))
    e = one(result, "editable-missing-source")
    assert e.status is Status.FAIL and e.evidence["source"] == str(src)
    stale = {f.evidence["pth"]: f for f in result if f.code == "pth-missing-path"}
    assert sorted(stale) == [str(sp / "loose.pth"), str(sp / "plugin.pth")]  # the editable's own line is not repeated
    assert stale[str(sp / "plugin.pth")].fix.startswith(f"{prefix}/bin/python -m pip uninstall -y plugin")
    assert stale[str(sp / "loose.pth")].fix == f"delete the line '../x' from {sp / 'loose.pth'}"


# -- 4. broken installs -------------------------------------------------------------------------------
def test_missing_native_library_of_mindspore_fails_and_only_top_files_are_sampled_elsewhere(env) -> None:
    prefix, sp = env
    ms = write_dist(
        sp,
        "mindspore",
        "2.7.0",
        {
            "mindspore/__init__.py": "",
            "mindspore/lib/libmindspore.so": "",
            "mindspore/nn/__init__.py": "",
            "mindspore/nn/cell.py": "",
        },
    )
    six = write_dist(sp, "six", "1.17.0", {"six.py": "", "six_extra/deep/__init__.py": ""}, top=["six"])
    (sp / "mindspore" / "lib" / "libmindspore.so").unlink()
    (sp / "mindspore" / "nn" / "cell.py").unlink()  # not in the sample: plain modules are not checked
    (sp / "six_extra" / "deep" / "__init__.py").unlink()  # nested, not top-level: not in the sample
    result = evaluate(facts(prefix, [ms, six]))
    f = one(result, "record-missing-files")
    assert f.status is Status.FAIL and f.evidence["missing"] == ["mindspore/lib/libmindspore.so"]
    assert f.evidence["checked"] == 3
    assert f.fix == f"{prefix}/bin/python -m pip install --force-reinstall --no-deps mindspore==2.7.0"
    assert Records().sample(facts(prefix, [six]).distributions[0]) == ["six.py"]


def test_other_packages_are_checked_by_stat_and_their_record_read_only_when_a_file_is_gone(env) -> None:
    prefix, sp = env
    idna = write_dist(sp, "idna", "3.10", {"idna/__init__.py": "", "idna/core.py": ""})
    six = write_dist(sp, "six", "1.17.0", {"six.py": ""})
    (sp / "idna" / "__init__.py").unlink()
    records = Records()
    f = one(evaluate(facts(prefix, [idna, six]), records=records), "record-missing-files")
    assert f.status is Status.WARN and f.evidence["missing"] == ["idna/__init__.py"]
    assert idna["path"] in records._text and six["path"] not in records._text


def test_dist_info_without_metadata_or_pip_record(env) -> None:
    prefix, sp = env
    no_meta = write_dist(sp, "transformers", "4.57.1", {"transformers/__init__.py": ""}, meta=False)
    no_rec = write_dist(sp, "idna", "3.10", {"idna/__init__.py": ""}, record=False)
    conda = write_dist(sp, "pyyaml", "6.0", {"yaml/__init__.py": ""}, record=False, installer="conda")
    result = evaluate(facts(prefix, [no_meta, no_rec, conda]))
    found = {f.evidence["dist_info"]: f for f in result if f.code == "dist-info-incomplete"}
    assert sorted(found) == sorted([no_meta["path"], no_rec["path"]])  # PEP 627: conda may omit RECORD
    assert found[no_meta["path"]].status is Status.FAIL and found[no_rec["path"]].status is Status.WARN
    assert found[no_rec["path"]].fix == (
        f"rm -rf {no_rec['path']} ; {prefix}/bin/python -m pip install --no-deps --force-reinstall idna==3.10"
    )


def test_two_dist_infos_keep_the_one_whose_hashes_match_the_files(env) -> None:
    prefix, sp = env
    old = write_dist(sp, "numpy", "1.26.4", {"numpy/__init__.py": "old"})
    new = write_dist(sp, "numpy", "1.24.0", {"numpy/__init__.py": "current"})  # an older version installed last
    f = one(evaluate(facts(prefix, [old, new])), "two-dist-infos")
    assert f.status is Status.FAIL and f.evidence["keep"] == new["path"]
    assert f.evidence["matches_disk"] == {"numpy-1.26.4.dist-info": False, "numpy-1.24.0.dist-info": True}
    assert f.fix == (
        f"rm -rf {old['path']} ; {prefix}/bin/python -m pip install --force-reinstall --no-deps numpy==1.24.0"
    )


def test_pip_leftovers_name_the_half_replaced_package(env) -> None:
    prefix, sp = env
    d = write_dist(sp, "mindspore", "2.7.0", {"mindspore/__init__.py": ""})
    (sp / "~indspore").mkdir()
    (sp / "~-ix.py").write_text("")
    t = facts(prefix, [d], leftovers={str(sp): ["~-ix.py", "~indspore"]})
    f = one(evaluate(t), "pip-leftover")
    assert f.status is Status.FAIL and f.evidence["projects"] == ["mindspore"]
    assert f.fix == (
        f"rm -rf {shlex.quote(str(sp / '~-ix.py'))} {shlex.quote(str(sp / '~indspore'))} ; "
        f"{prefix}/bin/python -m pip install --force-reinstall --no-deps mindspore==2.7.0"
    )


def test_leftover_of_a_module_whose_import_name_differs_from_the_project(env) -> None:
    prefix, sp = env
    d = write_dist(sp, "PyYAML", "6.0.2", {"yaml/__init__.py": ""}, top=["yaml"])
    (sp / "~aml").mkdir()
    (sp / "~yYAML-6.0.1.dist-info").mkdir()
    f = one(evaluate(facts(prefix, [d], leftovers={str(sp): ["~aml", "~yYAML-6.0.1.dist-info"]})), "pip-leftover")
    assert f.status is Status.WARN and f.evidence["projects"] == ["pyyaml"]
    assert f.fix.endswith(f"{prefix}/bin/python -m pip install --force-reinstall --no-deps PyYAML==6.0.2")


# -- 5. console scripts of another environment ----------------------------------------------------------
def test_msrun_earlier_on_path_than_the_activated_env_fails(tmp_path: Path, env) -> None:
    prefix, sp = env
    other = tmp_path / "otherenv" / "bin"
    exe(other / "msrun", "#!/other/python\n")
    exe(prefix / "bin" / "msrun", f"#!{prefix}/bin/python\n")
    ms = write_dist(sp, "mindspore", "2.7.0", {"mindspore/__init__.py": ""}, scripts={"msrun": "m:main"})
    t = facts(prefix, [ms], env={"PATH": f"{other}:{prefix / 'bin'}:/usr/bin"})
    f = one(evaluate(t), "foreign-console-script")
    assert f.status is Status.FAIL and f.evidence["resolves_to"] == str(other / "msrun")
    assert f.fix == (
        f"put {prefix / 'bin'} first on PATH (export PATH={prefix / 'bin'}:$PATH), "
        f"or call it by its path: {prefix / 'bin' / 'msrun'}"
    )


def test_shell_python_of_an_unactivated_env_is_not_reported_but_a_foreign_msrun_warns(tmp_path: Path, env) -> None:
    prefix, sp = env
    other = tmp_path / "otherenv" / "bin"
    exe(other / "python", "")
    exe(other / "msrun", "#!/other/python\n")
    ms = write_dist(sp, "mindspore", "2.7.0", {"mindspore/__init__.py": ""}, scripts={"msrun": "m:main"})
    f = one(evaluate(facts(prefix, [ms], env={"PATH": f"{other}:/usr/bin"})), "foreign-console-script")
    assert f.evidence["command"] == "msrun" and f.status is Status.WARN
    assert "has no msrun" in f.fix  # the target's bin has no msrun: reinstalling mindspore writes it


def test_pip_of_another_env_when_the_target_is_activated_warns_with_python_m_pip(tmp_path: Path, env) -> None:
    prefix, sp = env
    other = tmp_path / "otherenv" / "bin"
    exe(other / "pip", "#!/other/python\n")
    t = facts(prefix, [write_dist(sp, "six", "1.17.0", {"six.py": ""})], env={"PATH": f"{other}:{prefix / 'bin'}"})
    f = one(evaluate(t), "foreign-console-script")
    assert f.status is Status.WARN and f.fix.endswith(f"or call it by its path: {prefix}/bin/python -m pip")


def test_scripts_whose_shebang_names_another_environment(tmp_path: Path, env) -> None:
    prefix, sp = env
    exe(prefix / "bin" / "msrun", "#!/old/place/env/bin/python3.11\nimport sys\n")
    exe(prefix / "bin" / "pip", f"#!{prefix}/bin/python3.11\n")  # this env's: fine
    ms = write_dist(sp, "mindspore", "2.7.0", {"mindspore/__init__.py": ""}, scripts={"msrun": "m:main"})
    f = one(evaluate(facts(prefix, [ms])), "foreign-shebang")
    assert f.status is Status.FAIL and f.title.endswith("which does not exist")
    assert f.fix.startswith(f"{prefix}/bin/python -m pip install --force-reinstall --no-deps mindspore==2.7.0")


def test_shebang_forms(tmp_path: Path) -> None:
    long = exe(tmp_path / "a", "#!/bin/sh\n'''exec' \"/very/long/env/bin/python3.11\" \"$0\" \"$@\"\n' '''\n")
    env = exe(tmp_path / "b", "#!/usr/bin/env python3\n")
    plain = exe(tmp_path / "c", "#!/opt/env/bin/python -E\n")
    binary = tmp_path / "d"
    binary.write_bytes(b"\x7fELF\x00")
    assert [shebang_interpreter(str(p)) for p in (long, env, plain, binary)] == [
        "/very/long/env/bin/python3.11",
        None,
        "/opt/env/bin/python",
        None,
    ]


# -- the check as a whole ------------------------------------------------------------------------------
def test_healthy_environment_passes_and_says_what_it_checked(env) -> None:
    prefix, sp = env
    dists = [
        write_dist(sp, "numpy", "1.26.4", {"numpy/__init__.py": "", "numpy/core/_m.so": ""}),
        write_dist(sp, "six", "1.17.0", {"six.py": ""}),
    ]
    t = facts(prefix, dists, specs={"numpy": spec(str(sp / "numpy" / "__init__.py"))})
    [f] = evaluate(t)
    assert f.status is Status.PASS
    assert "2 projects in 1 sys.path directories are each installed once" in f.proved
    assert "no installed file is missing (3 files of 2 distributions checked" in f.proved


def test_findings_come_worst_first_and_the_class_reads_the_config_directory(tmp_path: Path, env) -> None:
    prefix, sp = env
    job = tmp_path / "job"
    job.mkdir()
    (job / "numpy.py").write_text("")
    dists = [
        write_dist(sp, "numpy", "1.26.4", {"numpy/__init__.py": ""}),
        write_dist(sp, "six", "1.17.0", {"six.py": ""}, record=False),
    ]
    t = facts(prefix, dists)
    ctx = make_ctx({TARGET.name: t}, config_path=job / "config.json")
    result = DuplicateInstallsCheck().run(ctx)
    assert [(f.status, f.code) for f in result] == [
        (Status.FAIL, "shadowed-module-script-dir"),
        (Status.WARN, "dist-info-incomplete"),
    ]


def test_realpath_memo_lives_for_one_evaluation_in_one_thread(tmp_path: Path) -> None:
    """No module-level cache to clear: each evaluation (in its own thread) gets a fresh memo."""
    import threading

    from msdoctor.checks.duplicate_installs.scan import paths_memo, real

    link = tmp_path / "link"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    link.symlink_to(tmp_path / "a")
    with paths_memo():
        assert real(str(link)) == str(tmp_path / "a")
        link.unlink()
        link.symlink_to(tmp_path / "b")
        assert real(str(link)) == str(tmp_path / "a")  # memoised for this evaluation
        seen: list[str] = []
        worker = threading.Thread(target=lambda: seen.append(real(str(link))))
        worker.start()
        worker.join()
        assert seen == [str(tmp_path / "b")]  # another thread has no share in this memo
    assert real(str(link)) == str(tmp_path / "b")  # and after the evaluation nothing is kept
