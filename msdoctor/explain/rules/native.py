"""The rules over native code: a runtime library too old (whose copy was loaded), NumPy's C API, a CUDA library of
another release, who loads a missing Ascend library, and the return codes of CANN's runtime
(compat_matrix/acl_codes.toml)."""

from __future__ import annotations

import re
from typing import Sequence

from msdoctor.explain.owners import file_owner
from msdoctor.explain.rules.common import _dist_shown, _vtuple, frames


# -- a runtime library too old: whose copy was loaded -------------------------------------------------------------
#: the system's own library directories (the dynamic loader's defaults and the Debian multiarch ones)
_SYSTEM_LIB = re.compile(r"^/(?:usr/)?lib(?:64|32)?/(?:[\w-]+-linux-gnu\w*/)?[^/]+$")
#: an environment's prefix and its lib directory: a conda env (`.../envs/NAME/lib/`, a base install's `lib/`), a venv
_ENV_LIB = re.compile(
    r"^(?P<prefix>.*?(?:[/\\]envs[/\\][^/\\]+|[/\\](?:ana|mini)conda\d*|[/\\]mini(?:forge|mamba)\d*|"
    r"[/\\]mambaforge))[/\\]lib[/\\][^/\\]+$"
)


def runtime_groups(lib: str, what: str, version: str) -> dict[str, str]:
    """Cause and fix for ``LIB: version `GLIBCXX_3.4.29' not found`` when LIB, the copy the loader took, is not the
    system's: an environment's own (older) libstdc++ / libgcc found first (conda's interpreter finds its env's lib/
    before the system's), or one bundled inside a package. Empty when LIB is the system's or not named (the general
    text, the system's library is too old, stands)."""
    if lib and "\\" not in lib:
        import posixpath

        lib = posixpath.normpath(lib)  # `.../anaconda3/bin/../lib/libstdc++.so.6` is the base env's lib/
    if not lib or not re.search(r"[/\\]", lib):  # no copy named, or only its file name: which one, not shown
        return _unnamed_runtime_groups(what, version)
    if _SYSTEM_LIB.match(lib):
        return {}
    site = file_owner(lib)
    env = _ENV_LIB.match(lib)
    if site is not None and site.name not in ("CANN", "NNAL", "the Ascend driver"):
        whose, why = (
            f"a copy bundled inside the {site.name} package ({site.why})",
            (f"{site.name} ships its own {lib.rsplit('/', 1)[-1]}, which the loader takes before the system's"),
        )
        fix = (
            f"Install a build of {site.name} that does not bundle an older {lib.rsplit('/', 1)[-1]} (another "
            f"release, or its manylinux wheel), or one made for this system"
        )
    elif env is not None:
        prefix = env.group("prefix")
        whose, why = (
            f"the environment's own copy (under {prefix})",
            (
                f"the environment at {prefix} has its own {lib.rsplit('/', 1)[-1]} in {prefix}/lib, which its "
                f"interpreter loads before the system's (the system one may well have {what}_{version})"
            ),
        )
        fix = (
            f"Put a new enough one in the environment: `conda install -n <env> -c conda-forge libstdcxx-ng "
            f"libgcc-ng` (or `conda update libstdcxx-ng`), or, if the system's has {what}_{version} (`strings "
            f"/usr/lib/x86_64-linux-gnu/libstdc++.so.6 | grep {what}_{version}`), point {lib} at it (keep a copy "
            f"of the old file)"
        )
    else:
        return {}
    return {
        "_title": f"the {lib.rsplit('/', 1)[-1]} that was loaded, {whose}, lacks {what}_{version}",
        "_cause": (
            f"A compiled library needs {what}_{version}, and the copy of {lib.rsplit('/', 1)[-1]} the loader "
            f"took is {lib}: {why}. That copy is older than the one the library was built against; the "
            f"system's own copy is not the one in question."
        ),
        "_fix": (
            fix + f". Check: `strings {lib} | grep {what}_` lists the versions that copy has. Unverified: msdoctor "
            f"did not read the files."
        ),
        "rule": "runtime-copy",
    }


