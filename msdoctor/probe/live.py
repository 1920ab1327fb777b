# msdoctor live probe: the training stack imported, then the device used, in ONE target process.
#
# Run BY THE TARGET INTERPRETER as `python -W ignore - '<json args>'` with this file
# on stdin (after msdoctor.probe.PATH_FIXUP), from an empty scratch directory that is not on
# sys.path: it imports the installed stack, never a project file. Standard library only at parse time;
# must parse as Python 3.7. It is the one place where msdoctor imports MindSpore,
# and it does so once: importing it twice (a smoke test and a device test in two
# processes) would double the slowest part of `msdoctor check` on a 2-core machine.
#
# 1. Import smoke ("steps"): import the installed stack in the order a training
#    script does (mindspore, mindnlp before transformers: observed, docs/sources.md),
#    stop at the first failure. A marker line on stderr before each import tells
#    the caller which import was running if the process crashes or hangs. The
#    smoke result is printed (and flushed) as soon as it is known, so a later hang
#    in device initialisation cannot lose it.
# 2. Device ("device": true): chdir to the scratch directory (Ascend writes
#    kernel_meta/ into the cwd), select the requested target, run a small matmul,
#    compare it with a NumPy float64 reference.
#
# MindSpore's own log lines go to stderr (GLOG_logtostderr=1, level from GLOG_v
# set by the caller). Phase markers on stderr tell which phase each line (or a
# hang) belongs to, even when the process is killed by the caller's timeout.
#
# Args (JSON in sys.argv[1]): {"steps": [{"module", "touch", "version_attr", "only_if_found"}...],
#   "device": true, "target": "Ascend"|"GPU"|"CPU"|null, "scratch": DIR, "size": 64, "seed": 0}
# A step with "only_if_found" is planned only when the module can be found or a distribution of
# that name is installed, decided here (find_spec, importlib.metadata; nothing imported), so the
# caller can start this probe before it knows what the target has installed.
# Output on stdout: the smoke result between SMOKE_BEGIN/SMOKE_END, then the
# whole result (schema LIVE_SCHEMA) between BEGIN/END.

import json
import os
import sys
import time
import traceback

LIVE_SCHEMA = 1
BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"
PHASE = "@@MSDOCTOR-PHASE {}@@"
STEP = "@@MSDOCTOR-SMOKE-IMPORT@@"
SMOKE_BEGIN = "@@MSDOCTOR-SMOKE-BEGIN@@"
SMOKE_END = "@@MSDOCTOR-SMOKE-END@@"


def phase(name):
    sys.stderr.flush()
    sys.stderr.write("\n" + PHASE.format(name) + "\n")
    sys.stderr.flush()


def error_of(exc):
    tail = traceback.format_exception_only(type(exc), exc)
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:8000],
        # the package's own frames: this probe's (File "<stdin>") say nothing about the failure
        "where": "".join(
            traceback.format_list([f for f in traceback.extract_tb(exc.__traceback__) if f.filename != "<stdin>"][-2:])
        )[-2000:],
        "summary": "".join(tail).strip().splitlines()[0][:500] if tail else type(exc).__name__,
    }


def _resolve(obj, dotted):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def run_step(step):
    """Import one module of the stack; a failure is a result (with the package's own traceback)."""
    name = step["module"]
    sys.stderr.write("\n" + STEP + " " + name + "\n")
    sys.stderr.flush()
    started = time.time()
    out = {"module": name, "ok": False, "seconds": None, "version": None, "touched": []}
    try:
        module = __import__(name)
        for sub in name.split(".")[1:]:
            module = getattr(module, sub)
        # lazy packages (transformers) import their real code only on attribute access
        for attr in step.get("touch") or []:
            _resolve(module, attr)
            out["touched"].append(attr)
        attr = step.get("version_attr")
        if attr:
            try:
                value = _resolve(module, attr)
                out["version"] = value if isinstance(value, str) else repr(value)
            except Exception:
                out["version"] = None
        out["ok"] = True
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from a broken package too
        # from the frame below this script's own: the user needs the package's frames only
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next)
        lines = "".join(tb).rstrip().splitlines()
        out["error_type"] = type(exc).__name__
        out["error"] = str(exc)[:2000]
        out["last_line"] = lines[-1] if lines else type(exc).__name__
        out["traceback_tail"] = lines[-12:]
    out["seconds"] = round(time.time() - started, 3)
    return out


