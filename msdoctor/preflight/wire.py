"""How the ranks' documents reach the assemblers: a two-level gather whose cost per rank does not grow with the job.

A rank's document is split (:func:`split`) into a small per-rank part (rank, host, init time, GFLOP/s, the
per-node variables such as RANK_ID) and content-addressed blobs: the environment (interpreter, packages,
MS_*/HCCL_* variables, timeouts, collective outcomes) and, on a node's first rank, the node's
``msdoctor check --quick`` report. Identical blobs travel once, by digest.

The protocol (:func:`gather`), every rank running the same sequence of steps:

1. world: each rank's node key (8 bytes), so every rank knows the node groups and their leaders
   (the lowest rank of each node);
2. node group: each rank's blob digests; then each rank's part plus the blobs no lower rank of the node has;
3. leaders group: each leader's distinct digests; then each leader's node parts plus the blobs no earlier leader
   has. Every leader (rank 0 is one) now holds the job's parts and each distinct blob once, and assembles;
4. node group: the leader's verdict (:func:`share_verdict`) to the node's other ranks.

A non-leader sends its part once and receives its node's (a fixed number of ranks): its memory does not depend
on the world size. The collective is an interface (:class:`Collective`, an ``allgather`` of byte strings within a
group): :class:`MindSporeCollective` in a real rank, :class:`SimCollective` in the benchmark and the unit tests;
:func:`gather` and the assembly are the same code in both.

No pickle: ``mindspore.mint.distributed.all_gather_object`` unpickles what other ranks send. ``ops.AllGather`` on
int32 runs on mccl, HCCL and NCCL (int8 does not on mccl: "Kernel select failed", observed on MindSpore 2.7.0), so
the bytes travel in a numpy uint8 buffer viewed as int32 words: lengths first, then the bytes padded to the longest
member, in rounds whose receive buffer stays under :data:`ROUND_BUDGET`.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any, Generator, Iterable, Optional, Protocol, Sequence

#: a rank's part or blob larger than this is refused before it is sent (a runaway report, not a preflight)
MAX_BYTES = 64 << 20

#: bytes of one round's receive buffer (group size x chunk) in the real collective
ROUND_BUDGET = 16 << 20

DIGEST_BYTES = 16

Group = tuple[int, ...]


class Collective(Protocol):
    """``allgather(data, group)``: every member's bytes in group order; ``[]`` on a rank outside the group.

    Every rank calls it at every step (a rank outside the group passes ``b""``), so a backend without collectives
    on subgroups can serve all groups of a step with one world operation.
    """

    rank: int
    world: int

    def allgather(self, data: bytes, group: Group) -> list[bytes]: ...


# Documents -----------------------------------------------------------------------------------------


def encode(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, default=str, ensure_ascii=False).encode("utf-8")


def digest(blob: bytes) -> str:
    return hashlib.blake2b(blob, digest_size=DIGEST_BYTES).hexdigest()


#: fields of a rank's document that are its own (small); the rest is its environment, shared by identical ranks
RANK_FIELDS = ("rank", "host", "identity", "worker_ip", "device_id", "init_s", "compute", "seconds_before_gather")
#: fields only rank 0's copy of which the verdict reads (every rank measured the same rows)
RANK0_FIELDS = ("subgroups", "bandwidth")
#: keys of a `msdoctor check` report that differ between identical nodes (msdoctor.report_diff.VOLATILE's names)
VOLATILE_KEYS = frozenset({"started_at", "duration_s"})


def _strip_volatile(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_volatile(v) for k, v in obj.items() if k not in VOLATILE_KEYS}
    if isinstance(obj, list):
        return [_strip_volatile(v) for v in obj]
    return obj


def split(doc: dict[str, Any], per_rank_env: Iterable[str]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(part, blobs): the rank's own small part and its blobs ("env", and "node_check" on a node's first rank).

    ``per_rank_env``: the variables set per node or rank by construction (RANK_ID, DEVICE_ID, ...): they go to the
    part, so that identical environments have identical blobs. Per-collective timings stay in the part too.
    """
    per = frozenset(per_rank_env)
    facts = dict(doc.get("facts") or {})
    env = dict(facts.get("env") or {})
    facts["env"] = {k: v for k, v in env.items() if k not in per}
    colls = [dict(c) for c in doc.get("collectives") or []]
    seconds = [c.pop("seconds", None) for c in colls]
    known = set(RANK_FIELDS) | set(RANK0_FIELDS) | {"facts", "collectives", "node_check"}
    part: dict[str, Any] = {k: doc.get(k) for k in RANK_FIELDS}
    part["env"] = {k: v for k, v in env.items() if k in per}
    part["collective_seconds"] = seconds
    if doc.get("rank") == 0:
        part.update({k: doc.get(k) for k in RANK0_FIELDS})
    shared = {k: v for k, v in doc.items() if k not in known}
    shared.update(facts=facts, collectives=colls)
    blobs = {"env": encode(shared)}
    if isinstance(doc.get("node_check"), dict):
        blobs["node_check"] = encode(_strip_volatile(doc["node_check"]))
    return part, blobs