def _unnamed_runtime_groups(what: str, version: str) -> dict[str, str]:
    """``version `GLIBCXX_3.4.30' not found`` with no library named before it: the C++ runtime the loader took lacks
    the version, but which copy it took the paste does not show. A conda environment ships its own libstdc++ in its
    lib/, which its interpreter loads before the system's and which can be the older of the two, so "the system's is
    too old" is not known here; say what is known and how to tell the copies apart. glibc itself (GLIBC_*) is always the
    system's: the general text stands."""
    if what not in ("GLIBCXX", "CXXABI"):
        return {}
    need = f"{what}_{version}"
    return {
        "_title": f"the libstdc++.so.6 that was loaded lacks {need} (the paste does not show which copy)",
        "_cause": (
            f"A compiled library needs {need} from the C++ runtime (libstdc++), and the copy of libstdc++.so.6 "
            f"the loader took does not have it. The paste does not name that copy: it is either the system's "
            f"(too old for a library built on a newer Linux or with a newer gcc) or, in a conda environment, the "
            f"environment's own lib/libstdc++.so.6, which its interpreter loads before the system's and which "
            f"can be older than the system's."
        ),
        "_fix": (
            f"The full error line names the copy (`PATH/libstdc++.so.6: version `{need}' not found`). Compare "
            f"the candidates: `strings $CONDA_PREFIX/lib/libstdc++.so.6 | grep {need}` and `strings "
            f"/usr/lib/x86_64-linux-gnu/libstdc++.so.6 | grep {need}` (/usr/lib64 on RHEL-like systems). Then "
            f"put a new enough one first: in a conda env `conda install -c conda-forge libstdcxx-ng`, or point "
            f"the env's lib/libstdc++.so.6 at the system's if that one has {need} (keep a copy); if neither has "
            f"it, install a build of the library made for this system. Unverified: msdoctor did not read the "
            f"files."
        ),
        "rule": "runtime-unnamed",
    }


# -- NumPy's C API could not be loaded --------------------------------------------------------------------------
#: what says NumPy 2 is the one installed: its own banner about modules built for 1.x, its 2.x-only symbol, a 2.x
#: version printed
_NUMPY2 = re.compile(r"compiled using NumPy 1\.x|NumPy 2\.\d|_ARRAY_API not found|numpy[ =_-]*2\.\d+\.\d+", re.I)
_MULTIARRAY = re.compile(r"numpy\.core\.multiarray failed to import", re.I)


def numpy_groups(line: str, context: Sequence[str]) -> dict[str, str]:
    """``numpy.core.multiarray failed to import`` is what a compiled module says when it cannot load NumPy's C API.
    With NumPy 2 it is the ABI break (its banner, ``_ARRAY_API not found`` or a 2.x version say so: the general text
    stands); without any sign of NumPy 2 in the paste the C API is missing for another reason (NumPy not installed in
    this environment, a broken or partial install, or a NumPy older than the module was built for), and the general
    "NumPy 2 is installed" is not known: say what is."""
    if not _MULTIARRAY.search(line) or any(_NUMPY2.search(x) for x in (line, *context)):
        return {}
    return {
        "_title": "a compiled module could not load NumPy's C API (numpy.core.multiarray)",
        "_cause": (
            "A compiled extension imports NumPy's C API when it loads, and that import failed. The paste shows "
            "no NumPy 2 (whose ABI break gives the same line with its own banner): NumPy is not installed in "
            "the environment that runs the code, its install is broken or partial, or it is another release "
            "than the one the module was built against."
        ),
        "_fix": (
            "`{python} -m pip show numpy` shows whether and which NumPy is installed in this environment: install "
            "it if missing (`{python} -m pip install numpy`; for MindSpore <= 2.9 and CANN's TBE stack "
            '`"numpy<2"`), or reinstall it (`{python} -m pip install --force-reinstall numpy==<version>`) '
            'when `{python} -c "import numpy"` fails too. Unverified: msdoctor did not read the environment.'
        ),
        "rule": "numpy-missing",
    }


