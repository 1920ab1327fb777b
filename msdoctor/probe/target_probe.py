# msdoctor target-interpreter probe.
#
# Run BY THE TARGET INTERPRETER as `python -W ignore -` with this file on stdin
# (after msdoctor.probe.PATH_FIXUP), from an empty scratch directory that is not
# on sys.path: no project file is ever imported. Standard library only; must parse as
# Python 3.7 (tests compile it with ast.parse(feature_version=(3, 7))).
# It reads metadata files and never imports the packages it reports on.
# It prints exactly one JSON object between two marker lines, so that output
# from a sitecustomize or a noisy .pth file cannot corrupt it.

import json
import os
import platform
import re
import site
import sys

PROBE_SCHEMA = 1
BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"

KEY_MODULES = (
    "mindspore",
    "mindnlp",
    "mindformers",
    "mindtorch",
    "transformers",
    "numpy",
    "ipykernel",
    "te",
    "hccl",
    "tokenizers",
    "safetensors",
    "torch",
    "tbe",
)

ENV_NAMES = (
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CONDA_EXE",
    "CONDA_SHLVL",
    "CONDA_PYTHON_EXE",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYTHONSTARTUP",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PATH",
    "DEVICE_ID",
    "DEVICE_NUM",
    "TOOLCHAIN_HOME",
    "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
    "OMP_NUM_THREADS",
)
ENV_PREFIXES = (
    "ASCEND_",
    "CUDA_",
    "NVIDIA_",
    "RANK_",
    "MS_",
    "GLOG_",
    "JUPYTER_",
    "JPY_",
    "HCCL_",
    "MINDSPORE_",
    "CUDNN_",
    "VSCODE_",
)


def _read(path, limit=None):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read() if limit is None else f.read(limit)
    except (OSError, ValueError):
        return None


class _Headers(object):
    """The header block of a METADATA / PKG-INFO file (core metadata is RFC 822 style, as
    email.parser.HeaderParser reads it; that module costs more to import than all the parsing)."""

    def __init__(self, pairs):
        self._pairs = pairs

    def get(self, name):
        name = name.lower()
        for key, value in self._pairs:
            if key == name:
                return value
        return None

    def get_all(self, name):
        name = name.lower()
        return [value for key, value in self._pairs if key == name] or None


def _metadata(meta_path):
    text = _read(meta_path)
    if text is None:
        return None
    pairs = []
    # headers only: the long description after the blank line is not needed
    for line in text.split("\n\n", 1)[0].splitlines():
        if line[:1] in (" ", "\t") and pairs:  # a folded header continues the previous one
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + "\n" + line)
            continue
        key, sep, value = line.partition(":")
        if not sep:
            break  # like HeaderParser: the first line that is not a header ends the headers
        pairs.append((key.strip().lower(), value.lstrip(" \t")))
    return _Headers(pairs)


def _top_level_from_record(record_text):
    names = set()
    for line in record_text.splitlines():
        path = line.split(",", 1)[0]
        if not path or path.startswith("..") or path.startswith("/"):
            continue
        first = path.split("/", 1)[0]
        if first.endswith((".dist-info", ".egg-info", ".data")) or first == "__pycache__":
            continue
        if "/" in path:
            names.add(first)
        elif first.endswith(".py"):
            names.add(first[:-3])
        elif first.endswith((".so", ".pyd")):
            names.add(first.split(".", 1)[0])
    return sorted(names)


