"""The rules of registry-collisions: which registrations collide with a name a library owns, and the fix for each.

Loaded when the check runs (checks/registry_collisions/__init__.py), not when it registers."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from msdoctor.facts.registries import ProjectScan
from msdoctor.model import Finding, Location
from msdoctor.registry_scan.builtins import MF_NEW_PREFIX, Builtins
from msdoctor.registry_scan.collide import Collision, find_collisions, free_name, taken_by_kind
from msdoctor.registry_scan.sources import Registration, ScanResult

#: the ValueError each registry raises (installed source: transformers 4.57.1 configuration_auto.py /
#: auto_factory.py, MindFormers 1.3.2 models/auto/configuration_auto.py, MindNLP 0.4.1 the same as transformers)
RAISES = {
    "builtin-name": "ValueError: '{name}' is already used by a {brand} config, pick another name.",
    "builtin-model": "ValueError: '<class '...{name}'>' is already used by a {brand} model.",
    "model-type-mismatch": "ValueError: The config you are passing has a `model_type` attribute that is not "
    "consistent with the model type you passed ...",
}
BRAND = {"transformers": "Transformers", "mindnlp": "Transformers", "mindformers": "Mindformers"}


def _rel(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _pin(name: str, c: Collision, py: str, added: dict[str, str], baseline: str) -> str:
    """Pinning below the release that added a built-in name: only for a crash on a transformers config name."""
    if (
        c.code != "builtin-name"
        or c.registry is None
        or c.registry.library != "transformers"
        or c.reg is None
        or c.reg.kind != "config"
    ):
        return ""
    if name in added:
        return (
            f" If you cannot rename, pin transformers below {added[name]}, the first release that ships "
            f"'{name}': {py} -m pip install 'transformers<{added[name]}'"
        )
    return f" (transformers has shipped '{name}' since {baseline} or earlier: pinning an older release is no way out)"


def _mf_fix(c: Collision, reg: Registration, taken: set[str]) -> str:
    """Rename through alias= (or search_names=), keeping legacy= and the other arguments as written."""
    mf = reg.mf
    legacy = mf.legacy if mf is not None else True
    # free_name compares plain names: strip the new-style prefix from the keys taken by that style
    plain = (
        {k[len(MF_NEW_PREFIX) :] for k in taken if k.startswith(MF_NEW_PREFIX)}
        if legacy is False
        else {k for k in taken if not k.startswith(MF_NEW_PREFIX)}
    )
    plain |= {r for r in taken if not r.startswith(MF_NEW_PREFIX)} if legacy is None else set()
    args = [f"MindFormerModuleType.{reg.target}"]
    if c.code == "mindformers-search-name" and mf is not None:
        name = (
            (c.key or "")[len(MF_NEW_PREFIX) :]
            if legacy is False and (c.key or "").startswith(MF_NEW_PREFIX)
            else (c.key or "")
        )
        new = free_name(name, plain)
        kept = [n for n in mf.search_names if n != name] + [new]
        if reg.mf and reg.mf.alias:
            args.append(f'alias="{reg.mf.alias}"')
        if legacy is not True:
            args.append("legacy=False" if legacy is False else f"legacy={mf.legacy_text if mf else '...'}")
        args.append("search_names=" + (repr(kept[0]) if len(kept) == 1 else repr(kept)))
        return (
            f"look it up by a search name of its own: @MindFormerRegister.register({', '.join(args)}) at "
            f"{reg.at} ('{new}' is free; '{name}' is dropped), and write '{new}' where your YAML names this "
            f"{reg.target.lower()} (model_type in model_config for a CONFIG), so MindFormers' own '{name}' still "
            f"finds its class"
        )
    new = free_name(reg.name or "", plain, class_style=True)
    args.append(f'alias="{new}"')
    if legacy is not True:
        args.append("legacy=False" if legacy is False else f"legacy={mf.legacy_text if mf else '...'}")
    if mf is not None and mf.search_names_text:
        args.append(f"search_names={mf.search_names_text}")
    if legacy is False and reg.target == "MODELS":
        yaml = f"and name it in your YAML as architectures: {new} (model_config; use_legacy: False)"
    elif legacy is False and reg.target == "CONFIG":
        yaml = (
            f"and look it up by a model_type of its own (search_names) in your YAML, with use_legacy: False; "
            f"the registry key becomes {MF_NEW_PREFIX}{new}"
        )
    else:
        yaml = f"and write type: {new} in your YAML"
    return f"register it under a free name: @MindFormerRegister.register({', '.join(args)}) at {reg.at}, {yaml}"


def _fix(c: Collision, ctx_names: dict[Any, Any], py: str, added: dict[str, str], baseline: str) -> str:
    reg, cc = c.reg, c.config_class
    if cc is not None:
        new = free_name(cc.model_type, ctx_names["config"])
        return f'set model_type = "{new}" in {cc.name} ({cc.at}) before registering it; "{new}" is free'
    assert reg is not None
    if reg.kind == "mindformers":
        return _mf_fix(c, reg, ctx_names.get(("mf", reg.target), set()))
    if reg.kind == "auto":
        new = free_name(reg.name or "", ctx_names["auto"], class_style=True)
        if c.registry is not None and (reg.key_id or "").split(".", 1)[0].split(":", 1)[0] == c.registry.library:
            mt = free_name(c.registry.config_types.get(reg.name or "", "model"), ctx_names["config"])
            return (
                f"{reg.name} is {c.registry.label}'s own config class. To serve every such checkpoint with "
                f"{reg.cls}, pass exist_ok=True at {reg.at}; otherwise register a subclass under its own name: "
                f'class {new}({reg.name}): model_type = "{mt}", then AutoConfig.register("{mt}", {new}) and '
                f"{reg.target}.register({new}, {reg.cls})"
            )
        return (
            f"rename the config class {reg.name} to a name {reg.target} does not know, e.g. {new} (the registry "
            f"compares class names), or pass exist_ok=True at {reg.at} if replacing the library's model for "
            f"every such checkpoint is intended"
        )
    name = reg.name or ""
    if c.code == "model-type-mismatch":
        return (
            f'make them equal: register with {reg.target}.register("{reg.cls_model_type}", {reg.cls}) at '
            f'{reg.at}, or set model_type = "{name}" at {reg.cls_model_type_at}'
        )
    new = free_name(name, ctx_names["config"])
    where = reg.cls_model_type_at or reg.name_at
    edit = f'change the model_type of {reg.cls} from "{name}" to "{new}"' + (f" (written at {where})" if where else "")
    text = (
        f'{edit} and register it as {reg.target}.register("{new}", {reg.cls}) at {reg.at} ("{new}" is free; '
        f"saved config.json files need the new model_type too)."
    )
    if reg.origin != "project":
        dist = reg.origin.split(" ", 1)[0]
        text = (
            f"upgrade {dist} to a release that no longer registers '{name}': {py} -m pip install --upgrade "
            f"{dist} (or ask its maintainers to rename it / pass exist_ok=True)."
        )
    return text + _pin(name, c, py, added, baseline)


def _finding(c: Collision, root: str, names: dict[str, Any], py: str, added: dict[str, str], baseline: str) -> Finding:
    reg, owner = c.reg, c.owner
    brand = BRAND.get(c.registry.library if c.registry else "", "Transformers")
    fix = _fix(c, names, py, added, baseline)
    if c.config_class is not None:
        return _config_class_finding(c, root, brand, fix)
    assert reg is not None
    where = f"{_rel(reg.at.path, root)}:{reg.at.line}" + (
        "" if reg.origin == "project" else f" (installed {reg.origin})"
    )
    evidence: dict[str, Any] = {
        "name": reg.name,
        "api": reg.api,
        "registration": f"{reg.at}",
        "origin": reg.origin,
        "exist_ok": reg.exist_ok,
        "owner": owner.label if owner else None,
        "owner_file": f"{owner.path}:{owner.line}" if owner else None,
        "added_in": added.get(reg.name or "") if c.registry and c.registry.library == "transformers" else None,
    }
    loc = Location(reg.at.path, reg.at.line)
    if c.code == "duplicate":
        sites = "; ".join(f"{_rel(r.at.path, root)}:{r.at.line} ({r.cls}, {r.origin})" for r in c.others)
        return Finding.fail(
            f"'{reg.name}' is registered {len(c.others)} times with different classes",
            detail=(
                f"{reg.api} registrations of '{reg.name}': {sites}. A name that is not built in never raises "
                "when registered again: the registration that runs last silently replaces the other, so which "
                "class loads a checkpoint depends on import order."
            ),
            fix=fix,
            location=loc,
            code=c.code,
            evidence={**evidence, "sites": [str(r.at) for r in c.others]},
        )
    if c.code == "model-type-mismatch":
        return Finding.fail(
            f"{reg.api}('{reg.name}', {reg.cls}) but {reg.cls}.model_type is '{reg.cls_model_type}'",
            detail=f"At {where} this raises `{RAISES['model-type-mismatch']}` before the name is even registered.",
            fix=fix,
            location=loc,
            code=c.code,
            evidence={**evidence, "class_model_type": reg.cls_model_type},
        )
    # duplicates and mismatches are answered above; the rest collide with an owner
    if c.code in ("mindformers-builtin", "mindformers-search-name"):
        return _mindformers_finding(c, where, loc, fix, evidence)
    return _taken_finding(c, where, loc, fix, evidence, brand)


def _config_class_finding(c: Collision, root: str, brand: str, fix: str) -> Finding:
    """A config class whose model_type is a name a library already owns."""
    cc, owner = c.config_class, c.owner
    assert cc is not None and owner is not None  # a config class collides only with a name someone owns
    return Finding.warn(
        f"{cc.name}.model_type = '{cc.model_type}' is a name {owner.label} already owns",
        detail=(
            f"{_rel(cc.at.path, root)}:{cc.at.line} sets model_type '{cc.model_type}'. Registering it "
            f"raises `{RAISES['builtin-name'].format(name=cc.model_type, brand=brand)}`, and config.json "
            f"files saved from it say '{cc.model_type}', so AutoConfig loads them as {owner.cls}."
        ),
        fix=fix,
        location=Location(cc.at.path, cc.at.line),
        code=c.code,
        evidence={
            "class": cc.name,
            "model_type": cc.model_type,
            "owner": owner.label,
            "owner_file": f"{owner.path}:{owner.line}",
        },
    )


def _mindformers_finding(c: Collision, where: str, loc: Location, fix: str, evidence: dict[str, Any]) -> Finding:
    """A MindFormers registration (or search name) that overwrites MindFormers' own entry: it never raises."""
    reg, owner = c.reg, c.owner
    assert reg is not None and owner is not None
    mf = reg.mf
    style = (
        "legacy=False"
        if mf is not None and mf.legacy is False
        else "legacy=<expression>"
        if mf is not None and mf.legacy is None
        else "legacy=True (the default)"
    )
    evidence = {
        **evidence,
        "registry_key": c.key,
        "legacy": None if mf is None else mf.legacy,
        "search_names": list(mf.search_names) if mf else [],
    }
    if c.code == "mindformers-search-name":
        looked = c.key or ""
        return Finding.warn(
            f"{where}: search_names takes '{looked}' from MindFormers' own {reg.target} {owner.cls} ({owner.label})",
            detail=(
                f"MindFormerRegister keeps search_names in search_names_map, which get_cls consults before "
                f"the registry; registering {reg.cls} with {style} maps the lookup key '{looked}' to it, "
                f"so every YAML that names '{looked}' (MindFormers' own configs included) builds "
                f"{reg.cls} instead of {owner.cls} ({owner.path}:{owner.line})."
            ),
            fix=fix,
            location=loc,
            code=c.code,
            evidence=evidence,
        )
    unknown = (
        (
            " legacy= is an expression msdoctor cannot evaluate: this is the key it gets when the "
            "expression is " + ("False" if (c.key or "").startswith(MF_NEW_PREFIX) else "True") + "."
        )
        if c.exist_ok_unknown
        else ""
    )
    return Finding.warn(
        f"{where} replaces MindFormers' own {reg.target} '{c.key or reg.name}' ({owner.label})",
        detail=(
            f"With {style}, MindFormers files {reg.cls} under the registry key '{c.key or reg.name}', "
            f"the key of its own {owner.cls} ({owner.path}:{owner.line}). MindFormerRegister.register never "
            f"raises: it overwrites the entry, so every YAML that looks up that name "
            f"({'use_legacy: False' if (c.key or '').startswith(MF_NEW_PREFIX) else 'use_legacy: True, the default'}) "
            f"now builds {reg.cls}, MindFormers' own configs included.{unknown}"
        ),
        fix=fix,
        location=loc,
        code=c.code,
        evidence=evidence,
    )