# -- a compiled package built against another NumPy than the one installed ---------------------------------------
#: the module Cython was initialising: `File "gensim/_matutils.pyx", line 1, in init gensim._matutils` (CPython) or
#: `.../rolling.pyx in init qlib.data._libs.rolling()` (IPython)
_SIZES = re.compile(r"Expected (?P<hdr>\d+) from C header, got (?P<obj>\d+) from PyObject")
_CYTHON_INIT = re.compile(r"\bin init (?P<mod>[A-Za-z_][\w.]*)")


def numpy_size_groups(g: dict[str, str], before: Sequence[str], line: str, after: Sequence[str]) -> dict[str, str]:
    """Cython's ``numpy.ndarray size changed, may indicate binary incompatibility. Expected H from C header, got O
    from PyObject``: a compiled module checks at import the size of NumPy's C structs against the size the NumPy
    headers it was built with gave. Cython raises (ValueError) only when the installed NumPy's struct is smaller than
    the headers' (H > O): the module was built against a newer NumPy than the one installed. A larger installed struct
    (H < O) is only a RuntimeWarning that NumPy's maintainers call harmless (NumPy keeps its C API backward
    compatible: https://github.com/numpy/numpy/issues/15748): no claim."""
    sizes = next((m for x in (line, *after[:2]) if (m := _SIZES.search(x))), None)
    if sizes is None or g.get("exc") == "RuntimeWarning":
        return {}  # Cython before 0.29 printed no sizes: the direction is not known
    hdr, obj = int(sizes.group("hdr")), int(sizes.group("obj"))
    if hdr <= obj:
        return {}
    context = (*before, line, *after)
    init = [m.group("mod") for x in context for m in _CYTHON_INIT.finditer(x)]
    module = init[-1] if init else ""
    pkg = module.split(".")[0] if module else ""
    if not pkg:
        site = [p for p in frames(before) if re.search(r"[/\\](?:site|dist)-packages[/\\]", p)]
        if site:
            tail = re.split(r"[/\\](?:site|dist)-packages[/\\]", site[-1])[-1]
            pkg = re.split(r"[/\\]", tail)[0].removesuffix(".py")
    pkg = "" if pkg == "numpy" else pkg
    numpy = _dist_shown("numpy", context)
    have = f"NumPy {numpy}" if numpy else "the NumPy installed"
    what = f"{pkg}'s compiled module" + (f" {module}" if module else "") if pkg else "a compiled module"
    name = pkg or "<the package>"
    return {
        "_title": f"{what} was built against a newer NumPy than {have} (numpy.{g.get('type', 'ndarray')} "
        f"is {hdr} bytes in its headers, {obj} here)",
        "_cause": (
            f"When {what} loads, Cython compares the size of numpy.{g.get('type', 'ndarray')} in the NumPy headers "
            f"it was compiled with ({hdr} bytes) with the size in {have} ({obj} bytes). A smaller struct at run "
            f"time means the module was built against a newer NumPy than the one installed: {name} was installed "
            f"(or its wheel built) while a newer numpy was present, and numpy was then downgraded or pinned lower "
            f"(another package's requirement, a requirements file), or pip's build isolation compiled it against "
            f"the newest numpy. The two must be installed as a pair."
        ),
        "_fix": (
            f"Upgrade numpy to the release {name} was built for (`{{python}} -m pip install --upgrade numpy`, "
            f"within what the other packages allow: MindSpore <= 2.9 and CANN's TBE need numpy<2), or rebuild "
            f"{name} against the numpy installed: `{{python}} -m pip install --force-reinstall --no-cache-dir "
            f"--no-build-isolation --no-binary {name} {name}` (or uninstall both and install them in one pip "
            f"command; a stale wheel in ~/.cache/pip/wheels is rebuilt after `{{python}} -m pip cache purge`). "
            f"Unverified: `{{python}} -m pip show numpy {name}` shows the two versions; `{{python}} -m pip check` "
            f"names a requirement the downgrade broke."
        ),
        "rule": "numpy-built-newer",
    }


