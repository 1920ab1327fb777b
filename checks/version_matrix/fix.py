"""One pip command that repairs the stack, found with the target's own pip and checked by msdoctor's rules.

The version-matrix rules (Requires-Dist of every installed distribution, the compat matrix's MindSpore /
MindNLP / MindFormers rows and known breakages) say what is wrong and, in each finding's evidence
``wants``, what would make it right: ``[package, specifier, owner]``, where owner is the distribution
whose requirement (or matrix row) it is. :func:`plan_stack` turns those wants into versions the index
really has and checks the result:

1. every wanted package is asked of the target's pip (``install --dry-run --report - --no-deps``; with
   --no-deps each package's choice is independent, so each answer is cached for the whole search and a
   780 MB MindSpore wheel is read once);
2. the chosen versions, with their own Requires-Dist from pip's report, are laid over the installed
   set in memory and the same rules run again; what they still find adds wants (a new transformers
   needs an older huggingface-hub, and so on), round after round;
3. when no version on the index satisfies a want (``mindspore~=2.11.0``), or two wants on one package
   contradict each other, the owner of the want moves instead: its other versions on the index
   (``pip index versions``) are tried newest first, skipping those the matrix knows cannot be installed
   from the index (its ``installable`` / ``on_pypi`` data);
4. the search ends when the overlay breaks no rule (the plan is the changed packages, pinned exactly,
   in ONE ``pip install --no-deps`` command that installs exactly the checked set), or when its rounds,
   candidates or time run out (no command is printed then, only what blocks), or when pip cannot reach
   its index (the plan is marked unverified, with pip's own words).

Missing dependencies that were already missing and only warned about (accelerate's torch when MindNLP
brings its own torch front-end) are left alone: the plan does not pull in multi-GB packages nobody asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from msdoctor.checks.version_matrix.common import Want, wants_of as _wants_of
from msdoctor.context import FactSpec
from msdoctor.facts.matrix import MATRIX
from msdoctor.model import Finding, Status

if TYPE_CHECKING:  # pragma: no cover
    # the fixer's machinery loads when a plan is searched or applied: check --quick only folds its findings
    from msdoctor.fix import Applied, Fixer
    from msdoctor.fix.resolver import DryRun, Planned, Resolver
    from msdoctor.context import Context
    from msdoctor.facts.target import TargetFacts
    from msdoctor.matrix import Matrix


def _debug(msg: str, *args: object) -> None:
    """A debug line of the plan search (logging loads only when a search runs)."""
    import logging

    logging.getLogger(__name__).debug(msg, *args)


#: finding codes whose evidence carries ``wants`` a pip install can meet
PIP_CODES = frozenset(
    {
        "known-breakage",
        "mindspore-numpy",
        "mindspore-protobuf",
        "mindnlp-mindspore",
        "mindformers-mindspore",
        "mindformers-transformers",
        "requirement-conflict",
        "requirement-missing",
    }
)
MAX_ROUNDS = 24
MAX_CANDIDATES = 10
#: pip's own pick of a moving owner (one resolve) is a shortcut: past this, the search steps down instead
PICK_TIMEOUT_S = 90.0
#: which owner gives way when two wants on one package contradict: the larger number moves first
_RANK = {"mindspore": 0, "mindnlp": 1, "mindformers": 1, "transformers": 2}


def wants_of(f: Finding) -> list[Want]:
    return _wants_of(f.evidence)


def _canon(name: str) -> str:
    from packaging.utils import canonicalize_name

    return canonicalize_name(name)


def problems(t: "TargetFacts", m: "Matrix") -> list[Finding]:
    """The pip-fixable findings of the static version-matrix rules for the (possibly overlaid) target."""
    from msdoctor.checks.version_matrix import evaluate_packages

    return pip_fixable(evaluate_packages(t, m))


def overlay(t: "TargetFacts", planned: Sequence[Planned]) -> "TargetFacts":
    """The target as it would be after installing ``planned`` (their metadata wins on sys.path)."""
    from msdoctor.facts.target import Distribution, TargetFacts

    keys = {p.key for p in planned}
    new = [
        Distribution(
            name=p.name,
            version=p.version,
            path=f"(planned) {p.name}-{p.version}",
            location="(planned by pip)",
            kind="dist-info",
            files=[],
            requires=list(p.requires),
            requires_python=p.requires_python,
            top_level=None,
            installer="pip",
            direct_url=None,
            editable=False,
        )
        for p in planned
    ]
    raw = dict(t.raw)
    raw["find_spec"] = {k: v for k, v in (t.find_spec or {}).items() if _canon(k) not in keys}
    return TargetFacts(raw=raw, distributions=new + [d for d in t.distributions if d.key not in keys])


@dataclass(frozen=True)
class Change:
    name: str
    old: Optional[str]  # None: not installed now
    new: str

    def __str__(self) -> str:
        return f"{self.name} {self.old} -> {self.new}" if self.old else f"{self.name} (new) {self.new}"


@dataclass
class StackPlan:
    """What :func:`plan_stack` found.

    state: "ok" (no rule is broken: nothing to do), "found" (``command`` repairs every broken rule,
    checked), "unverified" (pip could not reach its index: ``command`` is msdoctor's best guess and
    ``reason`` says why it is unchecked), "none" (no set of versions on the index was found:
    ``reason`` and ``blocking`` say what stands in the way; ``command`` is None).
    """

    python: str
    state: str
    changes: list[Change] = field(default_factory=list)
    command: Optional[list[str]] = None
    reason: str = ""
    before: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)  # problems the plan leaves (warnings that were there before)
    left_alone: list[str] = field(default_factory=list)  # missing, only warned about, not pulled in (torch)
    tried: list[str] = field(default_factory=list)
    dry_runs: list[DryRun] = field(default_factory=list)
    #: the versions the plan installs, with their Requires-Dist from pip's report (what verify overlays)
    planned: list[Planned] = field(default_factory=list)
    pip_calls: int = 0
    seconds: float = 0.0

    @property
    def command_text(self) -> Optional[str]:
        if not self.command:
            return None
        n = 5 if "--no-deps" in self.command[:5] else 4  # python -m pip install [--no-deps]
        return " ".join(self.command[:n]) + " " + " ".join(f'"{a}"' for a in self.command[n:])

    def summary(self) -> str:
        """One paragraph: what the plan rests on."""
        if self.state == "found":
            return (
                f"checked: the target's pip ({self.pip_calls} dry run(s), nothing installed) has every version on "
                f"its index, and with them every Requires-Dist and compat-matrix rule msdoctor knows holds "
                f"({len(self.before)} problem(s) now, none after)"
            )
        if self.state == "unverified":
            return f"UNVERIFIED: {self.reason}"
        if self.state == "none":
            return f"no set of versions on the index repairs it: {self.reason}"
        return "nothing to change"

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "command": self.command_text,
            "changes": [str(c) for c in self.changes],
            "left_alone": self.left_alone,
            "reason": self.reason,
            "before": self.before,
            "blocking": self.blocking,
            "remaining": self.remaining,
            "tried": self.tried,
            "pip_calls": self.pip_calls,
            "seconds": round(self.seconds, 1),
        }


def _key(f: Finding) -> tuple:
    return (f.code, tuple(sorted((w.package, w.spec) for w in wants_of(f))))


def _merged(specs: dict[str, str]) -> str:
    parts: list[str] = []
    for s in specs.values():
        for p in s.split(","):
            p = p.strip()
            if p and p not in parts:
                parts.append(p)
    return ",".join(parts)


def _holds_final(spec: str, version: str) -> bool:
    """Whether pip would pick version for spec: pre-releases only when the specifier names one."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=None)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _holds(spec: str, version: Optional[str]) -> bool:
    from msdoctor.matrix import spec_contains

    return bool(version) and spec_contains(spec, version or "")


