"""Issue 31 item 9: the registry scan of a project and the training-config check's dataset files are read with
one bounded reader (msdoctor.inputs.read_bounded / open_bounded): regular files only, opened O_NONBLOCK then
fstat S_ISREG, capped, and what was skipped is said (an unparsable-file finding)."""

from __future__ import annotations

import os
import time

import pytest

from msdoctor import inputs
from msdoctor.facts.registries import scan_project

REG = "from transformers import AutoConfig\nAutoConfig.register('bert', object)\n"


def test_a_fifo_a_dev_zero_link_and_a_huge_module_are_skipped_and_named(tmp_path):
    os.mkfifo(tmp_path / "fifo.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    big = tmp_path / "big.py"
    big.write_text("# register AutoConfig\n" + "x = 1\n" * ((inputs.SOURCE_CAP // 6) + 10))
    (tmp_path / "ok.py").write_text(REG)
    started = time.monotonic()
    scan = scan_project(str(tmp_path))
    assert time.monotonic() - started < 30
    skipped = {os.path.basename(p): why for p, _, why in scan.result.unparsable}
    assert set(skipped) >= {"fifo.py", "zero.py", "big.py"}, skipped
    assert "FIFO" in skipped["fifo.py"] and "device" in skipped["zero.py"] and "MiB" in skipped["big.py"]


def test_read_bounded_refuses_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(inputs.NotRead, match="FIFO"):
        inputs.read_bounded(tmp_path / "pipe")
    with pytest.raises(inputs.NotRead, match="device"):
        inputs.read_bounded("/dev/zero")
    (tmp_path / "f").write_bytes(b"abc")
    assert inputs.read_bounded(tmp_path / "f") == b"abc"


def test_mindrecord_data_that_is_a_fifo_or_dev_zero_does_not_hang(tmp_path):
    from msdoctor.checks.training_config.gather import _shard_group, mindrecord_rows

    os.mkfifo(tmp_path / "wiki.mindrecord")
    os.symlink("/dev/zero", tmp_path / "zero.mindrecord")
    started = time.monotonic()
    assert mindrecord_rows(tmp_path / "wiki.mindrecord")[0] is None
    assert mindrecord_rows(tmp_path / "zero.mindrecord")[0] is None
    assert _shard_group(tmp_path / "wiki.mindrecord") == [tmp_path / "wiki.mindrecord"]
    assert time.monotonic() - started < 5