# -- a CUDA library of another CUDA release than the system's -----------------------------------------------------
#: CUDA toolkit libraries whose soname carries the CUDA release they belong to (libcudart.so.10.1, libcublas.so.11);
#: cuDNN's and the driver's sonames carry their own versions, not CUDA's
_CUDA_SONAME = re.compile(
    r"^(?P<name>libcudart|libcublas(?:Lt)?|libcusolver|libcusparse|libcufft|libcurand|libnvrtc)"
    r"\.so\.(?P<major>\d+)(?:\.(?P<minor>\d+))?"
)
#: the CUDA release the paste states for the system: `cuda12.1`, `CUDA 12.1`, `CUDA Version: 12.2` (nvidia-smi),
#: `/usr/local/cuda-12.1`
_STATED_CUDA = re.compile(r"\bcuda(?:[ _-]?version)?[ :=_-]*(?P<major>\d{2})\.(?P<minor>\d)\b", re.I)


def cuda_build_groups(lib: str, context: Sequence[str]) -> dict[str, str]:
    """A CUDA library that cannot be found (libcudart.so.10.1) while the paste states another CUDA release for the
    system (cuda12.1): what loads it was built for the library's CUDA, not for the one installed, so the answer is a
    build of that package for the installed CUDA (or that CUDA added), not "CUDA is missing". Empty when the paste
    states no CUDA release, several, or the same major as the library's."""
    m = _CUDA_SONAME.match(lib)
    if m is None:
        return {}
    stated = {
        (s.group("major"), s.group("minor")) for line in context for s in _STATED_CUDA.finditer(line.replace(lib, ""))
    }
    if len({major for major, _ in stated}) != 1:
        return {}
    major, minor = next(iter(stated))
    if major == m.group("major"):
        return {}
    belongs = m.group("major") + (f".{m.group('minor')}" if m.group("minor") else ".x")
    system = f"{major}.{minor}"
    return {
        "cause": (
            f"The paste shows CUDA {system} on this system, while {lib} belongs to CUDA {belongs}: the package "
            f"that loads it (a wheel or compiled extension) was built for CUDA {belongs}, not for the CUDA "
            f"installed, so the library it asks for is not there."
        ),
        "fix": (
            f"Install that package's build for CUDA {system} (its CUDA variant: a +cu{major}{minor} / -cu{major}x "
            f"wheel, or the extension rebuilt against this CUDA; the traceback's last frames name the package), "
            f"or install CUDA {belongs} as well and put its lib64 on LD_LIBRARY_PATH. Unverified: `nvcc --version` "
            f"and `nvidia-smi` show the installed CUDA."
        ),
    }


# -- who loads a missing Ascend library ---------------------------------------------------------------------------
#: torch_npu (PTA, the PyTorch Ascend adapter: https://github.com/Ascend/pytorch) names itself in its error codes
#: (`ERR00008 PTA resource not found`) and its paths
_TORCH_NPU = re.compile(r"\bERR\d{5} PTA\b|\btorch_npu\b|\btorch-npu\b", re.I)


def ascend_loader_groups(lib: str, context: Sequence[str]) -> dict[str, str]:
    """When the paste shows that torch_npu is the one loading a CANN library that is missing: say so, and that on a
    host with no Ascend NPU (no CANN) torch_npu cannot load at all, so code that runs there imports plain torch.
    Empty when the paste does not name torch_npu."""
    if not any(_TORCH_NPU.search(line) for line in context):
        return {}
    return {
        "cause": (
            f"The paste shows torch_npu (PTA, PyTorch's Ascend adapter) loading {lib}: torch_npu links against "
            f"CANN's runtime, so it loads only on an Ascend host with CANN installed and its set_env.sh sourced; "
            f"on a machine with no Ascend NPU it cannot be imported at all."
        ),
        "fix": (
            "On a host without Ascend NPUs, do not import torch_npu: use plain torch (code that only optionally "
            "uses an NPU imports torch_npu inside a guard). On an Ascend host:"
        ),
        "loader": "torch_npu",
    }


# -- a return code of CANN's runtime (compat_matrix/acl_codes.toml): its category, and what to collect ---------------
#: a CANN error code (EZ9999, EE1001, E39007): its own lines are the better lead, and its entry answers
_CANN_CODE = re.compile(r"(?<![\w.=])E[A-Z0-9]\d{4}(?:[:)\]]|\s+Inner Error)")


