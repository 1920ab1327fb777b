"""Tests that download from the package index skip cleanly when it cannot be reached (tests/helpers.py).

The real pip is pointed at an index that refuses connections (127.0.0.1 port 9, config ignored):
what it prints then must turn into a skip, and a real failure must not.
"""

from __future__ import annotations

import subprocess

import pytest

from helpers import BASE_PYTHON, pip_from_index, skip_if_index_unreachable

UNREACHABLE = [
    BASE_PYTHON,
    "-m",
    "pip",
    "--isolated",
    "download",
    "--no-deps",
    "--no-cache-dir",
    "--retries",
    "0",
    "--timeout",
    "2",
    "--index-url",
    "http://127.0.0.1:9/simple",
    "-d",
]


def test_an_unreachable_index_skips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(pytest.skip.Exception, match="package index cannot be reached"):
        pip_from_index(UNREACHABLE + [str(tmp_path), "tomli==2.0.1"], timeout=120)


def test_a_real_failure_is_not_a_skip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = subprocess.run(
        [
            BASE_PYTHON,
            "-m",
            "pip",
            "--isolated",
            "install",
            "--no-index",
            "--target",
            str(tmp_path),
            str(tmp_path / "no-such.whl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode != 0
    skip_if_index_unreachable(res)  # does not skip: the wheel is missing, the index is not the problem
    with pytest.raises(AssertionError):
        pip_from_index(
            [
                BASE_PYTHON,
                "-m",
                "pip",
                "--isolated",
                "install",
                "--no-index",
                "--target",
                str(tmp_path),
                str(tmp_path / "no-such.whl"),
            ],
            timeout=120,
        )