def installed(name):
    """Whether `import name` can be attempted: the module is findable or its distribution installed."""
    import importlib.util

    try:
        if importlib.util.find_spec(name) is not None:
            return True
    except (ImportError, ValueError):
        return True  # present but broken: the import below reports how
    try:
        import importlib.metadata as metadata
    except ImportError:  # Python 3.7: no MindSpore 2.x there anyway
        return False
    try:
        metadata.distribution(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def smoke(steps):
    steps = [s for s in steps if not s.get("only_if_found") or installed(s["module"])]
    results = []
    for step in steps:
        res = run_step(step)
        results.append(res)
        if not res["ok"]:
            break
    data = {
        "planned": [st["module"] for st in steps],
        "steps": results,
        "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
    }
    sys.stdout.write("\n" + SMOKE_BEGIN + "\n" + json.dumps(data) + "\n" + SMOKE_END + "\n")
    sys.stdout.flush()
    return data


def select_device(ms, target):
    """Select target with the 2.7 API (set_device), falling back to set_context for older MindSpore."""
    if hasattr(ms, "set_device"):
        ms.set_device(target)
        return "mindspore.set_device"
    ms.set_context(device_target=target)
    return "mindspore.set_context(device_target=...)"


def current_device(ms):
    out = {"device_target": None, "device_id": None}
    try:
        out["device_target"] = ms.get_context("device_target")
    except Exception:
        pass
    try:
        out["device_id"] = ms.get_context("device_id")
    except Exception:
        pass
    return out


def device_count(ms, target):
    hal = getattr(ms, "hal", None)
    if hal is None or not hasattr(hal, "device_count"):
        return None, "mindspore.hal.device_count is not available in this MindSpore"
    try:
        return int(hal.device_count(target)), None
    except Exception as exc:
        return None, error_of(exc)["summary"]


def matmul_check(ms, np, size, seed):
    rng = np.random.RandomState(seed)
    a = rng.uniform(-1.0, 1.0, (size, size)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, (size, size)).astype(np.float32)
    expected = a.astype(np.float64).dot(b.astype(np.float64))
    start = time.time()
    out = ms.ops.matmul(ms.Tensor(a), ms.Tensor(b))
    got = out.asnumpy().astype(np.float64)  # asnumpy() waits for the device
    seconds = time.time() - start
    finite = bool(np.isfinite(got).all())
    diff = np.abs(got - expected)
    scale = float(np.abs(expected).max()) or 1.0
    return {
        "op": "mindspore.ops.matmul",
        "shape": [size, size],
        "dtype": "float32",
        "reference": "numpy float64",
        "max_abs_err": float(diff.max()) if finite else None,
        "max_rel_err": float(diff.max() / scale) if finite else None,
        "finite": finite,
        "seconds": seconds,
    }


def main():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    target = args.get("target")
    size = int(args.get("size", 64))
    seed = int(args.get("seed", 0))
    t0 = time.time()
    data = new_result(target)

    steps = args.get("steps") or []
    if steps:
        phase("smoke")
        data["smoke"] = smoke(steps)
        data["timings"]["smoke_s"] = time.time() - t0
    if not args.get("device", True):
        return finish(data, t0)
    scratch = args.get("scratch")
    if scratch and os.path.isdir(scratch):
        os.chdir(scratch)

    modules = import_mindspore(data)
    if modules is None:
        return finish(data, t0)
    ms, np = modules
    if target and not set_device(ms, target, data):
        return finish(data, t0)

    phase("device_count")
    chosen = target or data["default_device"]
    data["device_count"], data["device_count_error"] = device_count(ms, chosen)
    compute(ms, np, size, seed, data)
    return finish(data, t0)


def new_result(target):
    """The result with every field present and nothing known yet."""
    return {
        "live_schema": LIVE_SCHEMA,
        "smoke": None,
        "python": sys.executable,
        "requested": target,
        "mindspore_version": None,
        "mindspore_file": None,
        "import_error": None,
        # MindSpore cannot be found at all: not installed (not an import that fails)
        "mindspore_missing": False,
        "default_device": None,
        "set_device_api": None,
        "set_device_error": None,
        "device": None,
        "device_count": None,
        "device_count_error": None,
        "compute": None,
        "compute_error": None,
        "timings": {},
    }


def import_mindspore(data):
    """Import MindSpore and NumPy, recording the outcome in data; (ms, np), or None when there is nothing to use."""
    phase("import")
    start = time.time()
    try:
        import importlib.util

        if importlib.util.find_spec("mindspore") is None:
            data["mindspore_missing"] = True
            return None
    except (ImportError, ValueError):
        pass
    try:
        import mindspore as ms
        import numpy as np
    except BaseException as exc:  # an import that raises SystemExit is still a result
        data["import_error"] = error_of(exc)
        data["timings"]["import_s"] = time.time() - start
        return None
    data["timings"]["import_s"] = time.time() - start
    data["mindspore_version"] = getattr(ms, "__version__", None)
    data["mindspore_file"] = getattr(ms, "__file__", None)
    data["default_device"] = current_device(ms)["device_target"]
    return ms, np


def set_device(ms, target, data):
    """Select the requested target; False (with the error and the device MindSpore kept) when that failed."""
    phase("set_device")
    start = time.time()
    try:
        data["set_device_api"] = select_device(ms, target)
    except Exception as exc:
        data["set_device_error"] = error_of(exc)
    data["timings"]["set_device_s"] = time.time() - start
    if data["set_device_error"] is not None:
        data["device"] = current_device(ms)
        return False
    return True


def compute(ms, np, size, seed, data):
    """The matmul check on the selected device, then which device it ran on."""
    phase("compute")
    start = time.time()
    try:
        data["compute"] = matmul_check(ms, np, size, seed)
    except Exception as exc:
        data["compute_error"] = error_of(exc)
    data["timings"]["compute_s"] = time.time() - start
    data["device"] = current_device(ms)


def finish(data, t0):
    phase("done")
    data["timings"]["total_s"] = time.time() - t0
    sys.stdout.write("\n" + BEGIN + "\n" + json.dumps(data) + "\n" + END + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # The result is out. Skip the interpreter's teardown: with MindSpore (and transformers)
    # loaded it takes about 0.3 s here and proves nothing (observed: `python -c "import
    # mindspore"` 1.51 s vs 1.21 s with os._exit(0), 2 cores).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
