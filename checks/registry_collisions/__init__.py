"""Check: model names registered by the project or installed packages that a library already owns (found by ast).

The rules live in rules.py and load when the check runs: every ``msdoctor`` run registers this class."""

from __future__ import annotations

from msdoctor.context import Context
from msdoctor.facts.registries import INSTALLED_REGISTRATIONS, PROJECT_REGISTRATIONS, REGISTRY_BUILTINS
from msdoctor.model import Finding


def nothing_to_collide(target: str) -> list[Finding]:
    """The skip when the target can import none of the libraries with a registry."""
    return [
        Finding.skipped(
            "no model registry to collide with: transformers, MindNLP and MindFormers are not installed",
            reason=f"{target} cannot import transformers, mindnlp or mindformers, so no name "
            "can be taken yet (registrations fail with ImportError instead).",
        )
    ]


class RegistryCollisionsCheck:
    id = "registry-collisions"
    title = "Model registry collisions"
    description = (
        "Model names registered by your project or installed packages that transformers/MindNLP/MindFormers already own"
    )
    order = 60  # place in reports: environment first, then stack, devices, editors, project

    def run(self, ctx: Context) -> list[Finding]:
        t = ctx.target
        builtins = ctx.get(REGISTRY_BUILTINS)
        if not builtins.libraries:
            return nothing_to_collide(t.executable)
        from msdoctor.checks.registry_collisions.rules import evaluate
        from msdoctor.facts.registries import added_versions

        added, baseline = added_versions()
        installed = ctx.get(INSTALLED_REGISTRATIONS)
        return evaluate(
            builtins,
            ctx.get(PROJECT_REGISTRATIONS),
            installed,
            t.python_cmd(),
            target=t.executable,
            added=added,
            baseline=baseline,
        )
