# msdoctor interpreter probe: "what would `import mindspore` do in THIS interpreter?"
#
# Run BY ANY INTERPRETER msdoctor meets (a kernel's argv[0], `python` on PATH, a
# VS Code setting) as `python -W ignore -` with this file on stdin. Standard
# library only; must parse as Python 3.7. It locates modules with
# importlib.util.find_spec (which does not execute the package) and reads
# versions from metadata: it never imports mindspore or ipykernel.
#
# With {"jupyter": true} in sys.argv[1] it also reports the Jupyter kernel search
# path as THIS interpreter's Jupyter would see it: by jupyter_core itself when
# importable here, else by jupyter_core's documented rules (jupyter_core/paths.py,
# jupyter_path() and jupyter_data_dir(), 5.x), and jupyter_client's extra
# ~/.ipython/kernels (jupyter_client/kernelspec.py, _kernel_dirs_default).

import json
import os
import site
import sys

BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"
MODULES = ("mindspore", "ipykernel", "jupyter_client", "pip")
FALSY = ("no", "n", "false", "off", "0", "0.0")


def find(name):
    try:
        import importlib.util

        spec = importlib.util.find_spec(name)
    except Exception as exc:  # a broken parent or finder: report, do not crash
        return {"found": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    if spec is None:
        return {"found": False}
    locations = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    return {"found": True, "origin": origin, "locations": locations, "namespace": origin is None}


def version_beside(found, dist):
    """The version in the dist-info beside the package find_spec found: that copy's own version."""
    where = found.get("locations") or ([os.path.dirname(found["origin"])] if found.get("origin") else [])
    if not where:
        return None
    site_dir = os.path.dirname(where[0].rstrip(os.sep))
    norm = dist.lower().replace("-", "_")
    try:
        names = os.listdir(site_dir)
    except OSError:
        return None
    for name in names:
        low = name.lower()
        if low.endswith(".dist-info") and low.startswith(norm + "-"):
            return name[len(norm) + 1 : -len(".dist-info")]
    return None


def version(found, dist):
    if not found.get("found"):
        return None
    beside = version_beside(found, dist)
    if beside:
        return beside
    try:
        from importlib import metadata  # Python >= 3.8; slow to import, so only as a fallback
    except ImportError:
        metadata = None
    if metadata is not None:
        try:
            return metadata.version(dist)
        except Exception:
            return None
    norm = dist.lower().replace("-", "_")
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.lower().endswith(".dist-info") and name.lower().startswith(norm + "-"):
                return name[len(norm) + 1 : -len(".dist-info")]
    return None


def envset(name):
    return os.environ[name].lower() not in FALSY


def owned(path):
    # jupyter_core's _do_i_own, reduced: the first existing parent is ours
    p = os.path.realpath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    try:
        return os.stat(p).st_uid == os.geteuid()
    except (AttributeError, OSError):
        return os.access(p, os.W_OK)


def data_dir_by_rules():
    env = os.environ
    if env.get("JUPYTER_DATA_DIR"):
        return env["JUPYTER_DATA_DIR"]
    home = os.path.realpath(os.path.expanduser("~"))
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Jupyter")
    if sys.platform == "win32":
        appdata = env.get("APPDATA")
        if appdata:
            return os.path.join(appdata, "jupyter")
        return os.path.join(env.get("JUPYTER_CONFIG_DIR") or os.path.join(home, ".jupyter"), "data")
    xdg = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(xdg, "jupyter")


def prefer_env():
    if "JUPYTER_PREFER_ENV_PATH" in os.environ:
        return envset("JUPYTER_PREFER_ENV_PATH")
    base = getattr(sys, "base_prefix", sys.prefix)
    if sys.prefix != base and owned(sys.prefix):
        return True
    conda = os.environ.get("CONDA_PREFIX")
    if conda and sys.prefix.startswith(conda) and os.environ.get("CONDA_DEFAULT_ENV", "base") != "base":
        return owned(sys.prefix)
    return False


def kernel_dirs_by_rules():
    paths = []
    if os.environ.get("JUPYTER_PATH"):
        paths.extend(p.rstrip(os.sep) for p in os.environ["JUPYTER_PATH"].split(os.pathsep))
    user = [data_dir_by_rules()]
    if site.ENABLE_USER_SITE:
        base = site.getuserbase() if hasattr(site, "getuserbase") else getattr(site, "USER_BASE", None)
        if base:
            extra = os.path.join(base, "share", "jupyter")
            if extra not in user:
                user.append(extra)
    if os.name == "nt":
        system = (
            [os.path.join(os.environ["PROGRAMDATA"], "jupyter")]
            if (os.environ.get("JUPYTER_USE_PROGRAMDATA") and os.environ.get("PROGRAMDATA"))
            else [os.path.join(sys.prefix, "share", "jupyter")]
        )
    else:
        system = ["/usr/local/share/jupyter", "/usr/share/jupyter"]
    env_dirs = [os.path.join(sys.prefix, "share", "jupyter")]
    if env_dirs != system:
        env_dirs = [p for p in env_dirs if p not in system]
    paths.extend(env_dirs + user if prefer_env() else user + env_dirs)
    for p in system:
        if p not in paths:
            paths.append(p)
    return [os.path.join(p, "kernels") for p in paths]


def jupyter(mode):
    out = {"source": None, "data_dir": None, "kernel_dirs": []}
    if mode != "rules":
        try:
            from jupyter_core import paths as jpaths
            from jupyter_core.version import __version__ as jver

            out["source"] = "jupyter_core %s in %s" % (jver, sys.prefix)
            out["data_dir"] = jpaths.jupyter_data_dir()
            out["kernel_dirs"] = list(jpaths.jupyter_path("kernels"))
        except Exception as exc:
            out["jupyter_core_error"] = "%s: %s" % (type(exc).__name__, exc)
    if not out["source"]:
        out["source"] = "jupyter_core's documented search rules (jupyter_core not importable here)"
        out["data_dir"] = data_dir_by_rules()
        out["kernel_dirs"] = kernel_dirs_by_rules()
    # jupyter_client also searches IPython's profile dir (kernelspec.py _kernel_dirs_default)
    ipython_dir = os.environ.get("IPYTHONDIR") or os.path.join(os.path.expanduser("~"), ".ipython")
    out["kernel_dirs"].append(os.path.join(ipython_dir, "kernels"))
    out["sys_prefix_kernels"] = os.path.join(sys.prefix, "share", "jupyter", "kernels")
    return out


def main():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    modules = dict((name, find(name)) for name in MODULES)
    result = {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "version": list(sys.version_info[:3]),
        "modules": modules,
        "versions": dict((name, version(modules[name], name)) for name in ("mindspore", "ipykernel")),
    }
    if args.get("jupyter"):
        result["jupyter"] = jupyter(args.get("jupyter"))
    sys.stdout.write("\n" + BEGIN + "\n" + json.dumps(result) + "\n" + END + "\n")
    sys.stdout.flush()


main()