class _Search:
    def __init__(self, t: "TargetFacts", m: "Matrix", resolver: Resolver) -> None:
        self.t, self.m, self.r = t, m, resolver
        self.pins: dict[str, dict[str, str]] = {}  # package -> {owner ("" none): spec}
        self.moved: dict[str, str] = {}  # owner -> the version the search put in its place
        self.tried_for: dict[str, list[str]] = {}
        self.tried: list[str] = []
        self.chosen: dict[str, Planned] = {}
        self.answers: dict[str, DryRun] = {}  # package -> pip's last answer for it
        self.roots: set[str] = set()  # owners whose missing dependencies pip resolves (closure)
        self.picked: list[DryRun] = []  # pip_pick's answers: whole trees pip's resolver chose (see closure)

    # -- pip --------------------------------------------------------------------------------
    def ask(self, package: str, spec: str) -> DryRun:
        """pip's choice for package+spec: the newest version on the index that fits, read once per version.

        The index's list (``pip index versions``, one small request) picks the version, so pip downloads
        each candidate wheel once for its metadata however often the merged specifier changes.
        """
        versions, why = self.r.versions(package)
        if versions is not None:
            fits = [v for v in versions if _holds_final(spec, v)]
            if not fits:
                have = ", ".join(versions[:6]) + (" ..." if len(versions) > 6 else "") if versions else "none"
                from msdoctor.fix.resolver import DryRun

                dr = DryRun(
                    argv=[self.r.python, "-m", "pip", "index", "versions", package],
                    state="unsatisfiable",
                    missing=f"{package}{spec}",
                    available=versions,
                    error=f"the index has no {package}{spec} (it has: {have})",
                )
                self.answers[package] = dr
                return dr
            dr = self.r.dry_run([f"{package}=={fits[0]}"], no_deps=True)
        else:
            dr = self.r.dry_run([f"{package}{spec}"], no_deps=True)
        self.answers[package] = dr
        return dr

    def installed(self, package: str) -> Optional[str]:
        return self.t.version_of(package)

    def current(self, package: str) -> Optional[str]:
        """The version the search has now: its own choice, else the installed one."""
        p = self.chosen.get(package)
        return p.version if p is not None else self.installed(package)

    # -- moving an owner --------------------------------------------------------------------------
    def candidates(self, owner: str, limit: Optional[int] = MAX_CANDIDATES) -> tuple[Optional[list[str]], str]:
        versions, why = self.r.versions(owner)
        if versions is None:
            return None, why
        from packaging.version import InvalidVersion, Version

        have = self.current(owner)
        wanted = _merged(self.pins.get(owner, {}))
        ok = [
            v
            for v in versions
            if v != have
            and v not in self.tried_for.get(owner, [])
            and self._installable(owner, v)
            and (not wanted or _holds(wanted, v))
        ]
        try:
            hv = Version(have) if have else None
            older = [v for v in ok if hv is None or Version(v) < hv]
            newer = [v for v in ok if hv is not None and Version(v) > hv]
        except InvalidVersion:
            older, newer = ok, []
        return (older + newer)[:limit], ""

    def _installable(self, owner: str, version: str) -> bool:
        """The matrix's knowledge of what cannot come from the index alone (MindFormers 2.0.0/2.1.0)."""
        if owner == "mindformers":
            mf = self.m.mindformers(version)
            return mf is None or mf.installable
        if owner == "mindspore":
            ms = self.m.mindspore(version)
            py = ".".join(self.t.python_version.split(".")[:2])
            return ms is None or (ms.on_pypi and py in ms.python)
        return True

    def move(self, owner: str, others: Sequence[str] = ()) -> Optional[str]:
        """Put the owner's next candidate in place; why not, when there is none.

        ``others``: the owners that may move after it (their wants are not held against it, see pip_pick).
        """
        cands, why = self.candidates(owner)
        if cands is None:
            return f"pip could not list the versions of {owner}: {why}"
        if not cands:
            return f"no other version of {owner} on the index is left to try"
        v = self.pip_pick(owner, self.candidates(owner, limit=None)[0] or cands, others) or cands[0]
        self.tried_for.setdefault(owner, []).append(v)
        self.moved[owner] = v
        for package in list(self.pins):
            self.pins[package].pop(owner, None)
            if not self.pins[package]:
                del self.pins[package]  # nobody wants it any more
        return None

    def pip_pick(self, owner: str, cands: Sequence[str], others: Sequence[str] = ()) -> Optional[str]:
        """The candidate pip's own resolver picks for the owner under the other pins, or None.

        Stepping down one version per round costs a round (several dry runs) per version: datasets 5.2.0
        needs huggingface-hub>=1.31, transformers 4.57 needs <1.0, and the datasets that fits is many
        releases down. One dry run with the other pins as constraints (-c) lets pip's backtracking resolver
        walk the owner's releases itself, reading only their metadata. Its answer is taken only when it is
        one of the candidates (not tried yet, installable, within the owner's own pins); otherwise, or when
        pip fails, the caller steps down as before. The wants of the ``others``, owners that may move too
        (kernels wants huggingface-hub>=1.32 as datasets does), are left out: held against the owner, they
        would make the constraints contradict and pip backtrack through every release.
        """
        if len(cands) < 2:
            return None
        skip = {owner, *others}
        constraints = []
        for package, specs in sorted(self.pins.items()):
            if package == owner:
                continue
            spec = _merged({o: sp for o, sp in specs.items() if o not in skip})
            if spec:
                constraints.append(f"{package}{spec}")
        constraints += [f"{o}=={v}" for o, v in sorted(self.moved.items()) if o != owner]
        wanted = _merged(self.pins.get(owner, {}))
        dr = self.r.dry_run([f"{owner}{wanted}"], no_deps=False, constraints=constraints, timeout_s=PICK_TIMEOUT_S)
        if not dr.ok:
            _debug("pip_pick %s: pip could not pick (%s)", owner, dr.state)
            return None
        self.picked.append(dr)
        key = _canon(owner)
        picked = next((p.version for p in dr.install if p.key == key), None)
        _debug("pip_pick %s: pip picks %s under %s", owner, picked, constraints)
        return picked if picked in cands else None

    # -- the loop ---------------------------------------------------------------------------------
    def resolve_pins(self) -> Optional[tuple[str, str, DryRun]]:
        """Choose a version for every pin; (package, spec, pip's answer) of the first that fails."""
        chosen: dict[str, Planned] = {}
        first: Optional[tuple[str, str, DryRun]] = None
        wanted: dict[str, str] = {p: _merged(s) for p, s in self.pins.items()}
        for owner, v in self.moved.items():
            wanted[owner] = (wanted.get(owner, "") + "," if wanted.get(owner) else "") + f"=={v}"
        for package, spec in sorted(wanted.items()):
            if not spec and self.installed(package):
                continue
            if spec and _holds(spec, self.installed(package)):
                continue
            dr = self.ask(package, spec)
            if not dr.ok:
                if first is None or dr.state in ("offline", "timeout", "nopip"):
                    first = (package, spec, dr)
                prev = self.chosen.get(package)  # keep the last good choice: it may be the one to move
                if prev is not None:
                    chosen[package] = prev
                continue
            for p in dr.install:
                chosen[p.key] = p
        self.chosen = chosen
        if first is None and self.roots:
            first = self.closure()
        return first

    def closure(self) -> Optional[tuple[str, str, DryRun]]:
        """The missing dependencies of the roots, resolved by pip itself (no --no-deps), within the pins.

        The pins and the versions chosen so far go to pip as constraints (-c), so its backtracking
        resolver finds the rest of the tree consistent with them: a deep tree (MindFormers needs ~40
        packages) is one dry run, not one round per level.
        """
        roots = sorted(self.roots)
        specs = [f"{r}=={self.current(r)}" for r in roots if self.current(r)]
        constraints = [f"{p.name}=={p.version}" for k, p in sorted(self.chosen.items()) if k not in self.roots]
        constraints += [
            f"{p}{_merged(sp)}"
            for p, sp in sorted(self.pins.items())
            if _merged(sp) and p not in self.chosen and p not in self.roots
        ]
        dr = self._tree_already_resolved(specs, constraints) or self.r.dry_run(
            specs, no_deps=False, constraints=constraints
        )
        for r in roots:
            self.answers[r] = dr
        if not dr.ok:
            return (roots[0], f"=={self.current(roots[0])}", dr)
        for p in dr.install:
            self.chosen[p.key] = p
        return None

    def _tree_already_resolved(self, specs: Sequence[str], constraints: Sequence[str]) -> Optional["DryRun"]:
        """A whole tree pip's resolver already chose (a pip_pick) that holds the roots at these versions and meets
        every constraint: a resolution of the same request within the tighter constraints, so the closure's own
        dry run (a full resolution: about 20 s of pip's CPU for MindFormers' ~50 packages) would add nothing."""
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            wanted = [Requirement(x) for x in [*specs, *constraints]]
        except InvalidRequirement:
            return None
        for dr in self.picked:
            tree = {p.key: p.version for p in dr.install}

            def met(req: "Requirement", tree: dict[str, str] = tree) -> bool:
                version = tree.get(_canon(req.name)) or self.installed(req.name)
                return version is None or req.specifier.contains(version, prereleases=True)

            roots_in_tree = all(_canon(x.split("==")[0]) in tree for x in specs)
            if roots_in_tree and all(met(r) for r in wanted):
                _debug("closure %s: the tree of an earlier pick already meets the pins", list(specs))
                return dr
        return None