#: a sign that the paste is about CANN's runtime: an AscendCL or runtime call, an NPU, CANN, HCCL, torch_npu, MindSpore
_ASCEND_WORDS = re.compile(r"\bacl[A-Za-z]*\b|\brt[A-Z]\w+|\bnpu|\bascend|\bcann\b|\bhccl|torch_npu|mindspore", re.I)


def acl_code_groups(code: str, call: str, line: str, context: Sequence[str] = ()) -> dict[str, str]:
    """``NPU function error: CALL, error code is 507035`` (torch_npu) and the like: what CANN's runtime defines the code
    as, what that category rules in, and what to collect; it is not a diagnosis, and says so. Empty for a code the
    data does not list."""
    from msdoctor.explain.owners import acl_codes

    c = acl_codes().get(int(code)) if code.isdigit() else None
    if c is None or any(_CANN_CODE.search(x.replace("\\n", "\n")) for x in (line, *context)):
        return {}  # not a listed code; or CANN printed its own error code, whose entry and inner lines say more
    if not call and not any(_ASCEND_WORDS.search(x) for x in (line, *context)):
        return {}  # nothing in the paste is Ascend's: a code of that value from someone else
    by = f"{call} returned it" if call else "a call into CANN returned it"
    # CANN's Python components are built for NumPy 1.x (CANN 8.2's need numpy<2 when torch_npu sets compile options:
    # https://github.com/vllm-project/vllm-ascend/issues/2210); a NumPy 2 the paste shows installed is the first suspect
    numpy = _dist_shown("numpy", (line, *context))
    numpy2 = bool(numpy) and _vtuple(numpy) >= (2,)
    framework = "torch_npu" if "c10_npu" in line or "torch_npu" in line else "the framework"
    return {
        "_title": f"CANN runtime error {c.code}: {c.meaning} (a category, not a diagnosis)",
        "_cause": (
            f"{by}: CANN's runtime defines {c.code} as {c.meaning}. That is {c.what}. Only the category is "
            f"known from the code; {framework}'s message does not say which operator, rank or release is at "
            f"fault."
            + (
                f" The paste also shows numpy {numpy} installed, and CANN's Python components (te/tbe) are built "
                f"for NumPy 1.x: the likely cause when a call that compiles operators or sets compile options "
                f"fails."
                if numpy2
                else ""
            )
        ),
        "_fix": (
            (
                f"First, since the paste shows numpy {numpy}: CANN's Python components (te/tbe, which compile "
                f"operators and set compile options) are built for NumPy 1.x, so install `{{python}} -m pip install "
                f'"numpy<2"` and retry. '
                if numpy2
                else ""
            )
            + f"Collect before concluding: {c.collect}. Unverified: msdoctor read only the code ({c.source})."
        ),
        "rule": "acl-code",
        "acl_kind": c.kind,
    }


# -- device memory exhausted, read from the figures MindSpore prints ---------------------------------------------------
#: the figures of MindSpore's device memory messages (its Ascend memory adapter, ascend_memory_adapter.cc, and the
#: runtime's allocation failures, https://github.com/mindspore-ai/mindspore/tree/master/mindspore/ccsrc): the HBM size
#: and what MindSpore already uses (MiB), printed after `Out of Memory!!! Request memory size: NB, Memory Statistic:`
_HBM_SIZE = re.compile(r"Device HBM memory size: (?P<m>\d+)M", re.I)
_HBM_USED = re.compile(r"MindSpore Used memory size: (?P<m>\d+)M", re.I)
_MOC = re.compile(r"Device MOC total size:\s*(?P<total>\d+)\s*Device MOC free size:\s*(?P<free>\d+)", re.I)
_MIB = 1 << 20


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def _fits_fix(lever: str) -> str:
    return (
        f"{lever}Lower what one step needs: a smaller batch_size (micro_batch_size) or seq_length, recompute, more "
        "tensor/pipeline parallelism or optimizer sharding; `msdoctor memory --config {config}` estimates the need "
        "per device against the card. Where the card has more memory than MindSpore took, raise "
        '`mindspore.set_context(max_device_memory="<card size minus about 2>GB")`. Unverified: `npu-smi info` '
        "(nvidia-smi on a GPU) shows each device's memory and the processes on it."
    )