def _dist_from_dir(entry, name):
    path = os.path.join(entry, name)
    is_dist_info = name.endswith(".dist-info")
    meta_file = os.path.join(path, "METADATA" if is_dist_info else "PKG-INFO")
    if not os.path.isdir(path):
        # an .egg-info file (old distutils installs) holds the metadata itself
        meta_file = path
    meta = _metadata(meta_file)
    files = set()
    if os.path.isdir(path):
        try:
            files = set(os.listdir(path))
        except OSError:
            files = set()
    info = {
        "path": path,
        "location": entry,
        "kind": "dist-info" if is_dist_info else "egg-info",
        "files": sorted(files),
        "name": None,
        "version": None,
        "requires": [],
        "requires_python": None,
        "top_level": None,
        "installer": None,
        "direct_url": None,
        "editable": False,
    }
    if meta is not None:
        info["name"] = meta.get("Name")
        info["version"] = meta.get("Version")
        info["requires"] = meta.get_all("Requires-Dist") or []
        info["requires_python"] = meta.get("Requires-Python")
    if info["name"] is None:
        # fall back to the directory name: name-version.dist-info
        stem = name.rsplit(".", 1)[0]
        parts = stem.split("-")
        info["name"] = parts[0]
        if len(parts) > 1:
            info["version"] = parts[1]
    if "top_level.txt" in files:
        text = _read(os.path.join(path, "top_level.txt")) or ""
        info["top_level"] = sorted(set(l.strip() for l in text.splitlines() if l.strip()))
    elif "RECORD" in files:
        text = _read(os.path.join(path, "RECORD"))
        if text is not None:
            info["top_level"] = _top_level_from_record(text)
    if "INSTALLER" in files:
        info["installer"] = (_read(os.path.join(path, "INSTALLER")) or "").strip() or None
    if "direct_url.json" in files:
        try:
            data = json.loads(_read(os.path.join(path, "direct_url.json")) or "{}")
            info["direct_url"] = data.get("url")
            info["editable"] = bool((data.get("dir_info") or {}).get("editable"))
        except ValueError:
            pass
    return info


def _pth_files(entry, names):
    out = []
    for name in names:
        if not name.endswith(".pth"):
            continue
        text = _read(os.path.join(entry, name), limit=65536)
        if text is None:
            continue
        lines = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                lines.append({"line": line[:300], "kind": "import"})
            else:
                full = os.path.normpath(os.path.join(entry, line))
                lines.append({"line": line[:300], "kind": "path", "resolved": full, "exists": os.path.exists(full)})
        out.append({"path": os.path.join(entry, name), "lines": lines})
    return out


def _walk_sys_path(stems=None):
    """Every sys.path entry, every distribution on it, every .pth file.

    stems, when given, receives for each directory entry (in order) the set of
    importable-looking names it holds ("numpy" for numpy/, numpy.py, numpy.*.so),
    so that _top_level_specs can tell which installed names an earlier entry shadows.
    """
    dists, pths, entries = [], [], []
    seen = set()
    for raw in sys.path:
        entry = os.path.abspath(raw or os.getcwd())
        rec = {"entry": raw, "abspath": entry, "exists": os.path.exists(entry), "is_dir": os.path.isdir(entry)}
        entries.append(rec)
        if entry in seen or not rec["is_dir"]:
            continue
        seen.add(entry)
        try:
            names = sorted(os.listdir(entry))
        except OSError as exc:
            rec["error"] = str(exc)
            continue
        rec["leftovers"] = [n for n in names if n.startswith("~")]
        if stems is not None:
            stems.append((entry, set(n.split(".", 1)[0] for n in names)))
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                dists.append(_dist_from_dir(entry, name))
        pths.extend(_pth_files(entry, names))
    return entries, dists, pths