def _rank(name: Optional[str]) -> int:
    from msdoctor.domain.stack import training_stack

    if name is None:
        return -1
    return _RANK.get(name, 3 if name in training_stack() else 4)


def plan_stack(t: "TargetFacts", m: "Matrix", resolver: Resolver, *, max_rounds: int = MAX_ROUNDS) -> StackPlan:
    """Search for one pip command that leaves no version-matrix rule broken (see the module docstring)."""
    started = time.monotonic()
    base = problems(t, m)
    plan = StackPlan(python=t.python_cmd(), state="ok", before=[f.title for f in base])
    if not base:
        return plan
    # already missing, only warned about: not pulled in (see the module docstring)
    left_alone = {
        w.package for f in base if f.status is Status.WARN and f.code == "requirement-missing" for w in wants_of(f)
    }
    plan.left_alone = sorted(left_alone)
    s = _Search(t, m, resolver)
    current = t
    outcome: Optional[str] = None
    for _ in range(max_rounds):
        relevant = _relevant(problems(current, m), left_alone)
        _debug(
            "round: %d problem(s): %s | pins %s | moved %s",
            len(relevant),
            "; ".join(f.title for f in relevant)[:600],
            {k: _merged(v) for k, v in s.pins.items()},
            s.moved,
        )
        if not relevant:
            outcome = "found"
            break
        # every want is pinned and the rules still complain: the owner of a remaining want moves
        if not _add_wants(s, relevant, left_alone) and not _move_an_owner(s, relevant, plan):
            outcome = "none"
            break
        if _settle_pins(s, plan, base):
            plan.seconds = time.monotonic() - started
            return plan
        current = overlay(t, list(s.chosen.values()))
    else:
        outcome = "none"
        plan.reason = f"no repair found within {max_rounds} rounds of the search"
    plan.tried, plan.pip_calls = s.tried, resolver.calls
    plan.dry_runs = [s.answers[k] for k in sorted(s.answers) if k in s.chosen or k in s.moved]
    plan.seconds = time.monotonic() - started
    if outcome != "found":
        plan.state = "none"
        if not plan.blocking:
            plan.blocking = [f.title for f in problems(current, m)]
        return plan
    return _found(plan, s, base, current)


