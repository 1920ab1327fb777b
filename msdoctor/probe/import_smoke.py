# msdoctor import smoke test.
#
# Run BY THE TARGET INTERPRETER as `python -W ignore - '<json args>'` with this file on stdin, in a
# fresh process. Standard library only; must parse as Python 3.7.
# Args: {"steps": [{"module": "mindspore", "touch": ["Tensor"], "version_attr": "__version__"}, ...]}
# It imports the modules in the given order (the order a training script uses: mindnlp before
# transformers, see research/compat.md C14) and stops at the first failure, as a script would.
# Before each import it writes a marker line to stderr, so that a hard crash (segfault, abort)
# still tells the caller which import was running.
# Prints one JSON object between marker lines: {"steps": [{"module", "ok", "seconds", "version",
# "error_type", "error", "last_line", "traceback_tail"}], "python": "3.11.4"}.

import json
import sys
import time
import traceback

BEGIN = "@@MSDOCTOR-PROBE-BEGIN@@"
END = "@@MSDOCTOR-PROBE-END@@"
STEP = "@@MSDOCTOR-SMOKE-IMPORT@@"


def _resolve(obj, dotted):
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _run_step(step):
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


def main():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    results = []
    for step in args.get("steps", []):
        res = _run_step(step)
        results.append(res)
        if not res["ok"]:
            break
    data = {"steps": results, "python": "%d.%d.%d" % tuple(sys.version_info[:3])}
    sys.stdout.write("\n" + BEGIN + "\n" + json.dumps(data) + "\n" + END + "\n")
    sys.stdout.flush()


main()
