"""The fuzz test: every command runs on a corpus of hostile inputs.

Four axes: hostile files given as options (``--config``, ``--log``, ``diff``'s reports, plans), the same kinds
placed as a cloned project's own files (msdoctor.toml, .vscode/settings.json and tasks.json, planted ``.bak``
names, a module), hostile ``--python`` targets (special files, scripts that answer the probe with junk, deep
JSON, a flood, a signal), and hostile command-line values (huge, terminal escapes, a credential, a traversal,
non-UTF-8 bytes). Commands: check, report, diff, explain, memory, matrix, train (on a config the gate refuses:
it reads what it reads and stops before any training), preflight --plan / --compare-plans, fix-kernel
(--dry-run and --yes), fix-stack --dry-run and vscode init (--dry-run and real).

Each case runs in-process through msdoctor.cli.main (the real exit-code mapping, no interpreter start per case)
under an alarm (bounded time), and asserts: exit 0, 1 or 2 (3 only for a broken --python, as "no verdict" naming
it), no traceback, no child process running afterwards (psutil), nothing created, changed or removed outside
the folders the command owns, nothing written through a dangling link, no secret and no terminal escape in the
output, and a bounded peak RSS of this process (ru_maxrss). No MindSpore is imported and no training starts.
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
import time
from pathlib import Path

import psutil
import pytest

from msdoctor import proc

SECRET = "Fz9sEcReTvAlUe77"
#: peak RSS this test process may reach (the corpus includes a /dev/zero link and 5,000-deep nesting)
MAX_RSS_MIB = 1536


#: the hostile inputs, each made by _place at any path: special files, links, nesting, bombs, absurd numbers,
#: wrong field types, bytes that are not UTF-8, a credential, a directory, an empty file
KINDS = (
    "fifo",
    "dangling-link",
    "dev-zero-link",
    "deep-json",
    "deep-yaml",
    "deep-toml",
    "alias-bomb",
    "huge-numbers",
    "wrong-types",
    "non-utf8",
    "secret-url",
    "directory",
    "empty",
)
VICTIM = "victim-link-target"


def _place(kind: str, path: Path) -> Path:
    """Make hostile input ``kind`` at ``path``; a dangling link points at VICTIM next to it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling-link":
        os.symlink(path.parent / VICTIM, path)
    elif kind == "dev-zero-link":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(_CONTENT[kind]())
    return path