def _spec_of(mod):
    # find_spec of a top-level name locates it without importing it (no parent to import)
    import importlib.util

    try:
        spec = importlib.util.find_spec(mod)
    except (ImportError, ValueError, AttributeError) as exc:
        return {"found": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    if spec is None:
        return {"found": False}
    locs = list(spec.submodule_search_locations or [])
    return {
        "found": True,
        "origin": spec.origin,
        "locations": locs,
        "namespace": spec.origin in (None, "namespace") and bool(locs),
    }


def _find_specs():
    out = {}
    for mod in KEY_MODULES:
        out[mod] = _spec_of(mod)
    return out


# Names whose find_spec could run code or import something: never asked.
_SPEC_SKIP = ("distutils", "pip", "setuptools", "pkg_resources", "_distutils_hack")
_MAX_SPECS = 400


def _top_level_specs(stems, dists):
    """find_spec of the installed top-level names where the answer can differ from the install.

    A name is asked about when its project has two copies, when two projects
    claim it, or when a sys.path entry before the distribution's own holds
    something of that name (the current directory, PYTHONPATH, a .pth tree).
    Everything else resolves to its own distribution by construction.
    """
    order = dict((entry, i) for i, (entry, _) in enumerate(stems))
    claims, copies = {}, {}
    for d in dists:
        key = _canonical(d.get("name"))
        copies[key] = copies.get(key, 0) + 1
    wanted = set()
    for d in dists:
        key = _canonical(d.get("name"))
        idx = order.get(d["location"], 0)
        for name in d.get("top_level") or []:
            if not name.isidentifier() or name in _SPEC_SKIP or name.startswith("__editable__"):
                continue
            claims.setdefault(name, set()).add(key)
            if copies[key] > 1 or len(claims[name]) > 1 or d.get("editable"):
                wanted.add(name)
            elif any(name in s for _, s in stems[:idx]):
                wanted.add(name)
    out = {}
    for name in sorted(wanted)[:_MAX_SPECS]:
        out[name] = _spec_of(name)
    return out


def _canonical(name):
    # PEP 503 normalisation, as packaging.utils.canonicalize_name
    return re.sub(r"[-_.]+", "-", name or "").lower()


def _scheme():
    # where this interpreter installs (pip's default scheme) and its stdlib
    try:
        import sysconfig

        paths = sysconfig.get_paths()
    except Exception:  # a broken sysconfig must not cost the whole probe
        return None
    return dict((k, paths.get(k)) for k in ("purelib", "platlib", "scripts", "stdlib", "platstdlib", "data"))


def _markers():
    impl = sys.implementation
    iv = impl.version
    impl_version = "%d.%d.%d" % (iv.major, iv.minor, iv.micro)
    if iv.releaselevel != "final":
        impl_version += iv.releaselevel[0] + str(iv.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def _env():
    out = {}
    for key, value in os.environ.items():
        if key in ENV_NAMES or key.startswith(ENV_PREFIXES):
            out[key] = value
    return out


def _conda(prefix):
    meta = os.path.join(prefix, "conda-meta")
    if not os.path.isdir(meta):
        return None
    base = os.path.isdir(os.path.join(prefix, "condabin")) or os.path.isdir(os.path.join(prefix, "pkgs"))
    return {"prefix": prefix, "is_base": base, "name": "base" if base else os.path.basename(prefix.rstrip(os.sep))}


def _pyvenv_cfg(prefix):
    text = _read(os.path.join(prefix, "pyvenv.cfg"))
    if text is None:
        return None
    cfg = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            cfg[k.strip()] = v.strip()
    return cfg


def main():
    stems = []
    entries, dists, pths = _walk_sys_path(stems)
    try:
        site_packages = list(site.getsitepackages())
    except AttributeError:  # old virtualenv's site.py
        site_packages = []
    data = {
        "probe_schema": PROBE_SCHEMA,
        "executable": sys.executable,
        "executable_realpath": os.path.realpath(sys.executable) if sys.executable else None,
        "version": list(sys.version_info[:3]),
        "version_string": sys.version,
        "implementation": sys.implementation.name,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "exec_prefix": sys.exec_prefix,
        "cwd": os.getcwd(),
        "platform": {
            "system": platform.system(),
            "machine": platform.machine(),
            "release": platform.release(),
            "libc": list(platform.libc_ver()),
        },
        "in_venv": getattr(sys, "base_prefix", sys.prefix) != sys.prefix,
        "pyvenv_cfg": _pyvenv_cfg(sys.prefix),
        "conda": _conda(sys.prefix),
        "sys_path": entries,
        "site_packages": site_packages,
        "user_site": {
            "path": site.USER_SITE,
            "base": site.USER_BASE,
            "enabled": bool(site.ENABLE_USER_SITE),
            "exists": bool(site.USER_SITE) and os.path.isdir(site.USER_SITE),
        },
        "flags": {
            "no_user_site": bool(sys.flags.no_user_site),
            "ignore_environment": bool(sys.flags.ignore_environment),
            "isolated": bool(getattr(sys.flags, "isolated", 0)),
        },
        "markers": _markers(),
        "distributions": dists,
        "pth_files": pths,
        "find_spec": _find_specs(),
        "top_level_specs": _top_level_specs(stems, dists),
        "scheme": _scheme(),
        "env": _env(),
        # imported before any project file could be found: a file of that name cannot shadow them
        "startup_modules": globals().get("_MSDOCTOR_STARTUP_MODULES") or [],
        "modules_preloaded": sorted(m for m in ("mindspore", "transformers", "torch", "numpy") if m in sys.modules),
    }
    sys.stdout.write("\n" + BEGIN + "\n" + json.dumps(data) + "\n" + END + "\n")
    sys.stdout.flush()


main()