def _relevant(probs: list[Finding], left_alone: set[str]) -> list[Finding]:
    """The problems the search repairs: all but dependencies that are missing, only warned about and left alone."""
    return [
        f
        for f in probs
        if not (
            f.code == "requirement-missing"
            and f.status is Status.WARN
            and all(w.package in left_alone for w in wants_of(f))
        )
    ]


def _add_wants(s: _Search, relevant: list[Finding], left_alone: set[str]) -> bool:
    """Pin what the problems want (closure roots for missing dependencies); whether anything new was added."""
    added = False
    for f in relevant:
        if f.code == "requirement-missing" and f.evidence.get("required_by"):
            # missing dependencies: pip's own resolver brings the owner's whole closure (see _Search.closure)
            root = _canon(str(f.evidence["required_by"]))
            if any(w.package not in left_alone for w in wants_of(f)) and root not in s.roots:
                s.roots.add(root)
                added = True
            continue
        for w in wants_of(f):
            owner = w.owner or ""
            if owner in s.moved and w.package == owner:
                continue
            specs = s.pins.setdefault(w.package, {})
            if specs.get(owner) != w.spec:
                specs[owner] = w.spec
                added = True
    return added


def _move_an_owner(s: _Search, relevant: list[Finding], plan: StackPlan) -> bool:
    """Move the owner of a remaining want (the highest :func:`_rank`); when none can move, the plan says why."""
    owners = [w.owner for f in relevant for w in wants_of(f) if w.owner]
    mover = max(owners, key=_rank) if owners else None
    # the owners that rank as high as the mover may move after it
    others = sorted({o for o in owners if o != mover and _rank(o) >= _rank(mover)})
    why = s.move(mover, others) if mover else "the remaining problems have no version to move"
    if why or mover is None:
        plan.blocking = [f.title for f in relevant]
        plan.reason = f"{why}; " + "; ".join(plan.blocking[:3])
        return False
    s.tried.append(f"{mover}=={s.moved[mover]}: tried because {relevant[0].title}")
    return True


