"""What the rules need from outside the config file: datasets on disk, free space, devices, throughput.

Everything here reads (never writes) and is bounded: at most :data:`MAX_FILES` files are
listed per dataset path, a MindRecord file's header is read (its length is in its first 8
bytes) or its ``.db`` index is counted, a Megatron ``.idx`` header is 34 bytes.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import re
import shutil
import sqlite3
import struct
from pathlib import Path
from typing import Any, Optional

from msdoctor.inputs import open_bounded
from msdoctor.redact import URL_RE, mask_userinfo

from msdoctor.domain.run_plan import Resolved, Val, is_placeholder
from .common import CheckpointSize, DataFacts, Fact

MAX_FILES = 100_000
MAX_HEADER = 64 << 20
MINDRECORD_RE = re.compile(r"mindrecord\d*$")  # mindformers/dataset/causal_language_model_dataset.py
#: Megatron-LM megatron/core/datasets/indexed_dataset.py: _INDEX_HEADER and DType codes
MEGATRON_MAGIC = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 8, 7: 4, 8: 2}


def resolve_path(raw: str, base: Path) -> Path:
    p = Path(os.path.expanduser(str(raw)))
    return p if p.is_absolute() else base / p


# -- MindRecord ------------------------------------------------------------------------
def mindrecord_rows(path: Path) -> tuple[Optional[int], str]:
    """Rows of one MindRecord shard: its SQLite index (``<file>.db``, table INDEXES: one row per record)
    or, without it, the BLOB/RAW pages' row ranges in the file's JSON header."""
    db = Path(str(path) + ".db")
    if db.is_file():
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                n = con.execute("SELECT COUNT(*) FROM INDEXES").fetchone()[0]
            finally:
                con.close()
            return int(n), "rows in its .db index"
        except sqlite3.Error:
            pass
    try:
        with open_bounded(path) as f:
            size = struct.unpack("<Q", f.read(8))[0]
            if not 0 < size <= MAX_HEADER:
                return None, "not a MindRecord header"
            header = json.loads(f.read(size))
    except (OSError, struct.error, ValueError, UnicodeDecodeError):
        return None, "header unreadable"
    pages = header.get("page") if isinstance(header, dict) else None
    if not isinstance(pages, list):
        return None, "no page table in the header"
    for kind in ("BLOB_DATA", "RAW_DATA"):
        rows = [p for p in pages if isinstance(p, dict) and p.get("page_type") == kind]
        if rows:
            return sum(int(p.get("end_row_id", 0)) - int(p.get("start_row_id", 0)) for p in rows), "rows in its header"
    return 0, "rows in its header"


def _shard_group(path: Path) -> list[Path]:
    """All shards of the set a MindRecord file belongs to (MindDataset on one file reads them all)."""
    try:
        with open_bounded(path) as f:
            size = struct.unpack("<Q", f.read(8))[0]
            if 0 < size <= MAX_HEADER:
                names = json.loads(f.read(size)).get("shard_addresses") or []
                found = [path.parent / Path(str(n)).name for n in names]
                if found and all(p.is_file() for p in found):
                    return found
    except (OSError, struct.error, ValueError, UnicodeDecodeError, AttributeError):
        pass
    return [path]


def inspect_mindrecord(val: Val, base: Path) -> DataFacts:
    p = resolve_path(val.value, base)
    d = DataFacts(val, str(p), kind="mindrecord")
    if not p.exists():
        d.exists = False
        d.note = "MindFormers raises FileNotFoundError when it builds the dataset"
        return d
    if p.is_dir():
        files = []
        for root, _, names in os.walk(p):
            files += [Path(root) / n for n in names if MINDRECORD_RE.search(n) or n.endswith(".tfrecord")]
            if len(files) > MAX_FILES:
                break
        if not os.access(p, os.R_OK | os.X_OK):
            d.readable = False
            d.note = "the directory cannot be listed"
            return d
        if not files:
            d.exists = False
            d.note = (
                "a directory with no *.mindrecord* / *.tfrecord file: MindFormers raises 'No dataset file is found'"
            )
            return d
    else:
        files = _shard_group(p)
    unreadable = [f for f in files if not os.access(f, os.R_OK)]
    if unreadable:
        d.readable = False
        d.note = f"{len(unreadable)} of {len(files)} files are not readable, e.g. {unreadable[0]}"
        return d
    d.files = len(files)
    total, hows = 0, set()
    for f in files[:MAX_FILES]:
        if f.name.endswith(".tfrecord"):
            d.note = f"{len(files)} files, not counted (TFRecord)"
            return d
        n, how = mindrecord_rows(f)
        if n is None:
            d.note = f"{len(files)} files; {f.name}: {how}"
            return d
        total += n
        hows.add(how)
    d.sequences = total
    d.note = f"{total:,} records in {len(files)} MindRecord file(s) ({', '.join(sorted(hows))})"
    return d


# -- Megatron indexed dataset -------------------------------------------------------------
def inspect_megatron(val: Val, base: Path) -> DataFacts:
    prefix = resolve_path(val.value, base)
    d = DataFacts(val, str(prefix), kind="megatron")
    idx, bin_ = Path(str(prefix) + ".idx"), Path(str(prefix) + ".bin")
    missing = [str(x) for x in (idx, bin_) if not x.is_file()]
    if missing:
        d.exists = False
        d.note = f"missing {', '.join(missing)} (a Megatron prefix names PREFIX.bin and PREFIX.idx)"
        return d
    if not (os.access(idx, os.R_OK) and os.access(bin_, os.R_OK)):
        d.readable = False
        d.note = "PREFIX.bin / PREFIX.idx not readable"
        return d
    d.files = 2
    try:
        with open_bounded(idx) as f:
            head = f.read(34)
        if head[:9] != MEGATRON_MAGIC:
            d.note = "the .idx is not a Megatron MMIDIDX index"
            return d
        code = head[17]
        seqs = struct.unpack("<Q", head[18:26])[0]
    except (OSError, IndexError, struct.error):
        d.note = "the .idx header is unreadable"
        return d
    width = MEGATRON_DTYPE_BYTES.get(code)
    if width:
        d.tokens = bin_.stat().st_size // width
    d.note = f"{seqs:,} documents" + (f", {d.tokens:,} tokens (.bin bytes / {width})" if width else "")
    return d


# -- Hugging Face datasets (MindFormers HFDataLoader) ---------------------------------------------
HUB_NAME_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def inspect_hf_datasets(val: Val, base: Path) -> DataFacts:
    """HFDataLoader passes ``path`` to ``datasets.load_dataset``: a local file / directory, a builder name
    ("json"), or a Hub dataset "org/name" that is downloaded at start (not checked here: no network)."""
    raw = str(val.value)
    p = resolve_path(raw, base)
    d = DataFacts(val, str(p), kind="hf-datasets")
    if p.exists():
        d.readable = os.access(p, os.R_OK)
        d.note = "a local path for datasets.load_dataset (records not counted)"
        return d
    if HUB_NAME_RE.match(raw) or "/" not in raw:
        d.resolved = raw
        d.note = (
            f"not a local path: datasets.load_dataset reads {raw!r} as a Hugging Face Hub dataset or a "
            "builder name (downloaded when the job starts; not checked here)"
        )
        return d
    d.exists = False
    d.note = "datasets.load_dataset fails on a missing local path"
    return d


# -- msdoctor's text globs ---------------------------------------------------------------
def inspect_text(vals: list, base: Path, max_files: int, tokenizer: Optional[str]) -> list[DataFacts]:
    """Each glob: the files it matches (as training/data.py resolve_files: recursive, de-duplicated, capped)."""
    out = []
    seen: set = set()
    budget = max_files
    for val in vals:
        pattern = str(resolve_path(val.value, base))
        d = DataFacts(val, pattern, kind="text-glob")
        files = [f for f in sorted(glob.glob(pattern, recursive=True))[:MAX_FILES] if os.path.isfile(f)]
        if not files:
            d.exists = False
            d.note = "training/data.py stops with 'no files match' before the first step"
            out.append(d)
            continue
        bad = [f for f in files if not os.access(f, os.R_OK)]
        if bad:
            d.readable = False
            d.note = f"{len(bad)} of {len(files)} files are not readable, e.g. {bad[0]}"
            out.append(d)
            continue
        fresh = [f for f in files if os.path.realpath(f) not in seen][: max(0, budget)]
        seen.update(os.path.realpath(f) for f in fresh)
        budget -= len(fresh)
        size = sum(os.path.getsize(f) for f in fresh)
        d.files = len(fresh)
        d.tokens = size
        d.note = f"{len(fresh)} files, {size:,} bytes" + (
            " = tokens (byte tokenizer)" if tokenizer in (None, "byte") else " (an upper bound of the tokens)"
        )
        out.append(d)
    return out


def inspect_data(res: Resolved, base: Path, max_files: int = 400) -> list[DataFacts]:
    out = []
    if res.kind == "msdoctor":
        text = [v for v in res.data_paths if not is_placeholder(v.value)]
        out += [
            DataFacts(v, str(v.value), placeholder=True, kind="text-glob")
            for v in res.data_paths
            if is_placeholder(v.value)
        ]
        return out + inspect_text(text, base, max_files, res.data_tokenizer)
    for v in res.data_paths:
        if is_placeholder(v.value):
            out.append(DataFacts(v, str(v.value), placeholder=True, kind=res.data_kind))
        elif URL_RE.match(str(v.value)):  # a remote dataset: not a path under base; its credentials masked
            out.append(
                DataFacts(
                    v,
                    mask_userinfo(str(v.value)),
                    kind=res.data_kind,
                    readable=True,
                    note="a URL, not a local path: not checked (msdoctor does not reach the network)",
                )
            )
        elif res.data_kind == "megatron":
            out.append(inspect_megatron(v, base))
        elif res.data_kind == "hf-datasets":
            out.append(inspect_hf_datasets(v, base))
        else:
            out.append(inspect_mindrecord(v, base))
    return out


# -- disk -----------------------------------------------------------------------------------
def nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def writable(path: Path) -> bool:
    """Whether this user can create path (or write into it): the nearest existing directory is writable."""
    probe = nearest_existing(path)
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def free_space(path: Path) -> tuple[Optional[Fact], int]:
    """(bytes free on the file system that will hold path, bytes of files already under path)."""
    probe = nearest_existing(path)
    try:
        free = shutil.disk_usage(probe).free
    except OSError:
        return None, 0
    existing = 0
    if path.is_dir():
        count = 0
        for root, _, names in os.walk(path):
            for n in names:
                count += 1
                if count > MAX_FILES:
                    break
                try:
                    existing += os.path.getsize(os.path.join(root, n))
                except OSError:
                    pass
    shown = str(probe) + ("" if probe == path else f" (the nearest existing parent of {path})")
    return Fact(free, shown), existing


def checkpoint_size(res: Resolved, source: Any, ranks_here: int) -> CheckpointSize:
    """One checkpoint's bytes on this node's disk, from the model shape and optimizer (msdoctor.memory).

    msdoctor's trainer: rank 0 writes the whole model in its weights' dtype plus the optimizer
    states (training/resume.py). MindFormers: every rank writes its own shard (CheckpointMonitor,
    ``checkpoint/rank_N``): the weights and optimizer states on that device as msdoctor.memory
    estimates them (parallel-optimizer shards included), times the ranks of this node; with
    ``save_network_params`` the weights once more.
    """
    from msdoctor.memory import estimate
    from msdoctor.memory.spec import Setup

    keys = ("parameters", "master_weights", "optimizer_states")
    if res.kind == "msdoctor":
        s = source.setup
        whole = Setup(
            seq_length=s.seq_length,
            param_dtype=s.param_dtype,
            precision=s.precision,
            optimizer=s.optimizer,
            optimizer_state_dtype=s.optimizer_state_dtype,
            framework=s.framework,
        )
        est = estimate(source.model, whole)
        n = sum(est.bytes_of(k) for k in keys)
        return CheckpointSize(n, f"{est.params_total:,} parameters: weights + optimizer states, written by rank 0")
    est = estimate(source.model, source.setup)
    per = sum(est.bytes_of(k) for k in keys)
    weights = est.bytes_of("parameters")
    n = per * ranks_here
    why = (
        f"{ranks_here} rank(s) on this node x {per / 2**30:.2f} GiB each (weights + optimizer states of "
        f"{est.params_on_device:,} parameters on the most loaded device)"
    )
    if res.ckpt_dedup:
        dp = int(res.data_parallel.value)
        n //= max(1, dp)
        why += f", / {dp} with remove_redundancy"
    if res.ckpt_network_copy:
        n += weights * ranks_here
        why += "; + the weights again (save_network_params)"
    return CheckpointSize(n, why)


# -- cluster layout ---------------------------------------------------------------------------
def cluster_layout(environ: Any) -> tuple[Optional[Fact], Optional[Fact]]:
    """(devices in the job, devices per node) from msrun's variables or the HCCL rank table, when set.

    msrun exports MS_WORKER_NUM (all workers) and MS_LOCAL_WORKER (this node's); RANK_SIZE is the
    rank-table launch's; a rank table (RANK_TABLE_FILE, HCCL JSON: server_list[].device[]) lists every
    server's devices (https://www.mindspore.cn/tutorials/en/r2.7.2/_sources/parallel/rank_table.md.txt).
    """
    total = per_node = None
    for name in ("MS_WORKER_NUM", "RANK_SIZE"):
        raw = str(environ.get(name) or "").strip()
        if raw.isdigit() and int(raw) > 0:
            total = Fact(int(raw), f"{name}={raw} in the environment")
            break
    raw = str(environ.get("MS_LOCAL_WORKER") or "").strip()
    if raw.isdigit() and int(raw) > 0:
        per_node = Fact(int(raw), f"MS_LOCAL_WORKER={raw} in the environment")
    table = environ.get("RANK_TABLE_FILE")
    if table:
        try:
            data = json.loads(Path(table).read_text(encoding="utf-8"))
            servers = [s for s in data.get("server_list") or [] if isinstance(s, dict)]
            counts = [len(s.get("device") or []) for s in servers]
        except (OSError, ValueError, AttributeError, UnicodeDecodeError):
            counts = []  # the device-target check reports an unreadable rank table
        if counts and all(counts):
            total = total or Fact(sum(counts), f"rank table {table}: {len(counts)} servers, {sum(counts)} devices")
            per_node = per_node or Fact(max(counts), f"rank table {table}: up to {max(counts)} devices per server")
    return total, per_node


# -- throughput -----------------------------------------------------------------------------
def measured_step_time(res: Resolved, base: Path) -> Optional[Fact]:
    """Seconds per optimizer step from an earlier run in the output directory, if there is one."""
    if res.kind == "msdoctor":
        metrics = resolve_path(str(Path(res.ckpt_dir.value).parent / "metrics.csv"), base)
        try:
            with open(metrics, newline="") as f:
                rows = list(csv.DictReader(f))[-20:]
            times = [float(r["step_time"]) for r in rows if r.get("step_time")]
        except (OSError, ValueError, KeyError, csv.Error):
            return None
        if times:
            return Fact(sum(times) / len(times), f"measured: mean step_time of the last {len(times)} rows of {metrics}")
        return None
    # MindFormers' logger writes rank_N/info.log under LOG_MF_PATH, default ./output/log, and run_mindformer.py
    # points the output root at output_dir (mindformers/tools/logger.py, tools/utils.py get_log_path)
    out_dir = resolve_path(str(Path(str(res.ckpt_dir.value)).parent), base)
    tail: list = []
    for log in (out_dir / "log" / "rank_0" / "info.log", base / "output" / "log" / "rank_0" / "info.log"):
        try:
            with open(log, errors="replace") as f:
                tail = f.readlines()[-2000:]
            break
        except OSError:
            continue
    if not tail:
        return None
    times = [int(m.group(1)) / 1000 for line in tail if (m := re.search(r"per_step_time: (\d+)ms", line))]
    if times:
        times = times[-20:]
        return Fact(sum(times) / len(times), f"measured: mean per_step_time of the last {len(times)} steps in {log}")
    return None