_CONTENT = {
    "deep-json": lambda: ("[" * 5000 + "]" * 5000).encode(),
    "deep-yaml": lambda: ("a: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
    "deep-toml": lambda: ("a = " + "[" * 5000 + "]" * 5000 + "\n").encode(),
    "alias-bomb": lambda: (
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
    ).encode(),
    "huge-numbers": lambda: (
        "runtime: {device_target: CPU, device_num: 1000000000000}\n"
        "model: {num_layers: 1e308, hidden_size: 99999999999999999999999, num_heads: 3, vocab_size: -1}\n"
        "train: {micro_batch_size: 1000000000000, seq_length: 1e400, max_steps: 1}\n"
        "parallel: {pipeline_stages: 1000000000000}\n"
    ).encode(),
    "wrong-types": lambda: json.dumps(
        {
            "schema_version": [],
            "checks": "nope",
            "facts": 7,
            "summary": {"fail": "x"},
            "nodes": {"a": None},
            "python.defaultInterpreterPath": 7,
            "tasks": {},
            "ignore": "x",
        }
    ).encode(),
    "non-utf8": lambda: "model: {name: 测试}\n".encode("gbk"),
    "secret-url": lambda: (
        "train_dataset:\n  data_loader:\n    type: MindDataset\n"
        f"    dataset_dir: 'https://bob:{SECRET}@data.example.com/x'\n"
        "model:\n  model_config:\n    num_layers: 2\n    hidden_size: 64\n    num_heads: 4\n    vocab_size: 256\n"
        f'# {{"token": "{SECRET}"}} password = "{SECRET}"\n'
    ).encode(),
    "empty": lambda: b"",
}


def _corpus(root: Path) -> dict[str, Path]:
    root.mkdir()
    suffix = {
        "fifo": ".yaml",
        "deep-yaml": ".yaml",
        "deep-toml": ".toml",
        "alias-bomb": ".yaml",
        "huge-numbers": ".yaml",
        "non-utf8": ".yaml",
        "secret-url": ".yaml",
    }
    return {kind: _place(kind, root / (kind + suffix.get(kind, ".json"))) for kind in KINDS}


#: command line templates: {f} is the hostile input, {out} a directory the command owns
COMMANDS = {
    "check": ["check", "--quick", "--only", "training-config,memory-fit", "--config", "{f}", "--format", "json"],
    "report": ["report", "--config", "{f}", "--output", "{out}/r.md"],
    "memory": ["memory", "--config", "{f}"],
    "diff": ["diff", "{f}", "{f}"],
    "explain": ["explain", "--log", "{f}"],
    "explain-config": ["explain", "--no-confirm", "--config", "{f}", "RuntimeError: Out of memory on device 0"],
    "preflight-plan": [
        "preflight",
        "--plan",
        "--config",
        "{f}",
        *"--worker-num 2 --local-worker-num 2 --master-addr 127.0.0.1 --master-port 8150 --node-rank 0".split(),
    ],
    "compare-plans": ["preflight", "--compare-plans", "{f}", "--compare-plans", "{f}"],
    "train": ["train", "--config", "{f}", "--quick", "--output-dir", "{out}/run"],
}
#: train only on inputs that cannot be a valid config (no training in this test)
TRAIN_SKIPS = {"huge-numbers", "secret-url"}

#: the project's own files msdoctor reads, and the commands that read each (cwd: the project). {p} is the project,
#: {out} a directory the command owns, {gated} GATED_CONFIG (train reads the project and stops before
#: any training).
PROJECT_FILES = {
    "msdoctor.toml": ("check", "report", "train"),
    ".vscode/settings.json": ("check", "report", "fix-kernel-dry", "fix-kernel", "vscode-init"),
    ".vscode/tasks.json": ("vscode-init-dry", "vscode-init"),
    ".vscode/settings.json.bak": ("fix-kernel",),
    ".vscode/tasks.json.bak": ("vscode-init",),
    "model.py": ("check",),
}
PROJECT_COMMANDS = {
    "check": ["check", "--quick", "--project", "{p}", "--format", "json"],
    "report": ["report", "--project", "{p}", "--output", "{out}/r.md"],
    "train": ["train", "--config", "{gated}", "--quick", "--project", "{p}", "--output-dir", "{out}/run"],
    "fix-kernel-dry": ["fix-kernel", "--dry-run", "--vscode", "--project", "{p}"],
    "fix-kernel": ["fix-kernel", "--yes", "--vscode", "--project", "{p}"],
    "vscode-init-dry": ["vscode", "init", "--dry-run", "--project", "{p}"],
    "vscode-init": ["vscode", "init", "--project", "{p}"],
}
#: what each command may write in the project (besides {out}): the files it owns
PROJECT_OWNS = {"fix-kernel": (".vscode/",), "vscode-init": (".vscode/",)}
#: an .bak name only means something as a planted link (the dangling one is the attack of a cloned repository)
BAK_KINDS = ("dangling-link", "fifo", "directory", "dev-zero-link")

#: what a hostile --python can be: the file kinds above (not an interpreter at all), and scripts that answer the
#: probe with junk: non-JSON, 5,000-deep JSON, a flood of output, an exit by a signal
INTERPRETERS = (
    "fifo",
    "dangling-link",
    "dev-zero-link",
    "directory",
    "empty",
    "non-utf8",
    "junk",
    "deep",
    "flood",
    "killed",
)
_SCRIPTS = {
    "junk": "echo 'Python 3.11.0'; echo '{not json'",
    "deep": "head -c 20000 /dev/zero | tr '\\0' '['",
    "flood": "yes 'x' | head -c 30000000",
    "killed": "kill -9 $$",
}
TARGET_COMMANDS = {
    "check": ["check", "--quick", "--python", "{f}", "--format", "json"],
    "report": ["report", "--python", "{f}", "--output", "{out}/r.md"],
    "matrix": ["matrix", "--python", "{f}"],
    "fix-kernel-dry": ["fix-kernel", "--dry-run", "--python", "{f}"],
    "fix-stack-dry": ["fix-stack", "--dry-run", "--python", "{f}"],
    "vscode-init-dry": ["vscode", "init", "--dry-run", "--python", "{f}", "--project", "{p}"],
    "preflight-plan": [
        "preflight",
        "--plan",
        "--python",
        "{f}",
        *"--worker-num 2 --local-worker-num 2 --master-addr 127.0.0.1 --master-port 8151 --node-rank 0".split(),
    ],
    "train": ["train", "--python", "{f}", "--config", "{gated}", "--quick", "--output-dir", "{out}/run"],
}

#: hostile values on the command line: huge, control characters and escapes, a credential, a path that leaves
VALUES = {
    "huge": "9" * 5000,
    "escapes": "2.7.0\x1b]0;owned\x07\x1b[2J\r\n",
    "secret": f"https://bob:{SECRET}@h.example.com/x",
    "traversal": "../../../../etc/passwd",
    "surrogates": os.fsdecode(b"\xb2\xe2\xca\xd4"),
}
VALUE_COMMANDS = {
    "matrix-mindspore": ["matrix", "--mindspore", "{v}"],
    "matrix-cann": ["matrix", "--cann", "{v}", "--python", "{v}"],
    "check-only": ["check", "--quick", "--only", "{v}"],
    "explain-text": ["explain", "--no-confirm", "{v}"],
    "memory-preset": ["memory", "--config", "{v}"],
    "preflight-addr": [
        "preflight",
        "--plan",
        *"--worker-num 2 --local-worker-num 2 --master-port 8152 --node-rank 0 --master-addr".split(),
        "{v}",
    ],
    "train-data": ["train", "--config", "{gated}", "--quick", "--data", "{v}", "--output-dir", "{out}/run"],
}
#: a valid config that the gate refuses on any machine (bf16 weights on CPU, and data that matches no file, in case
#: --data replaces it): train reads everything it reads before training, then stops with exit 1
GATED_CONFIG = (
    "runtime: {device_target: CPU}\nmodel: {num_layers: 1, hidden_size: 32, num_heads: 2, vocab_size: 256}\n"
    "train: {micro_batch_size: 2, seq_length: 16, max_steps: 2, warmup_steps: 0, param_dtype: bf16}\n"
    'data: {paths: ["/nonexistent-msdoctor-fuzz/*.txt"]}\n'
)


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


CASES = [(cmd, kind) for cmd in COMMANDS for kind in KINDS if not (cmd == "train" and kind in TRAIN_SKIPS)]
PROJECT_CASES = [
    (cmd, where, kind)
    for where, cmds in PROJECT_FILES.items()
    for cmd in cmds
    for kind in (BAK_KINDS if where.endswith(".bak") else KINDS)
]
TARGET_CASES = [(cmd, kind) for cmd in TARGET_COMMANDS for kind in INTERPRETERS]
VALUE_CASES = [(cmd, kind) for cmd in VALUE_COMMANDS for kind in VALUES]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _corpus(tmp_path_factory.mktemp("fuzz") / "corpus")


@pytest.fixture
def hostile_env(tmp_path, monkeypatch):
    """The environment every case runs in: a secret and non-UTF-8 bytes in it, HOME and the Jupyter data folder
    of the test, the cwd an empty folder; returns (the cwd, the directory the command owns, the gated config)."""
    monkeypatch.setenv("MSDOCTOR_FUZZ_TOKEN", SECRET)  # a secret in the environment: never printed either
    monkeypatch.setenv("MS_FUZZ_GBK", os.fsdecode("测试".encode("gbk")))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "owned" / "jupyter"))  # fix-kernel registers here
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "owned" / "ipython"))  # and ipykernel makes its profile here
    (tmp_path / "home").mkdir()
    gated = tmp_path / "gated" / "gated.yaml"
    gated.parent.mkdir()
    gated.write_text(GATED_CONFIG)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd, tmp_path / "owned", gated