def _settle_pins(s: _Search, plan: StackPlan, base: list[Finding]) -> bool:
    """Choose a version for every pin, moving owners while pip has none; True when that ends the search
    (pip cannot check: the plan is unverified; nothing is left to move: the plan is none)."""
    failed = s.resolve_pins()
    while failed is not None:
        package, spec, dr = failed
        if dr.state in ("offline", "timeout", "nopip"):
            _unverified(plan, s, base, dr)
            return True
        owners = sorted((o for o in s.pins.get(package, {}) if o), key=_rank, reverse=True)
        if not owners and (package in s.moved or package in s.roots):
            owners = [package]
        s.tried.append(
            f"{package}{spec}: "
            + ("no such version on the index" if dr.state == "unsatisfiable" else (dr.error or dr.state)[:300])
        )
        movable = [o for o in owners if o in s.moved or s.current(o)]
        why = f"nothing to move: {package}{spec} is wanted by {', '.join(owners) or 'the rules'}"
        # the highest-ranked owner moves; when it has no other version, the next one does
        for i, mover in enumerate(movable):
            # those after it may still move; those before it could not, so their wants hold
            others = [o for o in movable[i + 1 :] if _rank(o) >= _rank(mover)]
            why_not = s.move(mover, others)
            if why_not is None:
                why = ""
                break
            why = why_not
        if why:
            plan.state = "none"
            plan.reason = f"{package}{spec} is not available from the index ({_short(dr.error)}); {why}"
            plan.blocking = [f"{package}{spec}: {_short(dr.error)}"]
            plan.tried, plan.dry_runs, plan.pip_calls = s.tried, [dr], s.r.calls
            return True
        failed = s.resolve_pins()
    return False


