"""Jupyter kernelspecs the target's Jupyter (and the user's data dirs) can see, and project notebooks.

The search path is the target interpreter's own (``interp_probe.py`` with
jupyter=True: jupyter_core's ``jupyter_path("kernels")`` when the target has
jupyter_core, else its documented rules), so JUPYTER_PATH, JUPYTER_DATA_DIR,
the user dir, the env's ``share/jupyter`` and the system dirs come out in the
order that Jupyter itself uses. Kernel directories are then read here the way
jupyter_client's KernelSpecManager reads them (``kernelspec.py``:
``_list_kernels_in`` lowercases the directory name; the first directory on the
path wins). No Jupyter package is imported into msdoctor's process.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from msdoctor.context import Context, FactSpec, FactUnavailable
from msdoctor.facts.interpreters import INTERPRETERS, target_python, which

#: jupyter_client/kernelspec.py: valid kernel names
KERNEL_NAME_RE = re.compile(r"^[a-z0-9._\-]+$", re.IGNORECASE)
#: launchers that start the real interpreter themselves: argv[0] says nothing about it
WRAPPERS = frozenset(
    {
        "conda",
        "mamba",
        "micromamba",
        "env",
        "sh",
        "bash",
        "zsh",
        "srun",
        "docker",
        "podman",
        "singularity",
        "apptainer",
        "pixi",
        "uv",
        "poetry",
        "pipenv",
        "hatch",
        "sudo",
    }
)
MAX_NOTEBOOKS = 200
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "build", "dist"})
_IMPORTS_MS = re.compile(r"^\s*(?:import|from)\s+mindspore\b", re.MULTILINE)


@dataclass
class KernelSpec:
    """One kernel directory (``<dir>/<name>/kernel.json``)."""

    name: str
    resource_dir: str
    search_dir: str
    order: int
    argv: Optional[list] = None
    display_name: Optional[str] = None
    language: Optional[str] = None
    error: Optional[str] = None
    error_line: Optional[int] = None
    argv_line: Optional[int] = None
    shadowed_by: Optional[str] = None
    valid_name: bool = True

    @property
    def kernel_json(self) -> str:
        return os.path.join(self.resource_dir, "kernel.json")

    @property
    def is_python(self) -> bool:
        if (self.language or "").lower() == "python":
            return True
        return any("ipykernel" in str(a) for a in (self.argv or []))

    @property
    def label(self) -> str:
        shown = f" ({self.display_name})" if self.display_name and self.display_name != self.name else ""
        return f"kernel '{self.name}'{shown}"


@dataclass
class NotebookRef:
    """A notebook in the project and the kernel its metadata asks for."""

    path: str
    kernel_name: Optional[str] = None
    kernel_display: Optional[str] = None
    imports_mindspore: bool = False
    error: Optional[str] = None
    error_line: Optional[int] = None


@dataclass
class JupyterFacts:
    """The kernel search path of the target's Jupyter and every kernel on it."""

    python: str
    source: str
    data_dir: str
    kernel_dirs: list
    sys_prefix_kernels: str
    version: tuple = ()
    kernels: list = field(default_factory=list)
    notebooks: list = field(default_factory=list)

    def visible(self) -> list:
        """The kernels Jupyter lists: one per name, the first on the search path."""
        return [k for k in self.kernels if k.shadowed_by is None]

    def find(self, name: str) -> Optional[KernelSpec]:
        for k in self.visible():
            if k.name == name.lower():
                return k
        return None

    def bare_python_names(self) -> set:
        """argv[0] values jupyter_client replaces by the interpreter Jupyter runs in.

        jupyter_client/manager.py format_kernel_cmd: "python", "python<major>",
        "python<major>.<minor>" of the Jupyter process become its sys.executable.
        """
        names = {"python"}
        if len(self.version) >= 2:
            names.add(f"python{self.version[0]}")
            names.add(f"python{self.version[0]}.{self.version[1]}")
        return names


def kernel_interpreter(spec: KernelSpec, facts: JupyterFacts, environ: Mapping[str, str]) -> tuple:
    """(interpreter path or None, how it was found) for a Python kernel's argv[0].

    how: "absolute", "jupyter" (a bare python name: the interpreter Jupyter runs in,
    assumed to be the target's, whose search path this is), "PATH", "wrapper",
    "relative", "missing" (not on PATH).
    """
    if not spec.argv:
        return None, "missing"
    argv0 = str(spec.argv[0])
    if os.path.isabs(argv0):
        return argv0, "absolute"
    if argv0 in facts.bare_python_names():
        return facts.python, "jupyter"
    if os.sep in argv0 or (os.altsep and os.altsep in argv0):
        return None, "relative"
    if os.path.basename(argv0) in WRAPPERS:
        return None, "wrapper"
    found = which(argv0, environ)
    return (found, "PATH") if found else (None, "missing")


def read_kernel_dir(resource_dir: str, name: str, search_dir: str, order: int) -> KernelSpec:
    """Parse one kernel.json; a broken file becomes a KernelSpec with ``error`` and its line."""
    spec = KernelSpec(
        name=name.lower(),
        resource_dir=resource_dir,
        search_dir=search_dir,
        order=order,
        valid_name=bool(KERNEL_NAME_RE.match(name)),
    )
    path = os.path.join(resource_dir, "kernel.json")
    from msdoctor.errors import UserError
    from msdoctor.inputs import MiB, read_text

    try:
        text = read_text(path, cap=MiB, what="kernel.json")  # regular files only: a FIFO cannot hang the check
    except UserError as exc:
        spec.error = f"cannot read {exc.message}"
        return spec
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        spec.error = f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        spec.error_line = exc.lineno
        return spec
    if not isinstance(data, dict):
        spec.error, spec.error_line = "kernel.json must hold a JSON object", 1
        return spec
    argv = data.get("argv")
    spec.display_name = data.get("display_name") if isinstance(data.get("display_name"), str) else None
    spec.language = data.get("language") if isinstance(data.get("language"), str) else None
    spec.argv_line = _line_of(text, "argv")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        spec.error = '"argv" must be a non-empty list of strings (the command that starts the kernel)'
        spec.error_line = spec.argv_line or 1
        return spec
    spec.argv = argv
    return spec


