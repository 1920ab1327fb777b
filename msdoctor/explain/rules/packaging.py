"""The rules over pip's lines: a wheel's tags against the interpreter, a distribution with no matching release,
Requires-Python, the resolver's conflicts, a source build with no wheel, an installed package's requirement,
build isolation, and pip finding no MindSpore wheel."""

from __future__ import annotations

import re
from typing import Sequence

from msdoctor.explain.owners import frame_owner
from msdoctor.explain.rules.common import _MACHINERY, _python_shown, _top, frames


# -- pip: a wheel's tags against the interpreter ------------------------------------------------------------------
#: a wheel file name: name-version(-build)?-python-abi-platform.whl (https://packaging.python.org/en/latest/
#: specifications/binary-distribution-format/#file-name-convention); the platform tag may be a dotted set
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(?:-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
_CPY = re.compile(r"^cp(?P<major>\d)(?P<minor>\d+)$")
_MANYLINUX = re.compile(r"^manylinux_(?P<maj>\d+)_(?P<min>\d+)_(?P<arch>\w+)$")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
#: the Python version the paste states (`python version is 3.7.7`, `Python 3.10`, `pip3.10 install`)
_STATED_PY = re.compile(r"\bpython(?: version)?(?: is|:)? ?(?P<v>3\.\d+)(?:\.\d+)?\b|\bpip(?P<p>3\.\d+) install", re.I)


#: a macOS platform tag names the oldest macOS the wheel runs on and the machine it is built for
#: (https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/#macos)
_MACOSX = re.compile(r"^macosx_(?P<maj>\d+)_(?P<min>\d+)_(?P<arch>\w+)$")
_MAC_MACHINES = {
    "arm64": "an Apple silicon Mac (arm64)",
    "x86_64": "an Intel Mac (x86_64)",
    "universal2": "an Intel or Apple silicon Mac (universal2)",
    "intel": "an Intel Mac",
}


def _platform(tag: str) -> tuple[str, str]:
    """(operating system, machine) a platform tag stands for; what pip needs for it."""
    need = ""
    m = _MANYLINUX.match(tag)
    if m:
        need = f"glibc {m.group('maj')}.{m.group('min')} or newer and pip 20.3 or newer"
        return f"Linux {m.group('arch')} ({need})", m.group("arch")
    for legacy, glibc in _LEGACY_MANYLINUX.items():
        if tag.startswith(legacy + "_"):
            arch = tag[len(legacy) + 1 :]
            return f"Linux {arch} (glibc {glibc} or newer)", arch
    if tag.startswith("linux_"):
        return f"Linux {tag[6:]}", tag[6:]
    if tag.startswith("win"):
        return f"Windows ({tag})", tag
    mac = _MACOSX.match(tag)
    if mac:
        arch = mac.group("arch")
        machine = _MAC_MACHINES.get(arch, arch)
        return f"macOS {mac.group('maj')}.{mac.group('min')} or later on {machine} ({tag})", arch
    if tag.startswith("macosx"):
        return f"macOS ({tag})", tag
    return tag, tag


def wheel_groups(wheel: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for ``WHEEL is not a supported wheel on this platform`` from the wheel's own tags; empty
    when the file name is not a wheel name."""
    m = _WHEEL.match(wheel.rsplit("/", 1)[-1].rsplit("\\", 1)[-1])
    if m is None:
        return {}
    py, plat = m.group("py"), m.group("plat")
    cp = _CPY.match(py)
    python = (
        f"CPython {cp.group('major')}.{cp.group('minor')}" if cp else ("any Python 3" if py.startswith("py3") else py)
    )
    by_arch: dict[str, str] = {}
    for tag in plat.split("."):  # a compressed tag set: per machine, the least demanding tag (legacy manylinux)
        desc, arch = _platform(tag)
        if arch not in by_arch or "pip 20.3" in by_arch[arch]:
            by_arch[arch] = desc
    platforms = sorted(by_arch.values()) if plat != "any" else ["any platform"]
    stated = None
    for line in context:
        s = _STATED_PY.search(line)
        if s:
            stated = s.group("v") or s.group("p")
    mismatch = ""
    abi = m.group("abi")
    if cp and abi == f"{py}m" and (int(cp.group("major")), int(cp.group("minor"))) >= (3, 8):
        # CPython 3.8 dropped the "m" (pymalloc) ABI flag: its interpreters' ABI tag is cp38, never cp38m
        # (https://docs.python.org/3/whatsnew/3.8.html#build-and-c-api-changes)
        return {
            "_title": f"pip refused {wheel}: its ABI tag {abi} matches no CPython {cp.group('major')}."
            f"{cp.group('minor')}",
            "_cause": (
                f"The wheel's file name says ABI {abi}, but CPython 3.8 and later have no 'm' ABI flag: a "
                f"CPython {cp.group('major')}.{cp.group('minor')} interpreter accepts {py}-{py} (or abi3), "
                f"never {py}-{abi}. The file was built or renamed with a wrong tag, so no interpreter installs "
                f"it, whichever Python or machine runs pip."
            ),
            "_fix": (
                f"Get a correctly tagged {m.group('name')} wheel for CPython {cp.group('major')}."
                f"{cp.group('minor')} on {', '.join(platforms)} (or rebuild it). If the build itself is right "
                f"and only the name is wrong, renaming the file to the interpreter's tags "
                f"({py}-{py} or {py}-none) lets pip install it; "
                f"`{{python}} -m pip debug --verbose` lists the tags this interpreter accepts. Unverified: "
                f"msdoctor did not read the wheel's WHEEL metadata."
            ),
            "rule": "wheel-tags",
        }
    if cp and stated and stated != f"{cp.group('major')}.{cp.group('minor')}":
        mismatch = f" The paste shows Python {stated}: the Python tag ({py}) is the mismatch."
    elif cp and stated:
        mismatch = (
            f" The paste shows Python {stated}, which the Python tag fits: the platform tag is the mismatch "
            f"(another OS or machine than {', '.join(platforms)}, e.g. an aarch64 server, Windows or "
            f"macOS, or a pip that is not the Linux one)."
        )
    if any(t.startswith("macosx_") for t in plat.split(".")) and not mismatch:
        mismatch = (
            " On macOS both halves of the platform tag count: a macOS older than the version the tag names "
            "refuses the wheel, and so does a Mac of the other kind (an x86_64 wheel on an Apple silicon Mac "
            "whose Python runs natively as arm64, or an arm64 one on an Intel Mac); `sw_vers` and `python -c "
            '"import platform; print(platform.mac_ver(), platform.machine())"` show which.'
        )
    return {
        "_title": f"pip refused {wheel}: it is built for {python} on {', '.join(platforms)}",
        "_cause": (
            f"A wheel's file name states where it installs: {py} (Python tag), {m.group('abi')} (ABI), {plat} "
            f"(platform): {python} on {', '.join(platforms)}. pip installs it only into an interpreter whose "
            f"own tags include all three; the pip that ran belongs to an interpreter that does not match." + mismatch
        ),
        "_fix": (
            f"Compare with the tags this interpreter accepts: `{{python}} -m pip debug --verbose`. Then install "
            f"the {m.group('name')} wheel made for your Python and platform (for MindSpore, "
            f"https://www.mindspore.cn/install lists them), or run pip with an interpreter that fits "
            f"({python}): `<that python> -m pip install {wheel}`. Unverified: msdoctor did not read this "
            f"interpreter's tags."
        ),
        "rule": "wheel-tags",
    }


_FROM_VERSIONS = re.compile(r"\(from versions:? (?P<v>[^)]*)\)?")


#: a pinned version that names a build made for one index: a local version label (`+cpu`, `+cu121`: the index
#: server rejects those on upload, https://packaging.python.org/en/latest/specifications/version-specifiers/#local-
#: version-identifiers) or a development build dated by its nightly (`.dev20250619`)
_LOCAL_PIN_VERSION = re.compile(r"==\s*[\w.!]+\+(?P<label>[\w.]+)")
_NIGHTLY_PIN = re.compile(r"==\s*[\w.!]*?\.dev(?P<date>20\d{6})\b")


#: the indexes pip says it used (`Looking in indexes: A, B`, `Looking in links: URL`) or the command names
_LOOKING = re.compile(
    r"Looking in (?:indexes|links): (?P<urls>.+)$|(?:--extra-index-url|--index-url|--find-links|"
    r"(?<!\S)-[if])[ =](?P<url>https?://\S+)",
    re.I,
)


def _extra_indexes(context: Sequence[str]) -> list[str]:
    """The indexes other than PyPI that the paste shows pip using."""
    found: list[str] = []
    for line in context:
        for m in _LOOKING.finditer(line):
            for url in re.split(r"[,\s]+", m.group("urls") or m.group("url") or ""):
                if url.startswith("http") and "pypi.org" not in url and url not in found:
                    found.append(url)
    return found


def _build_kind(req: str) -> str:
    """What kind of build a pinned requirement names, when it is one only its project's own index carries."""
    if (m := _LOCAL_PIN_VERSION.search(req)) is not None:
        return f"a local build variant (+{m.group('label')})"
    if (n := _NIGHTLY_PIN.search(req)) is not None:
        return f"a nightly development build (.dev{n.group('date')})"
    return ""


def distribution_groups(req: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for ``Could not find a version that satisfies the requirement REQ`` / ``No matching
    distribution found for REQ``, from the versions pip lists."""
    versions = None
    for line in context:
        f = _FROM_VERSIONS.search(line)
        if f:
            versions = [v.strip() for v in f.group("v").split(",") if v.strip() and v.strip() != "none"]
    name = re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]
    if versions is None:
        listed = ""
    elif not versions:
        listed = (
            f" pip listed no version at all ('from versions: none'): the index it used has no file of {name} "
            f"that installs here, for this Python version and platform, or does not carry {name} (a mirror "
            f"or proxy that lacks it, or no network)."
        )
    else:
        listed = (
            f" The index has {name} {versions[0]} to {versions[-1]} for this interpreter, but none that "
            f"satisfies {req}: the version asked for is not built for this Python or platform, or not on "
            f"this index."
        )
    build = _build_kind(req)
    extra = _extra_indexes(context)
    if build and extra:
        listed += (
            f" {req} asks for {build}, a build published on its project's own index, and the paste shows pip "
            f"already looking there ({', '.join(extra)}): that index has no file of it for this interpreter "
            f"(its Python version, its platform, a 32-bit or 64-bit build), or the version is not there."
        )
        build = ""
    elif build:
        listed += (
            f" {req} asks for {build}: such builds are most often published only on the project's own index or "
            f"download server, not on PyPI (or the mirrors that copy it), so pip finds it only with that index "
            f"configured (`--extra-index-url`, as the project's install guide gives) and reachable from "
            f"this network (a proxy or an offline network that cannot reach it gives the same error)."
        )
    return {
        "_title": f"pip found no installable {name} for {req} on this index",
        "_cause": (
            f"pip looks for a file of {name} on the index (or mirror) it is configured with that fits this "
            f"interpreter's Python version and platform." + listed
        ),
        "_fix": (
            f"`{{python}} -m pip index versions {name}` lists what this index has for this interpreter; "
            f"`{{python}} -m pip config list` shows the index or mirror in use. Use a Python version and platform "
            f"the release is built for, another index (the project's own, e.g. https://www.mindspore.cn/install "
            f"for MindSpore), or a version the list holds."
            + (
                f" For {build}: add the index the project's install guide names, and check that this network "
                f'reaches it: `{{python}} -m pip download --no-deps "{req}" --extra-index-url <that index> -d '
                f"/tmp/probe`."
                if build
                else ""
            )
            + " Unverified: msdoctor did not query the index."
        ),
        "rule": "no-distribution",
    }


# -- pip: a package's Requires-Python --------------------------------------------------------------------------------
#: the operators that set a lowest Python (the interpreter is older than it) or a highest (newer than it)
_LOWER_OPS = frozenset({">=", ">", "~="})
_UPPER_OPS = frozenset({"<", "<="})


def requires_python_groups(pkg: str, have: str, spec: str) -> dict[str, str]:
    """Cause and fix for pip's ``Package 'P' requires a different Python: V not in 'SPEC'`` (its legacy resolver,
    src/pip/_internal/resolution/legacy/resolver.py, reading the distribution's Requires-Python metadata): the Python
    running pip, V, is outside SPEC, too old or too new. Empty (no claim) when SPEC or V do not parse, or V is in
    SPEC (the line is then not what pip prints)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        specs, version = SpecifierSet(spec), Version(have)
    except (InvalidSpecifier, InvalidVersion):
        return {}
    if specs.contains(version, prereleases=True):
        return {}
    failed = [s for s in specs if not s.contains(version, prereleases=True)]
    if failed and all(s.operator in _LOWER_OPS for s in failed):
        side = f"Python {have} is older than the oldest Python {pkg} supports ({', '.join(map(str, failed))})"
    elif failed and all(s.operator in _UPPER_OPS for s in failed):
        side = f"Python {have} is newer than the newest Python {pkg} supports ({', '.join(map(str, failed))})"
    else:
        side = f"Python {have} is outside that range"
    return {
        "_title": f"{pkg} requires Python {spec}; the pip that ran is Python {have}'s",
        "_cause": (
            f"{pkg}'s package metadata (Requires-Python) says {spec}, and pip checks it against the Python "
            f"it runs with: {side}. Either that release of {pkg} does not support this Python, or the pip "
            f"that ran belongs to another Python than the one meant (a second Python on PATH: `pip` of one, "
            f"`python` of another)."
        ),
        "_fix": (
            f"`{{python}} -m pip --version` shows which Python a pip belongs to; install with an interpreter "
            f"inside {spec} (`<that python> -m pip install ...`, or a venv made from it), or pick a release of "
            f"{pkg} whose Requires-Python admits Python {have} (`{{python}} -m pip index versions {pkg}` lists "
            f"those this interpreter can install). Unverified: msdoctor did not read {pkg}'s other releases."
        ),
        "rule": "requires-python",
    }


# -- pip: the resolver's conflict lines ---------------------------------------------------------------------------
#: the lines pip prints under "The conflict is caused by:" (pip's resolver, src/pip/_internal/resolution/resolvelib/
#: factory.py: "The user requested X" and "P V depends on X"); a log prefix (timestamp) may precede them
_USER_REQ = re.compile(r"The user request(?:ed)? (?P<req>\S.*?)\s*$")  # "request": as pasted by a user
_DEPENDS = re.compile(r"(?P<who>[A-Za-z0-9][\w.-]*(?:\[[^\]\s]*\])? [^\s]+) depends on (?P<req>\S.*?)\s*$")
#: a pin to a local version (PEP 440 `+label`: torch==2.1.0+cpu): only the index that publishes it has the file
_LOCAL_PIN = re.compile(r"(?P<name>[A-Za-z0-9][\w.-]*)==(?P<ver>[\w.]+\+(?P<label>\w+))")
_CONFLICT_END = re.compile(r"To fix this you could try|ResolutionImpossible|Additionally, some packages")


def conflict_groups(after: Sequence[str]) -> dict[str, str]:
    """Cause and fix for pip's ``The conflict is caused by:`` from the requirement lines after it; empty when no
    two requirements are listed."""
    reqs: list[str] = []
    for line in after:
        if _CONFLICT_END.search(line):
            break
        u, d = _USER_REQ.search(line), _DEPENDS.search(line)
        if u:
            reqs.append(f"you asked for {u.group('req')}")
        elif d:
            reqs.append(f"{d.group('who')} needs {d.group('req')}")
    if len(reqs) < 2:
        return {}
    both = "; ".join(reqs)
    local = next((m for r in reqs for m in [_LOCAL_PIN.search(r)] if m), None)
    index = ""
    if local is not None:
        index = (
            f" One of them pins {local.group('name')} {local.group('ver')}, a local version (+{local.group('label')}): "
            f"PyPI does not carry local versions, only the index that builds them does (for torch, "
            f"https://download.pytorch.org/whl/{local.group('label')}), so pip cannot find it unless that index "
            f"is given (`--extra-index-url`)."
        )
    return {
        "_title": f"pip cannot satisfy these requirements together: {both}",
        "_cause": (
            f"pip's resolver found no set of versions that meets every requirement at once. The requirements "
            f"that conflict, as pip listed them: {both}. No release satisfies all of them, so one of them has "
            f"to change." + index
        ),
        "_fix": (
            "Change one side: relax or change your own pin so that it falls inside the range the other "
            "package needs, or pick another release of the package that needs it (one whose requirement fits "
            "your pin: `{python} -m pip index versions <package>`, and its requirements on PyPI). Then "
            "rerun the install with `{python} -m pip install ...`. Unverified: msdoctor did not resolve the "
            "new set; `{python} -m pip install --dry-run ...` does."
        ),
        "rule": "pip-conflict",
    }


# -- pip: a package built from source because no wheel fits -------------------------------------------------------
#: the package whose build pip reports (when the matched line names only the compiler)
_BUILDING = re.compile(r"(?:Building|build) wheels? for (?P<pkg>[A-Za-z0-9][\w.-]*)\b", re.I)
#: setuptools' build directory names the platform and the interpreter: build/lib.macosx-12-arm64-cpython-39,
#: build/temp.linux-aarch64-cpython-312, build/lib.win-amd64-3.8 (older setuptools)
_BUILD_DIR = re.compile(
    r"build[/\\](?:lib|temp)\.(?P<plat>[\w.-]+?)-(?:cpython-(?P<cp>\d)(?P<cpm>\d+)|(?P<v>\d\.\d+))\b"
)
#: what the build lacked, as compilers and build back-ends say it
_TOOLCHAIN = (
    (
        re.compile(r"Microsoft Visual C\+\+ [\d.]+ or greater is required", re.I),
        "the Microsoft C++ Build Tools (a C/C++ compiler for Windows)",
    ),
    (
        re.compile(r"can't find Rust compiler|\bcargo\b.*not found|setuptools[-_]rust|\bmaturin\b", re.I),
        "a Rust toolchain (rustup, https://rustup.rs)",
    ),
    (re.compile(r"Python\.h: No such file", re.I), "the Python headers (the python3-dev / python3-devel package)"),
    (
        re.compile(
            r"(?:gcc|cc|g\+\+|c\+\+)['\"]? (?:failed|: command not found)|command '(?:gcc|cc|g\+\+)' failed|"
            r"unable to execute '(?:gcc|cc)'",
            re.I,
        ),
        "a C/C++ compiler (gcc/g++)",
    ),
)


def build_groups(pkg: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for pip's failed build of a package from its source distribution. pip builds from source only
    when no wheel of the chosen release on the index fits this interpreter's tags (its Python version, platform and
    machine), so the failure says first that the release has no wheel here; what the build lacked comes from its own
    lines when the paste shows them. Empty when no package is named."""
    for line in context:
        b = _BUILDING.search(line)
        if b and not pkg:
            pkg = b.group("pkg")
    if not pkg:
        return {}
    where = ""
    for line in context:
        d = _BUILD_DIR.search(line)
        if d:
            py = f"CPython {d.group('cp')}.{d.group('cpm')}" if d.group("cp") else f"Python {d.group('v')}"
            where = f"{py} on {d.group('plat')}"
            break
    if not where:
        for line in context:
            s = _STATED_PY.search(line)
            if s:
                where = f"Python {s.group('v') or s.group('p')}"
    lacks = next((what for line in context for rx, what in _TOOLCHAIN if rx.search(line)), "")
    here = f"this interpreter ({where})" if where else "this interpreter's Python version and platform"
    return {
        "_title": f"pip is building {pkg} from source, and the build failed: no {pkg} wheel fits {here}",
        "_cause": (
            f"pip builds a package from source only when the index offers no wheel of the release it chose "
            f"that fits the interpreter's tags (or the install asked for the source: a git URL, a local path, "
            f"--no-binary); so the {pkg} release being installed has no wheel for {here} (a Python too new or "
            f"too old for that release, a platform it is not built for, such as macOS arm64 or Linux aarch64, "
            f"or a pip too old to know the tags of the wheel that exists), and pip fell back to its source "
            f"distribution, whose build needs tools this machine lacks."
            + (
                f" The build output shows it lacks {lacks}."
                if lacks
                else " The build's own output, further down, names what it lacked."
            )
        ),
        "_fix": (
            f"Prefer a wheel: `{{python}} -m pip download {pkg} --only-binary :all: --no-deps -d /tmp/w` shows "
            f"whether any release has one for this interpreter; use a Python version that release publishes "
            f"wheels for (a separate environment), or a newer {pkg} release that has one ("
            f"`{{python}} -m pip install --only-binary {pkg} {pkg}`)"
            + (
                f"; or install {lacks} and rerun the install"
                if lacks
                else "; or install the build's toolchain and rerun the install"
            )
            + ". Unverified: msdoctor did not query the index."
        ),
        "rule": "sdist-build",
    }


# -- an installed package's requirement that the installed version does not meet ------------------------------------
#: transformers' own hint names the package that checks: "Try: `pip install transformers -U`"
_TRY_UPGRADE = re.compile(r"pip install (?P<pkg>[A-Za-z0-9][\w.-]*) -U\b")


def requirement_groups(req: str, dist: str, found: str, who: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for a requirement the installed version does not meet: transformers' import-time check
    (``REQ is required for a normal functioning of this module, but found D==V``) or pip's (``P V requires REQ, but
    you have D V``). The requirer is the package pip names, else the owner of the raising frame, else the package
    the message's own hint says to upgrade; the version found is compared with the specifier (above it: D is too new
    for the requirer; below: too old). Empty when the requirement does not parse."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        spec = Requirement(req.replace(" ", "")).specifier
        version = Version(found)
    except (InvalidRequirement, InvalidVersion):
        return {}
    if version in spec:
        return {}
    if not who:
        paths = [p for p in frames(context) if not _MACHINERY.search(p)]
        owner = next((o for o in map(frame_owner, reversed(paths)) if o is not None), None)
        if owner is not None:
            who = owner.name
        else:
            hint = next((m.group("pkg") for line in context for m in [_TRY_UPGRADE.search(line)] if m), "")
            who = hint
    requirer = who or "the package that checks it"
    name = who.split(" ")[0] if who else "<that package>"
    bounds = [s for s in spec if s.operator in ("<", "<=", "==", "~=", "===")]
    above = any(not s.contains(version) for s in bounds) and all(
        s.contains(version) for s in spec if s.operator in (">", ">=")
    )
    side = (
        (
            f"{dist} {found} is newer than {requirer} accepts ({req}): {dist} was upgraded past the range this "
            f"{requirer} release was made for (or {requirer} is an older build than {dist})"
        )
        if above
        else (
            f"{dist} {found} is older than {requirer} needs ({req}): {requirer} was upgraded, or {dist} downgraded, "
            f"without the other"
        )
    )
    change = (
        (
            f"install the {name} release made for {dist} {found} (a newer one: `{{python}} -m pip install -U "
            f'{name}`), or put {dist} back in range: `{{python}} -m pip install "{dist}{spec}"`'
        )
        if above
        else (
            f'upgrade {dist} into the range: `{{python}} -m pip install "{dist}{spec}"`, or install the {name} '
            f"release made for {dist} {found}"
        )
    )
    return {
        "_title": f"{requirer} and {dist} {found} are releases that do not pair ({requirer} requires {req})",
        "_cause": (
            f"{requirer} declares that it needs {req}, and the installed {dist} is {found}, outside that range. "
            + side
            + ". The two are releases that do not pair."
        ),
        "_fix": (
            change[0].upper() + change[1:] + "; `{python} -m pip check` lists every requirement of the "
            "installed packages that is not met. Unverified: msdoctor did not resolve the new set "
            "(`{python} -m pip install --dry-run ...` does)."
        ),
        "rule": "requirement-range",
    }


# -- a package's build that imports a module its isolated build environment does not have -----------------------------
#: frames of pip's isolated build (PEP 517): the temporary environment pip creates and the hook runner it starts there
_BUILD_ENV = re.compile(r"pip-build-env-|[/\\]pyproject_hooks[/\\]_in_process|[/\\]pep517[/\\]_in_process")
#: the package pip is building: `Collecting P`, `Building wheel for P`, pip's `cwd: .../pip-install-xxx/P_<hash>`
_BUILT = re.compile(
    r"\bCollecting (?P<c>[A-Za-z0-9][\w.-]*)|\bBuilding wheels? for (?P<b>[A-Za-z0-9][\w.-]*)|"
    r"pip-install-[^/\\\s]+[/\\](?P<d>[A-Za-z0-9][\w.-]*?)_[0-9a-f]{16,}"
)


def build_isolation_groups(module: str, before: Sequence[str], after: Sequence[str] = ()) -> dict[str, str]:
    """``No module named M`` raised while pip runs a package's build in its isolated build environment (its frames
    under ``pip-build-env-*`` or pip's hook runner): the package's setup imports M at build time, and the isolated
    environment holds only the build requirements the package declares, not what the target environment has
    installed. Empty when the frames are not a build's."""
    if not any(_BUILD_ENV.search(x) for x in before):
        return {}
    top = _top(module)
    built = ""
    for x in (*before, *after):
        if (m := _BUILT.search(x)) is not None:
            built = m.group("c") or m.group("b") or m.group("d") or ""
            break
    pkg = built or "the package pip is building"
    return {
        "_title": f"the build of {pkg} imports {top}, which pip's isolated build environment does not have",
        "_cause": (
            f"{module} was imported by the setup code of {pkg} while pip built it from source: pip runs a build "
            f"in a temporary, isolated environment (the pip-build-env frames) that holds only the build "
            f"requirements the package declares (pyproject.toml [build-system] requires), not the packages "
            f"installed where it is going; {pkg} imports {top} at build time without declaring it, so an "
            f"installed {top} does not help (https://pip.pypa.io/en/stable/reference/build-system/"
            f"pyproject-toml/#build-isolation)."
        ),
        "_fix": (
            f"Install {top} into the environment first, then build without isolation so the build sees it: "
            f"`{{python}} -m pip install --no-build-isolation {built or '<the package>'}` (its other build "
            f"requirements, such as setuptools, wheel, ninja, packaging, must then be installed too); or install "
            f"a prebuilt wheel of {pkg} for this Python and platform if one exists. Unverified: `{{python}} -c "
            f'"import {top}"` confirms {top} is in the environment.'
        ),
        "rule": "build-isolation",
    }


# -- pip found no MindSpore wheel: what the compat matrix knows of that release ------------------------------------
def mindspore_wheel_groups(version: str, context: Sequence[str]) -> dict[str, str]:
    """``{ms_facts}`` for ``No matching distribution found for mindspore==V``: the Python versions compat_matrix/
    mindspore.toml lists for V (against the one the paste shows) and whether V is on PyPI. Empty text when the matrix
    has no row for V."""
    from msdoctor.matrix import load

    row = load().mindspore(version) if version else None
    if row is None:
        return {"ms_facts": ""}
    facts = f" compat_matrix lists MindSpore {row.version}'s wheels for Python {', '.join(row.python)}"
    stated = {m.group("v") or m.group("p") for line in context for m in _STATED_PY.finditer(line)} | (
        {shown} if (shown := _python_shown(context)) else set()
    )
    if len(stated) == 1:
        py = stated.pop()
        facts += (
            f"; the paste shows Python {py}, which is not one of them: use a Python it supports"
            if py not in row.python
            else f"; the paste shows Python {py}, one of them"
        )
    if not row.on_pypi:
        facts += (
            f"; MindSpore {row.version} is not on PyPI, so pip finds it only from the wheel URL or index "
            f"https://www.mindspore.cn/install gives for it"
        )
    return {"ms_facts": facts + f" ({row.source.split(';')[0]})."}


# -- a distribution whose metadata the running Python does not have --------------------------------------------------
#: the console script pip or a distro package wrote: `sys.exit(load_entry_point('envycontrol==3.5.1', ...))` (the
#: quotes lost where a paste went through markdown)
_ENTRY_POINT = re.compile(r"load_entry_point\(['\"]?(?P<dist>[^'\"=,()\s]+)==(?P<ver>[^'\",)\s]+)")
_STDLIB_PY = re.compile(r"[/\\]lib[/\\]python(?P<v>3\.\d+)[/\\]")


def metadata_missing_groups(
    g: dict[str, str], before: Sequence[str], line: str, after: Sequence[str]
) -> dict[str, str]:
    """``importlib.metadata.PackageNotFoundError: No package metadata was found for X``: the Python that runs has
    no installed distribution X (no X-*.dist-info on its path; importlib.metadata's lookup:
    https://docs.python.org/3/library/importlib.metadata.html#distributions). The frames tell why: a console script
    written for X (``load_entry_point('X==V', ...)``) run by a Python that lacks X's metadata was installed for
    another Python (a system Python upgraded since); X's own file outside site-packages asking its version is a
    source tree run without being installed; else X is not installed here, or only its files are (a leftover)."""
    dist = g.get("dist", "").strip().rstrip(".")
    if not dist:
        return {}
    text = (*before, line)
    ep = next((m for x in text if (m := _ENTRY_POINT.search(x))), None)
    pys = {m.group("v") for x in frames(before) if (m := _STDLIB_PY.search(x))}
    py = pys.pop() if len(pys) == 1 else ""
    own = [p for p in frames(before) if not _MACHINERY.search(p) and re.search(r"[/\\]", p)]
    norm = re.sub(r"[-_.]+", "_", dist).lower()
    checkout = next(
        (
            p
            for p in own
            if not re.search(r"[/\\](?:site|dist)-packages[/\\]", p)
            and any(re.sub(r"[-_.]+", "_", part).lower() == norm for part in re.split(r"[/\\]", p)[:-1])
        ),
        "",
    )
    if ep is not None and _normal(ep.group("dist")) == _normal(dist):
        runs = f"Python {py}" if py else "the Python that runs it"
        return {
            "_title": f"the {dist} command was installed for another Python than the {runs} that now runs it",
            "_cause": (
                f"The script is {dist} {ep.group('ver')}'s console entry point: it asks importlib.metadata for "
                f"{dist}'s entry points, and {runs} has no {dist} metadata. The script and its package were "
                f"installed into another Python's site-packages: most often the system Python was upgraded (a "
                f"distribution's major Python update) after {dist} was installed, and {dist}'s files stayed in the "
                f"old release's directory; or the script's first line names a Python other than the one pip "
                f"installed it for."
            ),
            "_fix": (
                f"Reinstall {dist} for the Python that runs the script: rebuild or reinstall its system package "
                f"(an AUR package is rebuilt after a Python update), or `{{python}} -m pip install --force-reinstall "
                f"{dist}`. Unverified: `head -1 $(command -v {dist})` shows the Python the script runs, "
                f"`ls /usr/lib/python3*/site-packages | grep -i {dist}` where its files are."
            ),
            "rule": "metadata-other-python",
        }
    if checkout:
        return {
            "_title": f"{dist} runs from a source tree that is not installed, so it has no package metadata",
            "_cause": (
                f"{checkout} is a file of {dist}'s source outside site-packages (a clone or a downloaded archive) "
                f"and it asks importlib.metadata for {dist}'s own version; metadata exists only for installed "
                f"distributions, and this tree was imported from the current directory or PYTHONPATH without "
                f"being installed."
            ),
            "_fix": (
                f"Install the tree into the Python that runs it: `{{python}} -m pip install -e .` in the directory "
                f"holding its pyproject.toml or setup.py (or install the released {dist}). Unverified: `{{python}} "
                f"-m pip show {dist}` shows whether it is installed."
            ),
            "rule": "metadata-source-tree",
        }
    return {
        "_title": f"no {dist} distribution is installed in the Python that ran (importlib.metadata found none)",
        "_cause": (
            f"Code asked importlib.metadata for {dist} (its version or entry points) and the Python that ran has no "
            f"{dist}-*.dist-info on its path: {dist} is not installed in this environment, or only its files are "
            f"(a leftover of an interrupted uninstall, or files copied in without pip), so `import` may find it "
            f"while its metadata is missing. Which one the paste does not tell."
        ),
        "_fix": (
            f'`{{python}} -m pip show {dist}` and `{{python}} -c "import importlib.util as u; '
            f"print(u.find_spec('{dist.replace('-', '_')}'))\"` tell the two apart: not installed, install it (or "
            f"the extra of the package that needs it); files without metadata, uninstall or delete the leftover "
            f"directory and install {dist} again if it is wanted. Unverified: msdoctor did not read the environment."
        ),
        "rule": "metadata-missing",
    }


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
