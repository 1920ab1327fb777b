"""compat_matrix/ data: every shipped file follows the schema, bad data fails with file, line and row.

The cross-checks at the end compare the matrix with the real MindSpore 2.7.0 installed in the
test environment (its METADATA, _check_version.py and plugin folder), so a wrong row fails here.
"""

from __future__ import annotations

import datetime as dt
import re
from importlib import metadata
from pathlib import Path

import pytest

from helpers import REPO
from msdoctor import matrix
from msdoctor.matrix import MATRIX_FILES, MatrixError, load_file, validate

DATA = REPO / "compat_matrix"


@pytest.mark.parametrize("name", sorted(MATRIX_FILES), ids=sorted(MATRIX_FILES))
def test_shipped_file_follows_schema(name: str) -> None:
    kind, date, tables = load_file(DATA / name, MATRIX_FILES[name])
    assert kind == MATRIX_FILES[name]
    assert isinstance(date, dt.date)
    rows = [r for table in tables.values() for r in table]
    assert rows, f"{name} has no rows"
    for row in rows:
        assert row["source"].strip(), row


# That the files ship in the wheel, byte for byte, is tests/test_packaging.py's test_wheel_ships_data_files
# (under the editable install importlib.resources reads these very files, so comparing here proved nothing).


def test_whole_matrix_loads_and_cross_references() -> None:
    deep = matrix.build(matrix._package_texts(), deep=True)  # every value parsed, as CI must
    m = matrix.load()  # what msdoctor uses at run time: structure only, cached
    assert matrix.load() is m
    assert deep.mindspore_rows == m.mindspore_rows and deep.breakage_rows == m.breakage_rows
    assert set(m.dates) == {f"compat_matrix/{n}" for n in MATRIX_FILES}
    versions = [r.version for r in m.mindspore_rows]
    assert versions[0] == "2.3.0" and versions[-1] == "2.10.0"
    for ms in m.mindspore_rows:  # every CANN a MindSpore row names is in cann.toml
        assert all(m.cann(c) is not None for c in ms.cann), ms.version


def test_other_files_in_the_folder_are_not_read_as_matrix(tmp_path: Path) -> None:
    """errors.toml (the explain catalogue) and other helpers' data live in the same folder: ignored."""
    foreign = [p.name for p in DATA.glob("*.toml") if p.name not in MATRIX_FILES]
    m = matrix.build([(f"x/{n}", k, (DATA / n).read_text()) for n, k in MATRIX_FILES.items()])
    assert len(m.mindspore_rows) == len(matrix.load().mindspore_rows)
    # a foreign file would be refused if it were fed to the matrix loader: it is not one of ours
    for name in foreign:
        with pytest.raises(MatrixError):
            validate((DATA / name).read_text(), name, "mindspore")


# -- broken data: the error names file, line and row --------------------------------------------
def _broken(tmp_path: Path, old: str, new: str, name: str = "mindspore.toml") -> Path:
    text = (DATA / name).read_text()
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_bad_specifier_names_file_line_and_row(tmp_path: Path) -> None:
    path = _broken(
        tmp_path,
        'numpy = ">=1.20.0,<2.0.0"\nprotobuf = ">=3.13.0"\ncann = ["8.2.RC1"]',
        'numpy = "<<2"\nprotobuf = ">=3.13.0"\ncann = ["8.2.RC1"]',
    )
    with pytest.raises(MatrixError) as err:
        load_file(path, "mindspore")
    e = err.value
    assert e.path == str(path) and e.line == _line_of(path, 'numpy = "<<2"')
    assert "version 2.7.0" in e.row and "numpy" in e.message and "PEP 440 specifier" in e.message
    assert str(e).startswith(f"{path}:{e.line}: [[release]] #8 (version 2.7.0): numpy:")


def test_row_without_source_fails(tmp_path: Path) -> None:
    text = (DATA / "cann.toml").read_text()
    start = text.index('commercial = "8.2.RC2"')
    end = text.index("source = ", start)
    path = tmp_path / "cann.toml"
    path.write_text(text[:end] + "# source removed\n" + text[text.index("\n", end) + 1 :])
    with pytest.raises(MatrixError, match=r"commercial 8\.2\.RC2.*missing required field 'source'"):
        load_file(path, "cann")


@pytest.mark.parametrize(
    "old,new,pattern",
    [
        (
            'on_pypi = true\nsource = "wheel mindspore-2.7.0',
            'on_pypy = true\non_pypi = true\nsource = "wheel mindspore-2.7.0',
            r"unknown field 'on_pypy'",
        ),
        ('version = "2.7.1"\n', 'version = "2.7.0"\n', r"duplicate row: '2.7.0'"),
        (
            'cann_internal = ["7.7", "7.8", "8.2"]',
            'cann_internal = ["7.7", "eight"]',
            r"'eight' is not a major.minor prefix",
        ),
        ('python = ["3.9", "3.10", "3.11", "3.12"]', 'python = "3.12"', r"is not a non-empty list"),
        ('kind = "mindspore"', 'kind = "mindspur"', r"kind = 'mindspur'"),
        ("matrix_date = 2026-11-29", 'matrix_date = "yesterday"', r"matrix_date must be a TOML date"),
        ('[[release]]\nversion = "2.3.0"', '[[release]\nversion = "2.3.0"', r"malformed TOML"),
    ],
    ids=["typo-field", "duplicate", "bad-prefix", "not-a-list", "wrong-kind", "bad-date", "malformed"],
)
def test_broken_files_fail_clearly(tmp_path: Path, old: str, new: str, pattern: str) -> None:
    path = _broken(tmp_path, old, new)
    with pytest.raises(MatrixError, match=pattern) as err:
        load_file(path, "mindspore")
    assert str(path) in str(err.value)


