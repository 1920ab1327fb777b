"""Issue 31, the fuzz test: every command that reads user input runs on a corpus of hostile inputs.

Each case runs in-process through msdoctor.cli.main (the real exit-code mapping, no interpreter start per case)
under an alarm (bounded time), and asserts: exit 0, 1 or 2 (never 3, never a traceback), no child process left,
no file created outside the directory the command owns (a dangling link's target, the corpus folder), no secret
in the output, and a bounded peak RSS of this process (ru_maxrss). No MindSpore is imported and no training
starts: train only ever sees inputs that fail before the gate.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import stat
import sys
from pathlib import Path

import pytest

from msdoctor import proc

SECRET = "Fz9sEcReTvAlUe77"
#: peak RSS this test process may reach (the corpus includes a /dev/zero link and 5,000-deep nesting)
MAX_RSS_MIB = 1536


def _corpus(root: Path) -> dict[str, Path]:
    root.mkdir()
    c: dict[str, Path] = {}
    os.mkfifo(root / "fifo.yaml")
    c["fifo"] = root / "fifo.yaml"
    os.symlink(root / "victim-link-target", root / "dangling.json")
    c["dangling-link"] = root / "dangling.json"
    os.symlink("/dev/zero", root / "zero.json")
    c["dev-zero-link"] = root / "zero.json"
    (root / "deep.json").write_text("[" * 5000 + "]" * 5000)
    c["deep-json"] = root / "deep.json"
    (root / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    c["deep-yaml"] = root / "deep.yaml"
    (root / "bomb.yaml").write_text("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8)))
    c["alias-bomb"] = root / "bomb.yaml"
    (root / "huge.yaml").write_text(
        "runtime: {device_target: CPU, device_num: 1000000000000}\n"
        "model: {num_layers: 1e308, hidden_size: 99999999999999999999999, num_heads: 3, vocab_size: -1}\n"
        "train: {micro_batch_size: 1000000000000, seq_length: 1e400, max_steps: 1}\n"
        "parallel: {pipeline_stages: 1000000000000}\n")
    c["huge-numbers"] = root / "huge.yaml"
    (root / "types.json").write_text(json.dumps({"schema_version": [], "checks": "nope", "facts": 7,
                                                 "summary": {"fail": "x"}, "nodes": {"a": None}}))
    c["wrong-types"] = root / "types.json"
    (root / "gbk.yaml").write_bytes("model: {name: 测试}\n".encode("gbk"))
    c["non-utf8"] = root / "gbk.yaml"
    (root / "secret.yaml").write_text(
        "train_dataset:\n  data_loader:\n    type: MindDataset\n"
        f"    dataset_dir: 'https://bob:{SECRET}@data.example.com/x'\n"
        "model:\n  model_config:\n    num_layers: 2\n    hidden_size: 64\n    num_heads: 4\n    vocab_size: 256\n")
    c["secret-url"] = root / "secret.yaml"
    (root / "adir.json").mkdir()
    c["directory"] = root / "adir.json"
    (root / "empty.json").write_text("")
    c["empty"] = root / "empty.json"
    return c


#: command line templates: {f} is the hostile input, {out} a directory the command owns
COMMANDS = {
    "check": ["check", "--quick", "--only", "training-config,memory-fit", "--config", "{f}", "--format", "json"],
    "memory": ["memory", "--config", "{f}"],
    "diff": ["diff", "{f}", "{f}"],
    "explain": ["explain", "--log", "{f}"],
    "compare-plans": ["preflight", "--compare-plans", "{f}", "--compare-plans", "{f}"],
    "train": ["train", "--config", "{f}", "--quick", "--output-dir", "{out}/run"],
}
#: train only on inputs that cannot be a valid config (no training in this test)
TRAIN_SKIPS = {"huge-numbers", "secret-url"}


class Alarm(BaseException):
    pass


def _on_alarm(*_):
    raise Alarm()


def _run(argv: list[str], seconds: int) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(seconds)
    code: object = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            from msdoctor.cli import main

            main(argv)
    except SystemExit as exc:
        code = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        proc._closing = False  # main() closes proc for a process that exits; this one runs the next case
    return (code if isinstance(code, int) else (0 if code is None else 1)), out.getvalue() + err.getvalue()


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


CASES = [(cmd, kind) for cmd in COMMANDS for kind in (
    "fifo", "dangling-link", "dev-zero-link", "deep-json", "deep-yaml", "alias-bomb", "huge-numbers", "wrong-types",
    "non-utf8", "secret-url", "directory", "empty") if not (cmd == "train" and kind in TRAIN_SKIPS)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _corpus(tmp_path_factory.mktemp("fuzz") / "corpus")


@pytest.mark.parametrize("cmd,kind", CASES)
def test_hostile_input(cmd, kind, corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("MSDOCTOR_FUZZ_TOKEN", SECRET)  # a secret in the environment: never printed either
    monkeypatch.setenv("MS_FUZZ_GBK", os.fsdecode("测试".encode("gbk")))
    monkeypatch.chdir(tmp_path)
    root = corpus[kind].parent
    before = _tree(root)
    out_dir = tmp_path / "owned"
    argv = [a.format(f=corpus[kind], out=out_dir) for a in COMMANDS[cmd]]
    try:
        code, text = _run(argv, 90)
    except Alarm:
        pytest.fail(f"{cmd} on {kind}: no answer within 90 s")
    assert code in (0, 1, 2), f"{cmd} on {kind}: exit {code}\n{text[-3000:]}"
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    assert SECRET not in text, f"{cmd} on {kind} printed the secret"
    assert proc.live_children() == [], "a child process was left running"
    assert _tree(root) == before, f"{cmd} on {kind} wrote into the corpus: {_tree(root) - before}"
    assert not (root / "victim-link-target").exists(), "written through the dangling link"
    written = _tree(tmp_path) - {"owned"}
    assert all(p == "owned" or p.startswith("owned/") or p.startswith("runs") for p in written), written
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert rss_mib < MAX_RSS_MIB, f"peak RSS {rss_mib:.0f} MiB after {cmd} on {kind}"


@pytest.mark.parametrize("target", ["under-a-file", "read-only"])
def test_hostile_output_paths(target, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() == 0 and target == "read-only":
        pytest.skip("root writes into a read-only directory; the read-only file system case needs a mount")
    dest = tmp_path / "file" / "out" if target == "under-a-file" else ro / "out"
    for argv in (["check", "--quick", "--only", "python-env", "--output", str(dest / "r.json"), "--format", "json"],
                 ["report", "--output", str(dest / "r.md")]):
        code, text = _run(argv, 120)
        assert code == 2, (argv, code, text[-2000:])
        assert str(dest.parent) in text or str(dest) in text


def test_corpus_size():
    """The numbers the closing note gives."""
    assert len(CASES) == 6 * 12 - len(TRAIN_SKIPS)
    print(f"fuzz corpus: 12 hostile inputs x 6 commands = {len(CASES)} cases, plus 2 output-path cases",
          file=sys.stderr)