def device_memory_groups(g: dict[str, str], before: Sequence[str], line: str, after: Sequence[str]) -> dict[str, str]:
    """MindSpore's device memory messages, read from the byte figures they print: the old pool's ``Out of Memory!!!
    total[T] (dynamic[D] memory poll[P]) malloc[M] failed``, 2.x's ``Out of Memory!!! Request memory size: NB, Memory
    Statistic: Device HBM memory size: XM, MindSpore Used memory size: YM``, the runtime's ``Device(id:N) memory
    isn't enough and alloc failed, kernel name: K, alloc size: NB``, and the start-up check ``Malloc device memory
    failed, free memory size is less than half of total memory size ... Device MOC total size:T Device MOC free
    size:F`` (MindSpore's CANN error analysis: another process holds the card). What was asked is said against what
    was there, and what changes it."""
    near = "\n".join((line, *after[:8]))
    moc = _MOC.search(near)
    if "half" in g or moc:
        figures = ""
        if moc:
            total, free = int(moc.group("total")), int(moc.group("free"))
            figures = (
                f" The card has {_gib(total)} and {_gib(free)} of it was free when MindSpore started "
                f"({100 * free // max(total, 1)}%)."
            )
        return {
            "_title": "another process holds most of this NPU's memory: MindSpore found less than half of it free at "
            "start-up",
            "_cause": (
                "MindSpore checks the device's free memory when it opens the card and stops when less than half is "
                f"free.{figures} The rest is held by another process on the same card: a previous run that is still "
                "alive, another job or container, or this job's own extra processes: several ranks given one "
                "device_id, or dataset workers started with python_multiprocessing (multiprocessing) whose operations "
                "run on Ascend (DVPP), each opening the card."
            ),
            "_fix": (
                "Find and stop the process that holds the card: `npu-smi info` lists the processes on each NPU "
                "(`ps -ef | grep python` on the host), wait a few seconds after it exits, or use a free card "
                "(device_id, ASCEND_RT_VISIBLE_DEVICES). Give every rank its own device_id; run Ascend-side dataset "
                "augmentation with python_multiprocessing=False (or on the CPU). Unverified: `npu-smi info` before "
                "the job starts shows whether the card is free."
            ),
            "rule": "device-memory-held",
        }
    ask = int(g.get("ask") or g.get("ask2") or g.get("ask3") or 0)
    if not ask:
        return {}
    asked = f"{ask} bytes ({_gib(ask)})"
    if g.get("pool"):
        total = int(g.get("total") or 0)
        pool = f"MindSpore's device memory pool holds {total} bytes ({_gib(total)})" if total else "the pool"
        over = ask > total > 0
        cause = f"A device allocation of {asked} failed: {pool}" + (
            ", so this one request is larger than the whole pool. Either one step's tensors are that large (the "
            "batch_size, or a parameter or activation of abnormal shape: check the shapes the model builds), or "
            "the pool is capped below the card (max_device_memory)."
            if over
            else ", and too little of it is left: the step's tensors (model states, the activations of a batch, "
            "operator workspace) exceed the device memory."
        )
    elif g.get("ask2"):
        hbm = next((int(m.group("m")) for x in after[:6] if (m := _HBM_SIZE.search(x))), 0)
        used = next((int(m.group("m")) for x in after[:6] if (m := _HBM_USED.search(x))), 0)
        shown = (
            f" The card has {_gib(hbm * _MIB)} of HBM and MindSpore already uses {_gib(used * _MIB)} of it"
            + (f", {_gib(max(hbm - used, 0) * _MIB)} left." if used else ".")
            if hbm
            else ""
        )
        cause = (
            f"MindSpore asked the device for {asked} more and the card cannot give it.{shown} The step's tensors "
            f"(model states, the activations of a batch, operator workspace) exceed the device memory."
        )
    else:
        kernel = g.get("kernel", "")
        cause = (
            f"The device could not give {asked}"
            + (f" for {kernel}" if kernel else "")
            + ": MindSpore's memory pool on the card is used up by the step's tensors (model states, the "
            "activations of a batch, operator workspace), or another process holds part of the card."
        )
    return {
        "_title": f"the device (NPU/GPU) ran out of memory: {_gib(ask)} was asked for and is not there",
        "_cause": cause + " This is the device's memory (HBM), not host RAM.",
        "_fix": _fits_fix(""),
        "rule": "device-memory-exhausted",
    }