class Assembly:
    """Every rank's part and each distinct blob once; what the verdict is computed from.

    ``parts``: sorted by rank, ``part["blobs"]`` maps a blob name to its digest; ``blobs``: digest -> decoded blob.
    Built from the leaders' step (:meth:`from_wire`), it decodes on first use.
    """

    def __init__(
        self,
        parts: Optional[list[dict[str, Any]]] = None,
        blobs: Optional[dict[str, Any]] = None,
        raw: Optional[Sequence[bytes]] = None,
    ) -> None:
        self._parts, self._blobs, self._raw = parts, blobs, raw
        self._light: Optional[list[dict[str, Any]]] = None

    @classmethod
    def from_wire(cls, got: Sequence[bytes]) -> Assembly:
        return cls(raw=got)

    def _decode(self) -> None:
        pieces: list[bytes] = []
        decoded: dict[str, Any] = {}
        for buf in self._raw or ():
            first, *rest = unpack(buf)
            pieces.extend(unpack(first))
            for b in rest:
                decoded.setdefault(digest(b), json.loads(b))
        self._raw = None
        # one document for all the parts: the decoder then keeps one copy of each key
        parts = json.loads(b"[" + b",".join(pieces) + b"]")
        del pieces
        if not all(isinstance(p, dict) and isinstance(p.get("rank"), int) for p in parts):
            raise ValueError("a gathered rank part has no rank")
        self._parts, self._blobs = sorted(parts, key=lambda p: p["rank"]), decoded

    @property
    def parts(self) -> list[dict[str, Any]]:
        if self._parts is None:
            self._decode()
        return self._parts  # type: ignore[return-value]

    @property
    def blobs(self) -> dict[str, Any]:
        if self._blobs is None:
            self._decode()
        return self._blobs  # type: ignore[return-value]

    @classmethod
    def of_docs(cls, docs: Sequence[dict[str, Any]], per_rank_env: Iterable[str]) -> Assembly:
        """The assembly of documents already in one place (tests, and the equivalence with the old verdict)."""
        per = tuple(per_rank_env)
        parts: list[dict[str, Any]] = []
        blobs: dict[str, Any] = {}
        for d in docs:
            part, bl = split(d, per)
            part["blobs"] = {}
            for name, b in bl.items():
                key = digest(b)
                part["blobs"][name] = key
                blobs.setdefault(key, json.loads(b))
            parts.append(part)
        return cls(sorted(parts, key=lambda p: p["rank"]), blobs)

    def env_of(self, part: dict[str, Any]) -> dict[str, Any]:
        return self.blobs[part["blobs"]["env"]]

    def node_check_of(self, part: dict[str, Any]) -> Optional[dict[str, Any]]:
        key = part["blobs"].get("node_check")
        return self.blobs[key] if key else None

    def docs(self) -> list[dict[str, Any]]:
        """One document per rank in the shape the verdict reads, sharing the blobs' objects (no copy of the facts);
        facts.env holds the shared variables only: the per-rank ones are in ``doc["env"]``."""
        if self._light is None:
            out = []
            for p in self.parts:
                d = dict(self.env_of(p))
                d.update(p)
                d["node_check"] = self.node_check_of(p)
                out.append(d)
            self._light = out
        return self._light

    def full_doc(self, part: dict[str, Any]) -> dict[str, Any]:
        """The rank's document as it was before :func:`split` (less the node check's timings)."""
        env = self.env_of(part)
        d = {k: v for k, v in env.items() if k not in ("facts", "collectives")}
        facts = dict(env["facts"])
        facts["env"] = dict(sorted({**facts["env"], **part["env"]}.items()))
        d["facts"] = facts
        d["collectives"] = [
            dict(c, **({"seconds": s} if s is not None else {}))
            for c, s in zip(env["collectives"], part["collective_seconds"])
        ]
        d.update({k: part[k] for k in RANK_FIELDS})
        d.update({k: part[k] for k in RANK0_FIELDS if k in part})
        d["node_check"] = self.node_check_of(part)
        return d


