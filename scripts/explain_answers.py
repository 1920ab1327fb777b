"""Write explain_text's answers on every text in tests/data/explain/*.toml to a JSON file, to compare a change's
answers before and after (entry id, title, cause, fix, the fix for an interpreter, check, line and groups).

Usage: .venv/bin/python scripts/explain_answers.py OUT.json   (then: cmp BEFORE.json AFTER.json)
"""

import glob
import json
import sys

from msdoctor.explain import explain_text
from msdoctor.tomlcompat import tomllib


def texts(obj, where):
    if isinstance(obj, dict):
        if isinstance(obj.get("text"), str):
            yield where, obj["text"]
        for k, v in obj.items():
            yield from texts(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from texts(v, f"{where}[{i}]")


out = {}
for path in sorted(glob.glob("tests/data/explain/*.toml")):
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    for where, text in texts(data, path):
        out[where] = [
            {
                "id": m.entry_id,
                "title": m.title,
                "cause": m.cause,
                "fix": m.fix,
                "fix_for": m.fix_for("/usr/bin/python3", "cfg.yaml"),
                "check": m.check_id,
                "line": m.line,
                "line_no": m.line_no,
                "count": m.count,
                "groups": {k: str(v) for k, v in sorted(m.groups.items())},
            }
            for m in explain_text(text)
        ]
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump(out, fh, indent=1, sort_keys=True)
print(len(out), "texts,", sum(len(v) for v in out.values()), "answers")