# -- the device's streams used up --------------------------------------------------------------------------------------
#: graph capture on the NPU: torch_npu's NPUGraph (aclmdlRICaptureBegin, CANN's model-runtime capture), vLLM-Ascend's
#: ACL graphs (https://docs.vllm.ai/projects/ascend/en/latest/user_guide/feature_guide/graph_mode.html)
_CAPTURE = re.compile(
    r"aclmdlRICapture|\bNPUGraph\b|capture_begin|BeginCapture|\bcapture[_ ]stream|aclgraph|cudagraph", re.I
)


def stream_limit_groups(g: dict[str, str], before: Sequence[str], line: str, after: Sequence[str]) -> dict[str, str]:
    """The device's streams used up: MindSpore's ``Stream isn't enough`` (its stream assignment for a compiled graph)
    and CANN's ``Insufficient_Stream_Resources(EL0009)`` / ``Stream resources are insufficient`` (ACL runtime code
    207008). A stream is a hardware queue of the device; the driver gives each device a fixed number. What opened them
    is read from the lines around: graph capture (every captured graph keeps its own streams and events) or a compiled
    graph (parallel tasks, communication operators, control flow)."""
    capture = any(_CAPTURE.search(x) for x in (*before[-12:], line, *after[:8]))
    common = (
        " Another process on the same device holds streams too (CANN's own Solution line: close applications not in "
        "use); and the number a device gives depends on the driver (HDK) and CANN release."
    )
    if capture:
        return {
            "_title": "graph capture used up the NPU's streams (stream resources are insufficient, EL0009)",
            "_cause": (
                "The device ran out of streams while capturing a graph: each captured graph (one per capture size, "
                "and one per piece between the operators that cannot be captured in PIECEWISE mode) keeps its own "
                "streams and events, so many capture sizes, many layers or tensor-parallel communication add up past "
                "what the driver gives a device." + common
            ),
            "_fix": (
                "Capture fewer graphs: fewer cudagraph_capture_sizes or a lower max_cudagraph_capture_size (vLLM's "
                "compilation config), FULL_DECODE_ONLY where decode is uniform, or run eager (enforce_eager / "
                "--enforce-eager) to confirm that capture is the cause; a newer Ascend HDK driver and CANN raise the "
                "limit. Unverified: `npu-smi info` shows other processes on the device; the plog names the stream "
                "that failed."
            ),
            "rule": "streams-exhausted-capture",
        }
    return {
        "_title": "the compiled graph needs more NPU streams than the device gives (Stream isn't enough)",
        "_cause": (
            "The device ran out of streams: a stream is a hardware task queue, and the driver gives each device a "
            "fixed number. MindSpore's graph compiler opens streams for tasks that run in parallel, for communication "
            "operators (collectives run on streams of their own) and for control flow (the branches and loops of "
            "if/while in a graph-mode construct), so a large network, many communication operators or many "
            "conditional statements need more than there are." + common
        ),
        "_fix": (
            "Make the graph need fewer streams: fewer communication operators (fuse them: comm_fusion or "
            "all_reduce_fusion_config in set_auto_parallel_context), fewer conditional control statements in "
            "construct() (move conditions that do not depend on tensors out of the graph), or a smaller graph per "
            "device (more pipeline stages, fewer layers); check the driver (HDK) and CANN releases against the "
            "MindSpore release. Unverified: `npu-smi info` shows other processes on the device; the INFO log of "
            "stream assignment (GLOG_v=1) prints the streams the graph asks for."
        ),
        "rule": "streams-exhausted",
    }