def _taken_finding(c: Collision, where: str, loc: Location, fix: str, evidence: dict[str, Any], brand: str) -> Finding:
    """A transformers-style registration of a name (or config class) the library owns: it raises, or with
    exist_ok replaces the library's entry."""
    reg, owner = c.reg, c.owner
    assert reg is not None and owner is not None
    model = reg.kind == "auto"
    raises = RAISES["builtin-model" if model else "builtin-name"].format(name=reg.name, brand=brand)
    owned = f"{owner.label} ({owner.path}:{owner.line})"
    if model:
        model_type = c.registry.config_types.get(reg.name or "") if c.registry else None
        head = (
            f"{where}: {reg.api}({reg.name_text}, {reg.cls}) registers {reg.cls} for the config class "
            f"{reg.name}, but {reg.target} already maps {reg.name} (model_type '{model_type}') to {owned}; "
            "the registry is keyed by the config class's name"
        )
        subject = f"config class {reg.name} is taken in {reg.target} by {owner.label}"
    else:
        head = f"{where}: {reg.api}({reg.name_text}, {reg.cls}) registers model_type '{reg.name}', owned by {owned}"
        subject = f"'{reg.name}' is taken by {owner.label}"
    if c.severity == "fail":
        return Finding.fail(
            f"{subject}: {reg.api} at {where} raises ValueError",
            detail=f"{head}. When this line runs it raises `{raises}`.",
            fix=fix,
            location=loc,
            code=c.code,
            evidence=evidence,
        )
    why = (
        "exist_ok is an expression msdoctor cannot evaluate: false at run time raises "
        f"`{raises}`; true replaces the library's entry"
        if c.exist_ok_unknown
        else "exist_ok=True suppresses the ValueError and silently replaces the library's entry"
    )
    flag = "exist_ok=<expression>" if c.exist_ok_unknown else "exist_ok=True"
    return Finding.warn(
        f"{subject}: {reg.api}(..., {flag}) at {where} replaces it",
        detail=f"{head}. {why}: every checkpoint of that type, the library's own included, now loads with {reg.cls}.",
        fix=fix,
        location=loc,
        code=c.code,
        evidence=evidence,
    )