def test_run_time_validation_still_catches_structure(tmp_path: Path) -> None:
    bad = (DATA / "mindspore.toml").read_text().replace("on_pypi = true", "on_pypy = true", 1)
    with pytest.raises(MatrixError, match="unknown field 'on_pypy'"):
        validate(bad, "mindspore.toml", "mindspore", deep=False)
    bad = (DATA / "mindspore.toml").read_text().replace('python = ["3.8", "3.9", "3.10"]', "python = 3", 1)
    with pytest.raises(MatrixError, match="wrong type"):
        validate(bad, "mindspore.toml", "mindspore", deep=False)


def test_cross_reference_to_missing_cann_fails() -> None:
    texts = [(f"compat_matrix/{n}", k, (DATA / n).read_text()) for n, k in MATRIX_FILES.items()]
    texts = [
        (p, k, t.replace('cann = ["8.2.RC1"]', 'cann = ["8.2.RC9"]') if k == "mindspore" else t) for p, k, t in texts
    ]
    with pytest.raises(MatrixError, match=r"cann '8.2.RC9' has no row in compat_matrix/cann.toml"):
        matrix.build(texts)


# -- the matrix against the real MindSpore 2.7.0 of the test environment --------------------------
@pytest.mark.mindspore
def test_mindspore_row_matches_the_installed_wheel() -> None:
    dist = metadata.distribution("mindspore")
    row = matrix.load().mindspore(dist.version)
    assert row is not None, f"the installed MindSpore {dist.version} has no matrix row"
    reqs = {re.split(r"[<>=!~ ]", r, maxsplit=1)[0]: r for r in dist.requires or []}
    assert reqs["numpy"].replace(" ", "") in (f"numpy{row.numpy}", "numpy<2.0.0,>=1.20.0")
    pkg = Path(dist.locate_file("mindspore"))
    checker = (pkg / "run_check" / "_check_version.py").read_text()
    listed = re.search(r"class AscendEnvChecker.*?self\.version = \[([^\]]*)\]", checker, re.S).group(1)
    assert re.findall(r'"([\d.]+)"', listed) == list(row.cann_internal)
    custom = (pkg / "lib/plugin/ascend/custom_ascendc_910b/version.info").read_text()
    assert custom.strip() == f"custom_opp_compiler_version={row.custom_ops_cann}"
    plugins = sorted(p.name.rsplit(".so.", 1)[1] for p in (pkg / "lib/plugin").glob("libmindspore_gpu.so.*"))
    assert plugins == list(row.cuda)
    assert any(
        p.name.startswith(f"_c_expression.cpython-{''.join(v.split('.'))}") for p in pkg.iterdir() for v in row.python
    )


def test_lookups() -> None:
    m = matrix.load()
    assert m.mindspore("2.7.1.post1").version == "2.7.1"
    assert m.mindspore("2.7.0+cpu").version == "2.7.0"
    assert m.mindspore("2.7.0rc1") is None
    assert m.cann("8.0.RC3.beta1").internal_prefix == "7.5"
    assert m.accepted_cann_prefixes(m.mindspore("2.7.0")) == (("7.7", "7.8", "8.2"), True)
    assert m.accepted_cann_prefixes(m.mindspore("2.4.0")) == (("7.5",), False)
    assert m.is_newer("mindspore", "2.11.0") and not m.is_newer("mindspore", "2.7.0")
    assert matrix.same_ascend_version("25.0.rc1.1", "25.0.RC1")
    assert matrix.same_ascend_version("25.5.1", "25.5") and not matrix.same_ascend_version("25.2.0", "25.5")
    assert matrix.cann_prefix("8.2.0.0.201") == "8.2" and matrix.cann_prefix("7.7.T20.0.B210") == "7.7"
    found = m.breakages({"mindnlp": "0.5.1", "transformers": "5.0.0"})
    assert [(b.package, b.good) for b in found] == [("transformers", ">=4.56,<5")]
    assert m.breakages({"mindnlp": "0.5.1", "transformers": "4.57.1"}) == []
    assert m.breakages({"mindnlp": "0.5.0", "transformers": "5.0.0"}) == []  # only 0.5.1 was observed


def test_fits_for_planning() -> None:
    m = matrix.load()
    verdicts = {
        tuple(v["pair"]): v["ok"]
        for v in matrix.fits(m, mindspore="2.7.0", cann="8.0.RC3", python="3.12", mindnlp="0.5.1")
    }
    assert verdicts == {
        ("mindspore 2.7.0", "python 3.12"): False,
        ("mindspore 2.7.0", "cann 8.0.RC3"): False,
        ("mindnlp 0.5.1", "mindspore 2.7.0"): True,
        ("mindnlp 0.5.1", "python 3.12"): False,
    }
    # 2.4.0's own accepted list is unknown: a different CANN is "unknown", not a false "no"
    unknown = matrix.fits(m, mindspore="2.4.0", cann="8.2.RC1")
    assert unknown[0]["ok"] is None
    assert matrix.fits(m, mindspore="2.7.2", cann="8.5.0", python="3.12")[0]["ok"] is True