def _running_children(grace_s: float = 5.0) -> list[str]:
    """The children of this process still running once main() returned (killed ones that a check thread has not
    reaped yet are zombies: dead), after at most ``grace_s`` for a SIGKILL to land."""
    deadline = time.monotonic() + grace_s
    while True:
        alive = []
        for child in psutil.Process().children(recursive=True):
            try:
                if child.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{child.pid} {' '.join(child.cmdline())[:200]}")
            except psutil.NoSuchProcess:
                continue
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def _honest(
    what: str,
    argv: list[str],
    watched: list[Path],
    owned: list[str],
    seconds: int = 90,
    codes: tuple[int, ...] = (0, 1, 2),
) -> tuple[int, str]:
    """Run ``argv`` and assert the contract of every command on hostile input (see the module's docstring):
    ``watched`` are folders where nothing may appear, change or vanish except under the ``owned`` paths
    (each "folder/relative/prefix")."""
    before = {str(w): _tree(w) for w in watched}
    try:
        code, text = _run(argv, seconds)
    except Alarm:
        pytest.fail(f"{what}: no answer within {seconds} s")
    assert code in codes, f"{what}: exit {code}\n{text[-3000:]}"
    assert "Traceback" not in text and "internal error" not in text, f"{what}:\n{text[-3000:]}"
    assert SECRET not in text, f"{what} printed the secret"
    left = _running_children()
    assert left == [], f"{what}: processes left running: {left}"
    for w in watched:
        changed = before[str(w)] ^ _tree(w)
        stray = {p for p in changed if not any(f"{w}/{p}".startswith(o) for o in owned)}
        assert not stray, f"{what} changed {w}: {sorted(stray)[:10]}"
        assert not (w / VICTIM).exists() and not any(w.rglob(VICTIM)), f"{what} wrote through a dangling link"
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert rss_mib < MAX_RSS_MIB, f"peak RSS {rss_mib:.0f} MiB after {what}"
    return code, text


