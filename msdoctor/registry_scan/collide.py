"""Which registrations collide, and with what: pure functions over built-in names and scan results.

What raises and what silently replaces (read in the installed transformers 4.57.1,
``models/auto/configuration_auto.py`` and ``auto_factory.py``; MindFormers 1.3.2
``tools/register/register.py`` and ``models/auto/configuration_auto.py``):

* ``AutoConfig.register`` / ``CONFIG_MAPPING.register`` with a built-in model_type and
  ``exist_ok=False`` raises ValueError; with ``exist_ok=True`` it replaces the library's class.
* ``AutoConfig.register(name, cls)`` also raises when ``cls.model_type != name``.
* ``AutoModel*.register`` / ``AutoTokenizer.register`` raise when the config class's ``__name__`` is a
  built-in config class name whose model_type is in that auto class's mapping (``exist_ok=False``).
* The same custom name registered twice never raises: the registration imported last wins.
* ``MindFormerRegister.register`` never raises: it replaces whatever had the same registry key. The key
  is ``mcore_<name>`` for a MODELS / CONFIG class registered with ``legacy=False`` (MindFormers 2.1.0
  ``_add_class_name_prefix``), so a legacy registration of ``Qwen3ForCausalLM`` leaves the built-in
  ``mcore_Qwen3ForCausalLM`` alone, and ``search_names=`` that equal a built-in's search key redirect
  its lookups (``search_names_map`` is consulted before the registry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from msdoctor.registry_scan.builtins import Builtins, LibraryRegistry, Owner
from msdoctor.registry_scan.sources import ConfigClass, Registration


@dataclass(frozen=True)
class Collision:
    """One problem: a registration against a built-in, two registrations of one name, or a latent clash.

    code: "builtin-name" | "builtin-name-exist-ok" | "builtin-model" | "builtin-model-exist-ok" |
    "mindformers-builtin" | "mindformers-search-name" | "model-type-mismatch" | "duplicate" |
    "builtin-model-type-unregistered".
    key: for MindFormers, the registry (or search) key that collides.
    """

    code: str
    severity: str  # "fail" | "warn"
    reg: Optional[Registration] = None
    owner: Optional[Owner] = None
    registry: Optional[LibraryRegistry] = None
    others: tuple[Registration, ...] = ()
    config_class: Optional[ConfigClass] = None
    exist_ok_unknown: bool = False
    key: Optional[str] = None


def registry_of(builtins: Builtins, reg: Registration) -> Optional[LibraryRegistry]:
    if reg.kind == "mindformers":
        return builtins.get("mindformers")
    return builtins.registry_for(reg.library)


def _against_builtin(reg: Registration, registry: LibraryRegistry) -> list[Collision]:
    out: list[Collision] = []
    if reg.name is None:
        return out
    owner: Optional[Owner] = None
    code = ""
    if reg.kind == "config":
        owner, code = registry.configs.get(reg.name), "builtin-name"
    elif reg.kind == "auto":
        model_type = registry.config_types.get(reg.name)
        table = registry.auto.get(reg.target) or {}
        owner = table.get(model_type) if model_type else None
        code = "builtin-model"
    elif reg.kind == "mindformers":
        return _against_mindformers(reg, registry)
    if owner is not None:
        if reg.exist_ok is False:
            out.append(Collision(code, "fail", reg, owner, registry))
        else:
            out.append(
                Collision(code + "-exist-ok", "warn", reg, owner, registry, exist_ok_unknown=reg.exist_ok is None)
            )
    if (
        reg.kind == "config"
        and reg.target == "AutoConfig"
        and reg.cls_model_type is not None
        and reg.cls_model_type != reg.name
    ):
        out.append(Collision("model-type-mismatch", "fail", reg, None, registry))
    return out


def _against_mindformers(reg: Registration, registry: LibraryRegistry) -> list[Collision]:
    """A registry key or search key the registration takes from a built-in (MindFormers' own keying)."""
    out: list[Collision] = []
    table = registry.decorated.get(reg.target) or {}
    keys = reg.mf.keys() if reg.mf is not None else ((reg.name,) if reg.name else ())
    hit = set()
    for key in keys:
        owner = table.get(key)
        if owner is not None:
            hit.add(key)
            out.append(
                Collision(
                    "mindformers-builtin",
                    "warn",
                    reg,
                    owner,
                    registry,
                    key=key,
                    exist_ok_unknown=reg.mf is not None and reg.mf.legacy is None,
                )
            )
    if reg.mf is None:
        return out
    own = set(keys)
    for skey in reg.mf.search_keys():
        target = registry.search_names.get((reg.target, skey))
        if target is None or target in own:
            continue
        owner = table.get(target)
        if owner is not None:
            out.append(Collision("mindformers-search-name", "warn", reg, owner, registry, key=skey))
    return out


def _group_key(reg: Registration, registry: Optional[LibraryRegistry]) -> tuple:
    lib = registry.library if registry is not None else reg.library
    target = "config" if reg.kind == "config" else reg.target
    return (reg.kind, lib, target, reg.key_id)


def find_collisions(
    builtins: Builtins, registrations: Sequence[Registration], config_classes: Iterable[ConfigClass] = ()
) -> list[Collision]:
    """Every collision, in a stable order: built-in clashes, duplicates, then latent model_type clashes."""
    unique: dict[tuple, Registration] = {}
    for reg in registrations:
        unique.setdefault((reg.at.path, reg.at.line, reg.api, reg.name_text), reg)
    regs = list(unique.values())
    out: list[Collision] = []
    builtin_hits: set[tuple] = set()
    groups: dict[tuple, list[Registration]] = {}
    for reg in regs:
        registry = registry_of(builtins, reg)
        if registry is None:
            continue
        found = _against_builtin(reg, registry)
        out.extend(found)
        key = _group_key(reg, registry)
        if any(c.owner is not None for c in found):
            builtin_hits.add(key)
        if reg.key_id is not None:
            groups.setdefault(key, []).append(reg)
    for key, members in groups.items():
        classes = {m.cls_id or f"{m.at}:{m.cls}" for m in members}
        if len(classes) > 1 and key not in builtin_hits:
            ordered = sorted(members, key=lambda r: (r.origin != "project", r.at.path, r.at.line or 0))
            out.append(
                Collision(
                    "duplicate", "fail", ordered[1], None, registry_of(builtins, ordered[1]), others=tuple(ordered)
                )
            )
    registered = {r.cls_id for r in regs if r.kind == "config" and r.cls_id}
    for cc in {(c.at.path, c.at.line, c.name): c for c in config_classes}.values():
        registry = builtins.registry_for(cc.library)
        owner = registry.configs.get(cc.model_type) if registry is not None else None
        if owner is None or cc.cls_id in registered or cc.base == owner.cls:
            continue  # a subclass of the very class owning the name keeps its model_type on purpose
        out.append(Collision("builtin-model-type-unregistered", "warn", None, owner, registry, config_class=cc))
    return out


def free_name(name: str, taken: Iterable[str], *, class_style: bool = False) -> str:
    """A name close to ``name`` that is not in ``taken`` ("my_aimv2", "MyLlamaConfig")."""
    used = set(taken)
    if class_style:
        cands = [f"My{name}", f"Custom{name}", f"Project{name}"]
    else:
        cands = [f"my_{name}", f"custom_{name}", f"{name}_custom"]
    for cand in cands:
        if cand not in used:
            return cand
    i = 2
    while f"{cands[0]}{'' if class_style else '_'}{i}" in used:
        i += 1
    return f"{cands[0]}{'' if class_style else '_'}{i}"


def taken_names(
    registry: Optional[LibraryRegistry],
    registrations: Iterable[Registration],
    config_classes: Iterable[ConfigClass],
    kind: str,
    target: str = "",
) -> set[str]:
    """Every name a suggestion must avoid for a registration of ``kind``."""
    taken: set[str] = set()
    if kind == "config":
        if registry is not None:
            taken |= set(registry.configs)
        taken |= {r.name for r in registrations if r.kind == "config" and r.name}
        taken |= {c.model_type for c in config_classes}
    elif kind == "auto":
        if registry is not None:
            taken |= set(registry.config_types)
        taken |= {r.name for r in registrations if r.kind == "auto" and r.name}
        taken |= {c.name for c in config_classes}
    else:
        if registry is not None:
            taken |= set(registry.decorated.get(target, {}))
            taken |= {k for (mt, k) in registry.search_names if mt == target}
        for r in registrations:
            if r.kind == "mindformers" and r.target == target and r.name:
                taken |= {r.name, *(r.mf.keys() if r.mf else ())}
    return taken


def taken_by_kind(
    builtins: Builtins, registrations: Sequence[Registration], config_classes: Sequence[ConfigClass]
) -> dict:
    """Names to avoid, by kind: "config", "auto", and ("mf", module type) for MindFormers."""
    names: dict = {"config": set(), "auto": set()}
    for lib in builtins.libraries.values():
        names["config"] |= taken_names(lib, registrations, config_classes, "config")
        names["auto"] |= taken_names(lib, registrations, config_classes, "auto")
        for mt in lib.decorated:
            names[("mf", mt)] = taken_names(lib, registrations, config_classes, "mindformers", mt)
    return names