def _line_of(text: str, key: str) -> Optional[int]:
    m = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def scan_kernels(kernel_dirs: list) -> list:
    """Every kernel directory on the search path, in order, with shadowing marked."""
    out: list = []
    first: dict = {}
    for order, kdir in enumerate(kernel_dirs):
        try:
            entries = sorted(os.listdir(kdir))
        except OSError:
            continue
        for entry in entries:
            resource_dir = os.path.join(kdir, entry)
            if not (os.path.isdir(resource_dir) and os.path.isfile(os.path.join(resource_dir, "kernel.json"))):
                continue
            spec = read_kernel_dir(resource_dir, entry, kdir, order)
            if spec.name in first:
                spec.shadowed_by = first[spec.name]
            else:
                first[spec.name] = resource_dir
            out.append(spec)
    return out


def _skip_dir(path: Path) -> bool:
    name = path.name
    if name.startswith(".") or name in SKIP_DIRS:
        return True
    # an environment inside the project (venv, conda) holds other people's notebooks
    return (path / "pyvenv.cfg").exists() or (path / "conda-meta").is_dir()


def find_notebooks(project: Path, limit: int = MAX_NOTEBOOKS, max_depth: int = 4) -> list:
    """Paths of ``*.ipynb`` files in the project (no hidden dirs, no environments)."""
    found: list = []

    def walk(d: Path, depth: int) -> None:
        try:
            entries = sorted(d.iterdir())
        except OSError:
            return
        for p in entries:
            if len(found) >= limit:
                return
            if p.is_dir():
                if depth < max_depth and not _skip_dir(p) and ".ipynb_checkpoints" != p.name:
                    walk(p, depth + 1)
            elif p.suffix == ".ipynb" and p.is_file():
                found.append(p)

    if project.is_dir():
        walk(project, 0)
    return found


def read_notebook(path: Path) -> NotebookRef:
    """The kernel a notebook asks for (metadata.kernelspec) and whether it imports mindspore."""
    ref = NotebookRef(str(path))
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            ref.error = "larger than 20 MiB: not read"
            return ref
        from msdoctor.errors import UserError
        from msdoctor.inputs import read_text

        try:
            data = json.loads(read_text(path, cap=MAX_NOTEBOOK_BYTES, what="notebook"))
        except UserError as exc:
            ref.error = exc.message
            return ref
    except json.JSONDecodeError as exc:
        ref.error, ref.error_line = f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno
        return ref
    except (OSError, UnicodeDecodeError) as exc:
        ref.error = f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        return ref
    meta = data.get("metadata") if isinstance(data, dict) else None
    ks = meta.get("kernelspec") if isinstance(meta, dict) else None
    if isinstance(ks, dict):
        ref.kernel_name = ks.get("name") if isinstance(ks.get("name"), str) else None
        ref.kernel_display = ks.get("display_name") if isinstance(ks.get("display_name"), str) else None
    for cell in (data.get("cells") or []) if isinstance(data, dict) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source")
            src = "".join(src) if isinstance(src, list) else (src if isinstance(src, str) else "")
            if _IMPORTS_MS.search(src):
                ref.imports_mindspore = True
                break
    return ref


def _compute(ctx: Context) -> JupyterFacts:
    python = target_python(ctx)
    info = ctx.get(INTERPRETERS).get(python, jupyter=True)
    if not info.ok or not info.jupyter:
        raise FactUnavailable(
            f"could not ask {python} for its Jupyter kernel search path: {info.error}",
            "make sure --python names a working interpreter",
        )
    j = info.jupyter
    dirs = [str(d) for d in j.get("kernel_dirs") or []]
    facts = JupyterFacts(
        python=info.executable or python,
        source=str(j.get("source")),
        data_dir=str(j.get("data_dir")),
        kernel_dirs=dirs,
        sys_prefix_kernels=str(j.get("sys_prefix_kernels")),
        version=info.version,
        kernels=scan_kernels(dirs),
    )
    # the interpreter as the user named it (a venv's bin/python, not the base it links to)
    facts.python = python
    facts.notebooks = [read_notebook(p) for p in find_notebooks(ctx.project_dir)]
    return facts


#: Kernelspecs on the target's Jupyter search path, plus the project's notebooks.
KERNELSPECS: FactSpec[JupyterFacts] = FactSpec(
    "jupyter-kernelspecs", _compute, slow=True, description="Jupyter kernelspecs and notebooks"
)


def user_kernels_dir(facts: JupyterFacts) -> str:
    """Where ``ipykernel install --user`` writes (jupyter_data_dir()/kernels)."""
    return os.path.join(facts.data_dir, "kernels")


def evidence_of(spec: KernelSpec) -> dict[str, Any]:
    return {
        "kernel": spec.name,
        "kernel_json": spec.kernel_json,
        "argv": spec.argv,
        "display_name": spec.display_name,
        "search_dir": spec.search_dir,
    }