def evaluate(
    builtins: Builtins,
    project: ProjectScan,
    installed: Sequence[ScanResult],
    python_cmd: str,
    *,
    target: str = "",
    added: Optional[dict[str, str]] = None,
    baseline: str = "",
) -> list[Finding]:
    if not builtins.libraries:
        from msdoctor.checks.registry_collisions import nothing_to_collide

        return nothing_to_collide(target or python_cmd)
    added = added or {}
    pr = project.result
    regs = pr.registrations + [r for s in installed for r in s.registrations]
    collisions = find_collisions(builtins, regs, pr.config_classes)
    names = taken_by_kind(builtins, regs, pr.config_classes)
    root = project.roots[0]
    out = [_finding(c, root, names, python_cmd, added, baseline) for c in collisions]
    for path, line, reason in pr.unparsable:
        out.append(
            Finding.skipped(
                f"{_rel(path, root)} could not be parsed: its registrations were not checked",
                reason=f"{reason} (line {line}). msdoctor reads project files with ast and never runs them; "
                "fix the syntax error to have this file checked.",
                location=Location(path, line),
                code="unparsable-file",
            )
        )
    unresolved = [r for r in regs if r.name is None]
    if unresolved:
        sites = ", ".join(f"{_rel(r.at.path, root)}:{r.at.line} {r.api}({r.name_text})" for r in unresolved[:10])
        out.append(
            Finding.skipped(
                f"{len(unresolved)} registration(s) use a name msdoctor cannot work out statically",
                reason=f"{sites}: the name is computed at run time (not a string literal, a constant or "
                "Cls.model_type), so it was not compared with the built-in names.",
                code="unresolved-name",
            )
        )
    libs = ", ".join(f"{lib.label} ({len(lib.configs)} config names)" for lib in builtins.libraries.values())
    scanned = f"{pr.files_seen} Python files under {', '.join(project.roots)} ({pr.files_parsed} parsed)" + (
        " [stopped early: too many files]" if pr.truncated else ""
    )
    evidence = {
        "libraries": {k: v.label for k, v in builtins.libraries.items()},
        "project_files": pr.files_seen,
        "project_files_parsed": pr.files_parsed,
        "registrations": len(regs),
        "unresolved": len(unresolved),
        "installed_packages_with_registrations": [s.origin for s in installed],
        "installed_files_unparsable": sum(len(s.unparsable) for s in installed),
        "notes": builtins.notes,
    }
    if not any(f.status.is_problem or f.status.value == "warn" for f in out):
        checked = len(regs) - len(unresolved)
        apis = "AutoConfig / CONFIG_MAPPING / AutoModel* / AutoTokenizer / MindFormerRegister"
        if not regs:
            title = f"no model registrations in {scanned}"
            proved = (
                f"ast found no {apis} registration in {scanned} nor in the installed packages that depend on "
                f"transformers / MindNLP / MindFormers, and no config class there sets a model_type that "
                f"{libs} owns"
            )
        else:
            title = f"{checked} model registration(s) checked: no name collides with {libs}"
            proved = (
                f"each {apis} registration with a statically known name ({checked} of {len(regs)}), found by "
                f"ast in {scanned} and in {len(installed)} installed package(s), uses a name that none of "
                f"{libs} owns, and no name is registered twice with different classes"
            )
        out.insert(0, Finding.passed(title, proved=proved, evidence=evidence))
    return out
