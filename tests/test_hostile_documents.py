"""Issue 31 item 11: msdoctor.toml through the bounded reader and the depth/entry caps (exit 2 with the file),
and the TOML document loader's depth cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import env_with, run_msdoctor
from msdoctor import docfile, suppress
from msdoctor.errors import UserError


@pytest.mark.parametrize("text", ["a = " + "[" * 5000 + "]" * 5000 + "\n",
                                  "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"])
def test_deep_msdoctor_toml_is_exit_2(tmp_path, text):
    (tmp_path / "msdoctor.toml").write_text(text)
    with pytest.raises(UserError, match="nested more than"):
        suppress.load(tmp_path)
    with pytest.raises(UserError, match="nested more than"):
        docfile.load(tmp_path / "msdoctor.toml")


def test_very_many_ignore_entries_are_refused(tmp_path):
    entries = "".join('[[ignore]]\nid = "python-env"\nreason = "r"\n' for _ in range(suppress.MAX_ENTRIES + 1))
    (tmp_path / "msdoctor.toml").write_text(entries)
    with pytest.raises(UserError, match="ignore entries"):
        suppress.load(tmp_path)


def test_a_fifo_msdoctor_toml_does_not_hang_check(tmp_path):
    os.mkfifo(tmp_path / "msdoctor.toml")
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--project", str(tmp_path), env=env_with(),
                       timeout=120)
    assert res.returncode in (0, 2), (res.returncode, res.stderr)  # skipped or refused; a guard: never a hang


def test_deep_toml_in_the_check_command_is_exit_2(tmp_path: Path):
    (tmp_path / "msdoctor.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    res = run_msdoctor("check", "--quick", "--only", "python-env", "--project", str(tmp_path), env=env_with())
    assert res.returncode == 2 and "internal error" not in res.stderr, res.stderr