def _unverified(plan: StackPlan, s: _Search, base: list[Finding], dr: DryRun) -> None:
    """pip could not reach its index: msdoctor's rules applied without it, left to pip's own resolver."""
    plan.state = "unverified"
    plan.reason = (
        f"the target's pip could not check it ({dr.error}); the versions are msdoctor's "
        "rules applied without the index, so they may not exist there"
    )
    guess = {p: dict(sp) for p, sp in s.pins.items()}
    for f in base:  # the missing dependencies pip would have resolved (closure roots) too
        if f.status is Status.FAIL:
            for w in wants_of(f):
                guess.setdefault(w.package, {}).setdefault(w.owner or "", w.spec)
    plan.command = _guess_command(s.t, guess)
    plan.dry_runs, plan.pip_calls = [dr], s.r.calls


def _found(plan: StackPlan, s: _Search, base: list[Finding], current: Any) -> StackPlan:
    """The overlay breaks no rule: the changed packages, pinned exactly, in one ``pip install --no-deps``."""
    t = s.t
    changes = []
    for _name, p in sorted(s.chosen.items()):
        old = t.version_of(p.name)
        if old != p.version:
            changes.append(Change(p.name, old, p.version))
    if not changes:  # only problems left alone (a torch nobody installed): nothing for pip to do
        plan.state = "ok"
        plan.remaining = [f.title for f in base]
        return plan
    base_keys = {_key(f) for f in base}
    plan.state = "found"
    plan.changes = changes
    plan.remaining = [f.title for f in problems(current, s.m) if _key(f) in base_keys]
    plan.command = [t.python_cmd(), "-m", "pip", "install", "--no-deps", *(f"{c.name}=={c.new}" for c in changes)]
    plan.planned = [p for p in s.chosen.values() if t.version_of(p.name) != p.version]
    return plan


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit] + " ...)"


