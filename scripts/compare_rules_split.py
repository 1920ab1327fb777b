"""Check that splitting msdoctor/explain/rules.py into the package msdoctor/explain/rules/ moved code verbatim.

Compares ast.dump of every top-level def, class, assignment and statement of the old rules.py and rules_env.py (as
``git show REV:...`` gives them; REV defaults to e1bdbd7, the last commit before the split) with those of the
package. Import statements (at the top or inside a function) are left out of the comparison and the ones that
differ are listed. Prints "N identical, M changed"; exit 1 when anything changed.

Usage: .venv/bin/python scripts/compare_rules_split.py [REV]
"""
import ast
import subprocess
import sys
from pathlib import Path

rev = sys.argv[1] if len(sys.argv) > 1 else "e1bdbd7"
OLD = ["msdoctor/explain/rules.py", "msdoctor/explain/rules_env.py"]
NEW = sorted(Path("msdoctor/explain/rules").glob("*.py"))


class DropImports(ast.NodeTransformer):
    def __init__(self):
        self.imports = []

    def visit_Import(self, node):
        self.imports.append(ast.unparse(node))
        return None

    visit_ImportFrom = visit_Import


def key(n):
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return n.name
    if isinstance(n, ast.Assign):
        return ",".join(ast.unparse(t) for t in n.targets)
    if isinstance(n, ast.AnnAssign):
        return ast.unparse(n.target)
    return ast.unparse(n)[:60]  # a bare statement (_CLAIMS.update(...), an assert)


def top(src, where, docstrings):
    tree = ast.parse(src)
    out = {}
    for i, n in enumerate(tree.body):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            continue
        if i == 0 and isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant):
            docstrings.append(where)
            continue
        drop = DropImports()
        n = drop.visit(n)
        k = key(n)
        assert (k, ast.dump(n)) not in out.items(), k
        out.setdefault(k, []).append((where, ast.dump(n), drop.imports))
    return out


def collect(sources):
    found, docs = {}, []
    for where, src in sources:
        for k, v in top(src, where, docs).items():
            found.setdefault(k, []).extend(v)
    return found, docs


old, _ = collect((p, subprocess.run(["git", "show", f"{rev}:{p}"], capture_output=True, text=True, check=True).stdout)
                 for p in OLD)
new, docs = collect((str(p), p.read_text()) for p in NEW)
same = changed = 0
for k in sorted(set(old) | set(new)):
    a, b = old.get(k, []), new.get(k, [])
    # a name defined in both old files (_SITE) is matched pairwise by its dump
    ad, bd = sorted(d for _, d, _ in a), sorted(d for _, d, _ in b)
    if ad == bd:
        same += len(a)
        for (wa, _, ia), (wb, _, ib) in zip(sorted(a, key=lambda x: x[1]), sorted(b, key=lambda x: x[1])):
            if ia != ib:
                print(f"  imports inside {k} differ ({wa} -> {wb}): {ia} -> {ib}")
    else:
        changed += max(len(a), len(b))
        print(f"CHANGED {k}: old in {[w for w, _, _ in a]}, new in {[w for w, _, _ in b]}")
print(f"{same} identical, {changed} changed (module docstrings and import statements left out; new docstrings: "
      f"{len(docs)})")
sys.exit(1 if changed else 0)