@pytest.mark.parametrize("cmd,kind", CASES)
def test_hostile_input(cmd, kind, corpus, hostile_env, tmp_path):
    cwd, out_dir, gated = hostile_env
    argv = [a.format(f=corpus[kind], out=out_dir, gated=gated) for a in COMMANDS[cmd]]
    _honest(
        f"{cmd} on {kind}", argv, [corpus[kind].parent, tmp_path], [f"{out_dir}", f"{cwd}/runs", f"{tmp_path}/owned"]
    )


@pytest.mark.parametrize("cmd,where,kind", PROJECT_CASES)
def test_hostile_project_file(cmd, where, kind, hostile_env, tmp_path):
    """A cloned project whose own file ``where`` is hostile; the command runs in it, on it."""
    cwd, out_dir, gated = hostile_env
    project = tmp_path / "project"
    _place(kind, project / where)
    argv = [a.format(p=project, out=out_dir, gated=gated) for a in PROJECT_COMMANDS[cmd]]
    owned = [f"{out_dir}"] + [f"{project}/{o}" for o in PROJECT_OWNS.get(cmd, ())]
    code, text = _honest(f"{cmd} with {kind} at {where}", argv, [tmp_path], owned)
    if where.endswith(".bak") and cmd in PROJECT_OWNS:
        target = project / where[: -len(".bak")]
        assert os.path.lexists(project / where), "the planted .bak name was removed or replaced"
        assert not target.exists() or target.is_file() and not target.is_symlink()