def _guess_command(t: "TargetFacts", pins: dict[str, dict[str, str]]) -> Optional[list[str]]:
    """Without the index: the wanted specifiers, and pip's own resolver left to pull dependencies."""
    wanted = set(pins)
    specs = []
    for p, owned in sorted(pins.items()):
        kept = {o: sp for o, sp in owned.items() if not o or o not in wanted or o == p}  # owners that change anyway
        if kept or not owned:
            specs.append(f"{p}{_merged(kept)}")
    return [t.python_cmd(), "-m", "pip", "install", *specs] if specs else None


# -- findings ----------------------------------------------------------------------------------------
def pip_fixable(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.code in PIP_CODES and f.status in (Status.FAIL, Status.WARN) and wants_of(f)]


def apply_to_findings(findings: list[Finding], plan: StackPlan) -> list[Finding]:
    """ONE command for every pip-fixable finding it repairs: the first carries it, the others point at it.

    Findings the plan leaves as they are (a torch nobody installed) keep their own advice; a failed
    import smoke is told that the command repairs known causes first.
    """
    left = set(plan.remaining)
    alone = set(plan.left_alone)
    targets = [
        f
        for f in pip_fixable(findings)
        if f.title not in left
        and not (f.code == "requirement-missing" and all(w.package in alone for w in wants_of(f)))
    ]
    if not targets or plan.state == "ok":
        return findings
    first = targets[0]
    head = first.title
    if plan.state == "found":
        fix = (plan.command_text or "") + f"\n({plan.summary()}; `msdoctor fix-stack` shows the plan and applies it)"
        other = f"the one command under “{head}” repairs this too"
    elif plan.state == "unverified" and plan.command_text:
        fix = plan.command_text + f"\n({plan.summary()})"
        other = f"see the (unverified) command under “{head}”"
    else:
        fix = f"no pip command is printed: {plan.summary()}"
        other = f"see “{head}”"
    evidence = {"stack_plan": plan.to_json()}
    out = []
    for f in findings:
        if f is first:
            out.append(replace(f, fix=fix, evidence={**f.evidence, **evidence}))
        elif f in targets:
            out.append(replace(f, fix=other))
        elif f.code in ("import-fails", "import-crash") and plan.state == "found":
            out.append(
                replace(
                    f,
                    fix=f"first run the one command under “{head}” (it repairs the version rules "
                    f"above, known causes of import failures), then rerun msdoctor; {f.fix or ''}".rstrip("; "),
                )
            )
        else:
            out.append(f)
    return out


def quick_plan(t: "TargetFacts", findings: Sequence[Finding]) -> StackPlan:
    """--quick: the wants of the failures merged into one command, marked unverified (pip is not asked)."""
    pins: dict[str, dict[str, str]] = {}
    for f in pip_fixable(findings):
        if f.status is not Status.FAIL:
            continue
        for w in wants_of(f):
            pins.setdefault(w.package, {})[w.owner or ""] = w.spec
    return StackPlan(
        python=t.python_cmd(),
        state="unverified",
        command=_guess_command(t, pins),
        before=[f.title for f in pip_fixable(findings)],
        reason="--quick does not ask the target's pip; run `msdoctor fix-stack --dry-run` for a checked command",
    )