# Framing: a JSON header and byte strings, each with a 4-byte length -----------------------------------------


def pack(items: Sequence[bytes]) -> bytes:
    for b in items:
        if len(b) > MAX_BYTES:
            raise ValueError(f"a piece of {len(b)} bytes exceeds {MAX_BYTES}")
    return b"".join(struct.pack("<I", len(b)) + bytes(b) for b in items)


def unpack(buf: bytes) -> list[bytes]:
    out, i, view = [], 0, memoryview(buf)
    while i < len(buf):
        if i + 4 > len(buf):
            raise ValueError("truncated frame")
        (n,) = struct.unpack_from("<I", buf, i)
        if n > MAX_BYTES or i + 4 + n > len(buf):
            raise ValueError(f"implausible frame length {n}")
        out.append(bytes(view[i + 4 : i + 4 + n]))
        i += 4 + n
    return out


def _digests(buf: bytes) -> list[str]:
    if len(buf) % DIGEST_BYTES:
        raise ValueError(f"digest list of {len(buf)} bytes")
    return [buf[i : i + DIGEST_BYTES].hex() for i in range(0, len(buf), DIGEST_BYTES)]


# The protocol --------------------------------------------------------------------------------------

Step = Generator[tuple[bytes, Group], list[bytes], Any]


@dataclass(frozen=True)
class Layout:
    """The node groups (ranks sharing a node key), their leaders (lowest rank) and this rank's place."""

    world: Group
    node: Group  # this rank's node, leader first
    leaders: Group

    @classmethod
    def of(cls, rank: int, keys_buf: bytes, cache: Optional[dict[bytes, Any]] = None) -> Layout:
        """From every rank's 8-byte node key; ``cache`` (the simulation's, shared by its ranks) keeps one copy of
        the groups for identical inputs."""
        groups = cache.get(keys_buf) if cache is not None else None
        if groups is None:
            keys = struct.unpack(f"<{len(keys_buf) // 8}q", keys_buf)
            by_key: dict[int, list[int]] = {}
            for r, k in enumerate(keys):
                by_key.setdefault(k, []).append(r)
            nodes = {k: tuple(rs) for k, rs in by_key.items()}
            groups = (tuple(range(len(keys))), nodes, tuple(sorted(rs[0] for rs in nodes.values())), keys)
            if cache is not None:
                cache[keys_buf] = groups
        world, nodes, leaders, keys = groups
        return cls(world, nodes[keys[rank]], leaders)

    def leader(self, rank: int) -> bool:
        return self.node[0] == rank


def node_key(node_rank: Optional[int], host: str) -> int:
    """msrun's --node_rank when given, else a hash of the host name (the ranks of one msrun share both)."""
    if node_rank is not None and node_rank >= 0:
        return int(node_rank)
    return -1 - int.from_bytes(hashlib.blake2b(host.encode("utf-8", "replace"), digest_size=7).digest(), "little")


