"""The stable API for check plugins: import from here, not from internal modules.

A plugin check is a class with ``id`` (kebab-case), ``title``, ``description`` and
``run(ctx) -> list[Finding]``; register it in your distribution's pyproject.toml::

    [project.entry-points."msdoctor.checks"]
    my-check = "my_package.checks:MyCheck"

See docs/plugins.md.
"""

from msdoctor.context import Context, FactSpec, FactUnavailable, Options
from msdoctor.facts.target import TARGET, Distribution, TargetFacts
from msdoctor.model import Finding, Location, Status
from msdoctor.plugins import Check

__all__ = [
    "Check",
    "Context",
    "Distribution",
    "FactSpec",
    "FactUnavailable",
    "Finding",
    "Location",
    "Options",
    "Status",
    "TARGET",
    "TargetFacts",
]
