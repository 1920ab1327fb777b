"""The closure step of the fix-stack search takes a tree pip's resolver already chose when it meets every pin.

The MindFormers 2.1.0 case over MindSpore 2.10.0 (tests/test_fix_stack_cases.py, real index): pip_pick's dry run of
``mindformers`` resolves the whole tree of 53 packages and picks 1.9.0; the closure then asked pip again for
``mindformers==1.9.0`` within the chosen pins, another full resolution (about 25 s, 20 s of it pip's CPU, measured
here 2026-12-04), and printed the same command. The decision itself is tested here on pip's answers as data.
"""

from __future__ import annotations

from types import SimpleNamespace

from msdoctor.fix.resolver import DryRun, Planned

from msdoctor.checks.version_matrix.fix import _Search


def _p(name: str, version: str) -> Planned:
    return Planned(name=name, version=version, requires=(), requires_python=None, url=None, requested=False)


def _search(installed: dict[str, str], picked: list[DryRun]) -> _Search:
    t = SimpleNamespace(version_of=lambda name: installed.get(name.lower()))
    s = _Search(t, None, None)  # type: ignore[arg-type]  # the decision reads neither the matrix nor pip
    s.picked = picked
    return s


TREE = DryRun(
    argv=[],
    state="ok",
    install=[_p("mindformers", "1.9.0"), _p("mindspore", "2.9.0"), _p("numpy", "1.26.4"), _p("tokenizers", "0.22.2")],
)


def test_a_picked_tree_that_meets_the_roots_and_every_constraint_is_the_closure() -> None:
    s = _search({"mindspore": "2.10.0", "setuptools": "84.2.1"}, [TREE])
    got = s._tree_already_resolved(
        ["mindformers==1.9.0"], ["mindspore==2.9.0", "numpy<2", "setuptools>=83", "tokenizers>=0.21,<0.23"]
    )
    assert got is TREE


def test_a_tree_that_breaks_a_constraint_or_lacks_a_root_asks_pip_again() -> None:
    s = _search({"mindspore": "2.10.0", "setuptools": "65.5.0"}, [TREE])
    assert s._tree_already_resolved(["mindformers==1.9.0"], ["numpy==2.2.6"]) is None  # in the tree, other version
    assert s._tree_already_resolved(["mindformers==1.9.0"], ["setuptools>=83"]) is None  # kept as installed: too old
    assert s._tree_already_resolved(["mindnlp==0.5.1"], []) is None  # the root is not in the tree
    assert s._tree_already_resolved(["mindformers==1.8.0"], []) is None  # nor at this version
    assert s._tree_already_resolved(["mindformers==1.9.0"], ["not a requirement ="]) is None
    assert _search({}, [])._tree_already_resolved(["mindformers==1.9.0"], []) is None  # nothing picked yet