def protocol(
    rank: int, key: int, part: dict[str, Any], blobs: dict[str, bytes], cache: Optional[dict[bytes, Any]] = None
) -> Step:
    """The gather as seen by one rank (a generator of ``(data, group)`` steps, sent each step's result).

    Returns ``(layout, assembly)`` on a leader, ``(layout, None)`` elsewhere.
    """
    got = yield struct.pack("<q", key), ()
    if any(len(b) != 8 for b in got):
        raise ValueError("a node key is not 8 bytes")
    lay = Layout.of(rank, b"".join(got), cache)
    del got
    leader = lay.leader(rank)

    # node: digests, then the part and the blobs no lower rank of the node has
    mine = {name: digest(b) for name, b in blobs.items()}
    got = yield b"".join(bytes.fromhex(d) for d in sorted(set(mine.values()))), lay.node
    seen: set[str] = set()
    for r, buf in zip(lay.node, got):
        if r == rank:
            break
        seen.update(_digests(buf))
    send = []
    for name in sorted(blobs):
        if mine[name] not in seen:
            seen.add(mine[name])
            send.append(blobs[name])
    part = dict(part, blobs=mine)
    got = yield pack([encode(part), *send]), lay.node
    del send, blobs
    node_parts: list[bytes] = []
    node_blobs: dict[str, bytes] = {}
    if leader:
        for buf in got:
            first, *rest = unpack(buf)
            node_parts.append(first)
            for b in rest:
                node_blobs.setdefault(digest(b), b)
    del got

    # leaders: distinct digests, then the node's parts and the blobs no earlier leader has
    got = yield (b"".join(bytes.fromhex(d) for d in sorted(node_blobs)) if leader else b""), lay.leaders
    earlier: set[str] = set()
    for r, buf in zip(lay.leaders, got):
        if r == rank:
            break
        earlier.update(_digests(buf))
    del got
    own = [b for d, b in sorted(node_blobs.items()) if d not in earlier]
    payload = pack([pack(node_parts), *own]) if leader else b""
    del node_blobs, own, node_parts
    got = yield payload, lay.leaders
    del payload
    return lay, (Assembly.from_wire(got) if leader else None)


def share_verdict(rank: int, lay: Layout, code: Optional[int]) -> Step:
    """The leader's exit code to the other ranks of its node (4 bytes each)."""
    got = yield (struct.pack("<i", int(code)) if lay.leader(rank) and code is not None else b""), lay.node
    return struct.unpack("<i", got[0])[0]


def drive(step: Step, comm: Collective) -> Any:
    """Run a protocol generator against a real collective."""
    try:
        data, group = next(step)
        while True:
            data, group = step.send(comm.allgather(data, group or tuple(range(comm.world))))
    except StopIteration as done:
        return done.value


# Collectives ------------------------------------------------------------------------------------------------


