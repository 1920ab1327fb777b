"""`msdoctor vscode init`: the tasks.json it writes, its merge into a user's JSONC file, and its problem matcher.

The matcher test is end to end: the regexps are taken from the tasks.json that
the real command wrote, converted from JavaScript (what VS Code runs) to Python,
and applied to the real output of `msdoctor check --format vscode`. That run has
findings with a line (notices about msdoctor.toml entries) and without one (a
stale PYTHONPATH entry reported by python-env, attached to the --config file).
Every problem in the same run's JSON report must be captured with its file,
line and severity.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from helpers import BASE_PYTHON, env_with, run_msdoctor
from msdoctor import jsonc

TINY_CONFIG = """\
runtime: {device_target: CPU}
model: {num_layers: 2, hidden_size: 64, num_heads: 4, vocab_size: 256}
train: {micro_batch_size: 2, seq_length: 32, max_steps: 200}
"""


def init(project: Path, *extra: str, env: dict | None = None):
    return run_msdoctor(
        "vscode", "init", "--python", BASE_PYTHON, "--project", str(project), *extra, env=env or env_with()
    )


def js_regex_to_python(source: str) -> "re.Pattern[str]":
    """Compile a JavaScript RegExp source (no flags) as Python would run it the same way.

    JavaScript and Python agree on the constructs a problem matcher uses (groups,
    classes, lazy quantifiers, lookahead); they differ in named groups
    ((?<n>...) vs (?P<n>...)) and in \\w / \\d, which are ASCII-only in JavaScript
    (hence re.ASCII). Constructs that mean something else in Python are refused.
    """
    if re.search(r"\\[uxc]\{|\(\?<[=!]|\\k<|\\p\{", source):
        raise AssertionError(f"construct not handled by this conversion: {source}")
    py = re.sub(r"\(\?<([A-Za-z_]\w*)>", r"(?P<\1>", source)
    return re.compile(py, re.ASCII)


def matchers(tasks_json: Path) -> list[dict]:
    doc = jsonc.loads(tasks_json.read_text())
    task = next(t for t in doc["tasks"] if t["label"] == "msdoctor: check")
    return task["problemMatcher"]


def capture(line: str, matcher_list: list[dict]) -> list[dict]:
    """What VS Code would record for a line: every matcher is tried on every line."""
    hits = []
    for m in matcher_list:
        pat = m["pattern"]
        found = js_regex_to_python(pat["regexp"]).match(line)
        if not found:
            continue
        hit = {k: found.group(v) for k, v in pat.items() if isinstance(v, int)}
        hit["kind"] = pat.get("kind", "location")
        hits.append(hit)
    return hits


def test_fresh_project_gets_three_tasks_with_absolute_interpreter(tmp_path: Path) -> None:
    res = init(tmp_path)
    assert res.returncode == 0, res.stderr
    doc = jsonc.loads((tmp_path / ".vscode" / "tasks.json").read_text())
    labels = [t["label"] for t in doc["tasks"]]
    assert labels == ["msdoctor: check", "msdoctor: fix kernel", "msdoctor: train (tiny CPU config)"]
    assert doc["version"] == "2.0.0"
    for t in doc["tasks"]:
        assert Path(t["command"]).is_absolute() and Path(t["command"]).exists()
        assert t["args"][:3] == ["-P", "-m", "msdoctor.cli"]  # 3.11+: the workspace (cwd) is not on sys.path
        assert t["args"][t["args"].index("--python") + 1] == BASE_PYTHON
    # the test interpreter has msdoctor installed: the tasks run it directly
    assert doc["tasks"][0]["command"] == BASE_PYTHON
    train = doc["tasks"][2]["args"]
    tiny = Path(train[train.index("--config") + 1])
    assert tiny.name == "tiny-cpu.yaml" and tiny.is_file()


def test_second_run_changes_nothing_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    dry = init(tmp_path, "--dry-run")
    assert dry.returncode == 0 and "+++" in dry.stdout and not (tmp_path / ".vscode").exists()
    init(tmp_path)
    path = tmp_path / ".vscode" / "tasks.json"
    before = (path.read_text(), path.stat().st_mtime_ns)
    again = init(tmp_path)
    assert again.returncode == 0 and "up to date" in again.stdout
    assert (path.read_text(), path.stat().st_mtime_ns) == before
    assert not list(path.parent.glob("*.bak"))


def test_merge_keeps_comments_and_other_tasks(tmp_path: Path) -> None:
    path = tmp_path / ".vscode" / "tasks.json"
    path.parent.mkdir()
    original = textwrap.dedent("""\
        // my tasks, do not lose this comment
        {
            "version": "2.0.0",
            "tasks": [
                {
                    "label": "build", // inline note
                    "type": "shell",
                    "command": "make",
                },
                /* an old msdoctor task, pointing at a deleted env */
                { "label": "msdoctor: check", "type": "process", "command": "/old/env/bin/python" },
            ],
        }
        """)
    path.write_text(original)
    res = init(tmp_path)
    assert res.returncode == 0, res.stderr
    text = path.read_text()
    for kept in (
        "// my tasks, do not lose this comment",
        '"label": "build", // inline note',
        "/* an old msdoctor task, pointing at a deleted env */",
    ):
        assert kept in text
    doc = jsonc.loads(text)
    labels = [t["label"] for t in doc["tasks"]]
    assert labels == ["build", "msdoctor: check", "msdoctor: fix kernel", "msdoctor: train (tiny CPU config)"]
    assert "/old/env/bin/python" not in text  # replaced by label, not duplicated
    assert (path.parent / "tasks.json.bak").read_text() == original
    assert init(tmp_path).stdout.startswith(f"{path} is up to date")


def test_broken_tasks_json_is_reported_with_line(tmp_path: Path) -> None:
    path = tmp_path / ".vscode" / "tasks.json"
    path.parent.mkdir()
    path.write_text('{\n  "version": "2.0.0",\n  "tasks": [ { "label": "x" } \n  "oops": 1\n}\n')
    res = init(tmp_path)
    assert res.returncode == 2 and f"{path}:4:" in res.stderr and "Traceback" not in res.stderr
    assert path.read_text().endswith('"oops": 1\n}\n')  # untouched


def test_problem_matcher_captures_every_real_finding(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    config = project / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    (project / "msdoctor.toml").write_text(
        textwrap.dedent("""\
        ignore = [
          { id = "python-env/pythonpath-missing" },
          { id = "device-targte", reason = "typo on purpose", until = "2099-01-01" },
          { id = "kernel-mismatch", reason = "expired on purpose", until = "2020-01-01" },
        ]
        """)
    )
    assert init(project).returncode == 0
    found = matchers(project / ".vscode" / "tasks.json")
    env = env_with({"PYTHONPATH": f"{tmp_path / 'gone1'}:{tmp_path / 'gone2'}"}, drop=["GITHUB_STEP_SUMMARY"])
    args = ("check", "--quick", "--only", "python-env", "--config", str(config), "--project", str(project))
    out = run_msdoctor(*args, "--format", "vscode", env=env, cwd=project)
    data = json.loads(run_msdoctor(*args, "--format", "json", "--no-redact", env=env, cwd=project).stdout)

    severity = {"warn": "warning", "fail": "error", "error": "error"}
    expected = []
    problems = [("msdoctor", n) for n in data["notices"]]
    problems += [(c["id"], f) for c in data["checks"] for f in c["findings"] if f["status"] in severity]
    for cid, f in problems:
        loc = f["location"]
        expected.append(
            {
                "file": loc["path"] if loc else str(config.resolve()),
                "line": str(loc["line"]) if loc and loc["line"] else None,
                "severity": "info" if f["suppressed"] else severity[f["status"]],
                "code": f"{cid}/{f['code']}" if f["code"] else cid,
            }
        )
    assert len(expected) == 5  # 3 notices (no reason, unknown id, expired) + 2 suppressed stale entries
    assert any(e["line"] for e in expected) and any(not e["line"] for e in expected)

    got = []
    lines = out.stdout.splitlines()
    for line in lines:
        hits = capture(line, found)
        assert len(hits) <= 1, f"two matchers fire on one line: {line}"
        if hits:
            got.append(
                {
                    "file": hits[0]["file"],
                    "line": hits[0].get("line"),
                    "severity": hits[0]["severity"],
                    "code": hits[0]["code"],
                }
            )
    assert len(got) == len(lines) - 1  # every line but the summary is a problem
    key = lambda d: (d["file"], d["line"] or "", d["severity"], d["code"])  # noqa: E731
    assert sorted(got, key=key) == sorted(expected, key=key)
