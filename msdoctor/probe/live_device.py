# msdoctor live device probe.
#
# Run BY THE TARGET INTERPRETER as `python -W ignore - '<json args>'` with this file
# on stdin, from a scratch directory (Ascend writes kernel_meta/ into the cwd).
# Standard library only at parse time; must parse as Python 3.7. It imports
# MindSpore (the one place msdoctor does), selects the requested device, runs a
# small matmul and compares it with a NumPy float64 reference.
#
# MindSpore's own log lines go to stderr (GLOG_logtostderr=1, level from GLOG_v
# set by the caller). The probe writes phase markers to stderr too, so whoever
# reads stderr knows which phase each line (or a hang) belongs to, even when the
# process is killed by the caller's timeout and no JSON is printed.
#
# Args (JSON in sys.argv[1]): {"target": "Ascend"|"GPU"|"CPU"|null, "size": 64, "seed": 0}
# Output: one JSON object between marker lines on stdout (schema LIVE_SCHEMA).

import json
import sys
import time
import traceback

LIVE_SCHEMA = 1
BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"
PHASE = "@@MSDOCTOR-PHASE {}@@"


def phase(name):
    sys.stderr.flush()
    sys.stderr.write("\n" + PHASE.format(name) + "\n")
    sys.stderr.flush()


def error_of(exc):
    tail = traceback.format_exception_only(type(exc), exc)
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:8000],
        "where": "".join(traceback.format_tb(exc.__traceback__)[-2:])[-2000:],
        "summary": "".join(tail).strip().splitlines()[0][:500] if tail else type(exc).__name__,
    }


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
    data = {
        "live_schema": LIVE_SCHEMA,
        "python": sys.executable,
        "requested": target,
        "mindspore_version": None,
        "mindspore_file": None,
        "import_error": None,
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

    phase("import")
    start = time.time()
    try:
        import numpy as np
        import mindspore as ms
    except BaseException as exc:  # an import that raises SystemExit is still a result
        data["import_error"] = error_of(exc)
        data["timings"]["import_s"] = time.time() - start
        return finish(data, t0)
    data["timings"]["import_s"] = time.time() - start
    data["mindspore_version"] = getattr(ms, "__version__", None)
    data["mindspore_file"] = getattr(ms, "__file__", None)
    data["default_device"] = current_device(ms)["device_target"]

    if target:
        phase("set_device")
        start = time.time()
        try:
            data["set_device_api"] = select_device(ms, target)
        except Exception as exc:
            data["set_device_error"] = error_of(exc)
        data["timings"]["set_device_s"] = time.time() - start
        if data["set_device_error"] is not None:
            data["device"] = current_device(ms)
            return finish(data, t0)

    phase("device_count")
    chosen = target or data["default_device"]
    data["device_count"], data["device_count_error"] = device_count(ms, chosen)

    phase("compute")
    start = time.time()
    try:
        data["compute"] = matmul_check(ms, np, size, seed)
    except Exception as exc:
        data["compute_error"] = error_of(exc)
    data["timings"]["compute_s"] = time.time() - start
    data["device"] = current_device(ms)
    return finish(data, t0)


def finish(data, t0):
    phase("done")
    data["timings"]["total_s"] = time.time() - t0
    sys.stdout.write("\n" + BEGIN + "\n" + json.dumps(data) + "\n" + END + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