#: budget for asking pip during `msdoctor check` (one MindSpore wheel is ~780 MB to read)
CHECK_BUDGET_S = 420.0


def _compute(ctx: "Context") -> StackPlan:
    t = ctx.target
    from msdoctor.fix.resolver import Resolver

    resolver = Resolver(t.executable, environ=ctx.environ, budget_s=CHECK_BUDGET_S)
    return plan_stack(t, ctx.get(MATRIX), resolver)


#: The repair plan of the installed stack (asks the target's pip; computed once per run).
STACK_PLAN: FactSpec[StackPlan] = FactSpec(
    "stack-plan", _compute, slow=True, description="one pip command that repairs the stack, checked by pip"
)


# -- the fixer of the version-matrix check (msdoctor/fix/__init__.py: plan, verify, apply) ---------------------
#: the most one `pip install` of the plan may take (a MindSpore wheel is ~780 MB)
PIP_TIMEOUT_S = 1800.0
#: Ctrl-C (or SIGTERM) of fix-stack --yes while pip installs: pip gets this long to finish before it is sent
#: SIGINT, then proc.INTERRUPT_GRACE_S more before SIGKILL. pip rolls an upgrade back only for an Exception, not
#: for the KeyboardInterrupt a SIGINT raises (install_given_reqs in pip/_internal/req/__init__.py,
#: https://github.com/pypa/pip), so a package interrupted mid-install keeps half its files and no metadata.
PIP_FINISH_S = 120.0
#: the line pip prints before it changes site-packages (pip/_internal/req/__init__.py); before it, SIGINT is safe
PIP_INSTALLING = "Installing collected packages"
#: budget for asking pip when `msdoctor fix version-matrix` plans (the check's own budget is CHECK_BUDGET_S)
PLAN_BUDGET_S = 900.0


class StackFixer:
    """version-matrix's fixer: one ``pip install --no-deps`` of exact versions, found with the target's pip."""

    check_id = "version-matrix"

    def plan(self, ctx: "Context") -> StackPlan:
        """The plan the check computed in this run (STACK_PLAN), else one computed now."""
        if ctx.has(STACK_PLAN):
            return ctx.get(STACK_PLAN)

        from msdoctor.fix.resolver import Resolver

        resolver = Resolver(ctx.options.python or ctx.target.executable, environ=ctx.environ, budget_s=PLAN_BUDGET_S)
        return plan_stack(ctx.target, ctx.get(MATRIX), resolver)

    def verify(self, plan: StackPlan, ctx: "Context") -> list[Finding]:
        """The check's pip-fixable rules on the target as it would be after ``plan`` (its versions and their
        Requires-Dist laid over the installed set): what the plan would leave, less what it says it leaves."""
        if plan.state != "found":
            return []

        after = overlay(ctx.target, plan.planned)
        left = set(plan.remaining)
        return [f for f in _relevant(problems(after, ctx.get(MATRIX)), set(plan.left_alone)) if f.title not in left]

    def apply(self, plan: StackPlan, ctx: "Context", on_line: Callable[[str], None]) -> Applied:
        from msdoctor.fix import Applied

        """Run the plan's one pip command with the target's pip, from a scratch directory, its output to
        ``on_line``."""
        import os
        import tempfile

        from msdoctor import proc

        if plan.state != "found" or not plan.command:
            return Applied(False, "the plan has no checked command")
        with tempfile.TemporaryDirectory(prefix="msdoctor-fix-stack-") as scratch:
            res = proc.run_live(
                plan.command,
                timeout=PIP_TIMEOUT_S,
                on_line=on_line,
                env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"},
                cwd=scratch,
                finish_s=PIP_FINISH_S,
                finish_from=PIP_INSTALLING,
            )
        if not res.ok:
            return Applied(False, f"pip did not finish: {res.describe_failure()}")
        return Applied(True, f"installed {len(plan.changes)} package(s)")


FIXER: "Fixer[StackPlan]" = StackFixer()