@pytest.mark.parametrize("cmd,kind", TARGET_CASES)
def test_hostile_interpreter(cmd, kind, hostile_env, tmp_path):
    """--python names something that is not a working interpreter, or one that answers the probe with junk."""
    cwd, out_dir, gated = hostile_env
    bad = tmp_path / "bin" / "python"
    if kind in _SCRIPTS:
        bad.parent.mkdir()
        bad.write_text("#!/bin/sh\n" + _SCRIPTS[kind] + "\n")
        bad.chmod(0o755)
    else:
        _place(kind, bad)
    project = tmp_path / "project"
    project.mkdir()
    argv = [a.format(f=bad, p=project, out=out_dir, gated=gated) for a in TARGET_COMMANDS[cmd]]
    code, text = _honest(
        f"{cmd} --python {kind}", argv, [tmp_path], [f"{out_dir}", f"{cwd}/runs"], seconds=120, codes=(1, 2, 3)
    )
    # 3 is "no verdict: the target interpreter could not be examined" (docs/check.md), and then it must say why
    assert code != 3 or str(bad) in text, f"{cmd} --python {kind}: exit 3 without naming the interpreter\n{text}"
    assert code != 0, f"{cmd} --python {kind}: exit 0 on a broken interpreter"


@pytest.mark.parametrize("cmd,kind", VALUE_CASES)
def test_hostile_value(cmd, kind, hostile_env, tmp_path):
    """A hostile value on the command line (version, id, text, address, glob)."""
    cwd, out_dir, gated = hostile_env
    argv = [a.format(v=VALUES[kind], out=out_dir, gated=gated) for a in VALUE_COMMANDS[cmd]]
    _, text = _honest(f"{cmd} {kind}", argv, [tmp_path], [f"{out_dir}", f"{cwd}/runs"])
    assert "\x1b]0;" not in text and "\x1b[2J" not in text, f"{cmd} echoed a terminal escape"


@pytest.mark.parametrize("target", ["under-a-file", "read-only"])
def test_hostile_output_paths(target, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() == 0 and target == "read-only":
        pytest.skip("root writes into a read-only directory: tests/test_hostile_fs.py mounts a read-only file system")
    dest = tmp_path / "file" / "out" if target == "under-a-file" else ro / "out"
    for argv in (
        ["check", "--quick", "--only", "python-env", "--output", str(dest / "r.json"), "--format", "json"],
        ["report", "--output", str(dest / "r.md")],
    ):
        code, text = _run(argv, 120)
        assert code == 2, (argv, code, text[-2000:])
        assert str(dest.parent) in text or str(dest) in text


def test_corpus_size():
    """The numbers the closing note gives."""
    commands = (
        {c[0] for c in COMMANDS.values()}
        | {c[0] for c in PROJECT_COMMANDS.values()}
        | {c[0] for c in TARGET_COMMANDS.values()}
        | {c[0] for c in VALUE_COMMANDS.values()}
    )
    assert commands >= {
        "check",
        "report",
        "diff",
        "explain",
        "memory",
        "matrix",
        "train",
        "preflight",
        "fix-kernel",
        "fix-stack",
        "vscode",
    }
    total = len(CASES) + len(PROJECT_CASES) + len(TARGET_CASES) + len(VALUE_CASES)
    print(
        f"fuzz corpus: {len(KINDS)} hostile files x {len(COMMANDS)} file options = {len(CASES)}; "
        f"project files: {len(PROJECT_CASES)}; {len(INTERPRETERS)} hostile interpreters x {len(TARGET_COMMANDS)} "
        f"= {len(TARGET_CASES)}; {len(VALUES)} hostile values x {len(VALUE_COMMANDS)} = {len(VALUE_CASES)}; "
        f"{total} cases in all, plus 2 output-path cases",
        file=sys.stderr,
    )
