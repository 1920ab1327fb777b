"""`explain -` on a pipe that stays open prints each match as it arrives (issue 31 item 15), and the streamed
answers are the same as the whole-text answers on every real case."""

from __future__ import annotations

import io
import os
import select
import subprocess
import time
from pathlib import Path

from helpers import env_with, msdoctor_exe
from msdoctor.explain import explain_stream, iter_explain_stream

DATA = Path(__file__).parent / "data"

OOM = (
    "[ERROR] PRE_ACT(145615,fffbdf67f120,python):2025-01-12-09:48:13.703.514 [mindspore/ccsrc/backend/common/"
    "mem_reuse/mem_dynamic_allocator.cc:392] AddMemBlockAndMemBufByEagerFree] TotalUsedMemStatistics : "
    "24725382656 plus TotalUsedByEventMemStatistics : 0 and plus alloc size : 100555779072 is more than total "
    "mem size : 65290239590.\n"
)


def _real_texts() -> dict[str, str]:
    import tomllib

    data = tomllib.loads((DATA / "explain" / "real_cases.toml").read_text(encoding="utf-8"))
    return {c["id"]: c["text"] for key in ("case", "negative", "holdout") for c in data.get(key, [])}


def test_streamed_answers_equal_whole_text_answers() -> None:
    for cid, text in _real_texts().items():
        whole = [(m.entry_id, m.line_no, m.cause) for m in explain_stream(io.BytesIO(text.encode()))]
        live = sorted((m.entry_id, m.line_no, m.cause) for m in iter_explain_stream(io.BytesIO(text.encode())))
        assert live == sorted(whole), cid


def test_stdin_that_never_closes_gets_each_match_as_it_arrives(tmp_path: Path) -> None:
    """Write one error line, keep the pipe open: the answer must come before stdin ends (grep's behaviour)."""
    proc = subprocess.Popen(
        [msdoctor_exe(), "explain", "-", "--no-confirm"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_with(),
        cwd=tmp_path,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"step 1 loss 2.3\n" + OOM.encode())
        proc.stdin.flush()
        got = b""
        deadline = time.monotonic() + 60
        while b"[device-oom]" not in got and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                piece = os.read(proc.stdout.fileno(), 65536)
                if not piece:
                    break
                got += piece
        assert b"[device-oom]" in got, got.decode(errors="replace")
        assert proc.poll() is None  # still reading: stdin is open
        assert b"line 2:" in got
        rest, err = proc.communicate(timeout=60)  # closes stdin: the run ends
        assert proc.returncode == 0, err
        assert b"1 known error in stdin" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