class MindSporeCollective:
    """``ops.AllGather`` over int32 words of a numpy uint8 buffer, within a group or, where the backend runs
    collectives on the world group only (mccl: "AllReduce only support mccl_world_group on CPU", observed on
    MindSpore 2.7.0), as one world AllGather that serves every group of the step at once."""

    def __init__(self, ms: Any, np: Any, rank: int, world: int, subgroups: bool = False) -> None:
        self.ms, self.np, self.rank, self.world = ms, np, rank, world
        self.subgroups = subgroups
        self._ops: dict[Optional[str], Any] = {}
        self._groups: dict[Group, Optional[str]] = {}
        self.bytes_sent = 0

    def _group_name(self, group: Group) -> Optional[str]:
        if not self.subgroups or len(group) == self.world:
            return None
        if group not in self._groups:
            from mindspore.communication import create_group

            name = f"msdoctor_g{len(self._groups)}_{group[0]}_{len(group)}"
            create_group(name, list(group))
            self._groups[group] = name
        return self._groups[group]

    def _allgather(self, words: Any, name: Optional[str]) -> Any:
        if name not in self._ops:
            self._ops[name] = self.ms.ops.AllGather(**({"group": name} if name else {}))
        self.bytes_sent += int(words.nbytes)
        return self._ops[name](self.ms.Tensor(words)).asnumpy().reshape(-1)

    def allgather(self, data: bytes, group: Group) -> list[bytes]:
        np = self.np
        if len(data) > MAX_BYTES:
            raise ValueError(f"payload of {len(data)} bytes exceeds {MAX_BYTES}")
        name = self._group_name(group)
        if name is not None and self.rank not in group:
            return []
        span = group if name is not None else tuple(range(self.world))
        lengths = self._allgather(np.array([len(data)], dtype=np.int32), name).astype(np.int64)
        if lengths.size != len(span) or (lengths < 0).any() or (lengths > MAX_BYTES).any():
            raise ValueError(f"implausible payload lengths gathered: {lengths.tolist()[:8]} ...")
        longest = int(lengths.max()) if lengths.size else 0
        if longest == 0:  # every rank of the span saw the same lengths: all skip the rounds
            return [b"" for r in group] if self.rank in group else []
        chunk = max(4, ROUND_BUDGET // max(len(span), 1) // 4 * 4)
        src = np.frombuffer(data, dtype=np.uint8)
        index = {r: i for i, r in enumerate(span)}
        members = [index[r] for r in group] if self.rank in group else []
        out = [bytearray() for _ in members]
        for start in range(0, longest, chunk):
            size = min(chunk, (longest - start + 3) // 4 * 4)
            buf = np.zeros(size, dtype=np.uint8)
            piece = src[start : start + size]
            buf[: piece.size] = piece
            got = self._allgather(buf.view(np.int32), name).view(np.uint8).reshape(len(span), size)
            for slot, i in enumerate(members):
                n = min(size, max(0, int(lengths[i]) - start))
                if n:
                    out[slot] += got[i, :n].tobytes()
        return [bytes(b) for b in out]


class SimCollective:
    """Many ranks in one process, in lockstep: each step collects every rank's ``(data, group)`` and answers each
    member with its group's byte strings. Counts what each rank sends as the real AllGather would (a length word,
    then its bytes padded to the group's longest)."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.bytes_sent = [0] * world

    def step(self, requests: Sequence[tuple[bytes, Group]]) -> list[list[bytes]]:
        """One step; the ranks of one group must pass the same group object (the protocol's shared cache)."""
        world = tuple(range(self.world))
        by_group: dict[int, tuple[Group, list[int]]] = {}
        for r, (_, group) in enumerate(requests):
            g = group or world
            if r in g:
                by_group.setdefault(id(g), (g, []))[1].append(r)
        out: list[list[bytes]] = [[] for _ in requests]
        for g, present in by_group.values():
            if present != list(g):
                raise RuntimeError(f"group {g[:4]}... stepped by {len(present)} of its {len(g)} ranks")
            datas = [requests[r][0] for r in g]
            longest = max((len(d) for d in datas), default=0)
            padded = (longest + 3) // 4 * 4
            for r in g:
                self.bytes_sent[r] += 4 + padded
                out[r] = datas
        return out

    def run(self, steps: Sequence[Step], record: Iterable[int] = ()) -> tuple[list[Any], dict[int, list[list[bytes]]]]:
        """Every rank's result, and the step results received by the ranks in ``record`` (for a replay)."""
        rec: dict[int, list[list[bytes]]] = {r: [] for r in record}
        results: list[Any] = [None] * len(steps)
        pending: list[Optional[tuple[bytes, Group]]] = []
        for r, s in enumerate(steps):
            pending.append(self._advance(s, None, r, results))
        while any(p is not None for p in pending):
            if any(p is None for p in pending):
                raise RuntimeError("a rank finished while others still step")
            answers = self.step([p for p in pending if p is not None])
            for r, s in enumerate(steps):
                if r in rec:
                    rec[r].append(answers[r])
                pending[r] = self._advance(s, answers[r], r, results)
        return results, rec

    @staticmethod
    def _advance(
        step: Step, answer: Optional[list[bytes]], r: int, results: list[Any]
    ) -> Optional[tuple[bytes, Group]]:
        try:
            return next(step) if answer is None else step.send(answer)
        except StopIteration as done:
            results[r] = done.value
            return None


def replay(step: Step, answers: Sequence[list[bytes]]) -> Any:
    """Run one rank's protocol against recorded step results, each received into a fresh buffer (as a real
    receive would be): what :mod:`benchmarks.bench_preflight_scale` measures one rank's memory with."""
    it = iter(answers)
    try:
        next(step)
        while True:
            got = next(it)
            step.send([bytes(bytearray(b)) for b in got])
    except StopIteration as done:
        return done.value
