"""Each command-line option that several commands share, defined once: its flags, type, environment variable
and default help. A command passes its own help text where the option means something particular there.

Every command spells these the same way and accepts the same values: ``--device-target`` takes Ascend, GPU
or CPU in any case (the value passed on is the canonical spelling); ``--format`` is a choice of the formats
that command writes, in any case.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

DEVICE_TARGETS = ("Ascend", "GPU", "CPU")


def device_target(help: str = "Device the run will use (default: from --config, else what is available).") -> Decorator:
    """--device-target Ascend|GPU|CPU (any case)."""
    return click.option("--device-target", type=click.Choice(DEVICE_TARGETS, case_sensitive=False), help=help)


def output_format(choices: Sequence[str], help: str, default: str = "terminal") -> Decorator:
    """--format: one of ``choices`` (any case), stored as ``fmt``."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices), case_sensitive=False),
        default=default,
        show_default=True,
        help=help,
    )


def quick(help: str = "Skip live probes that import MindSpore or transformers.") -> Decorator:
    return click.option("--quick", is_flag=True, help=help)


def no_plugins(help: str = "Load only msdoctor's own checks (also: MSDOCTOR_DISABLE_PLUGIN_AUTOLOAD=1).") -> Decorator:
    return click.option("--no-plugins", is_flag=True, help=help)


def no_redact(
    help: str = "Keep home directory, user/host names and secret values in the output (default: masked). "
    "Env: MSDOCTOR_NO_REDACT=1.",
) -> Decorator:
    return click.option("--no-redact", is_flag=True, envvar="MSDOCTOR_NO_REDACT", help=help)


def only(help: str = "Run only these checks.") -> Decorator:
    return click.option("--only", multiple=True, metavar="ID[,ID...]", help=help)


def skip(help: str = "Do not run these checks.") -> Decorator:
    return click.option("--skip", multiple=True, metavar="ID[,ID...]", help=help)


def selection(fn: Optional[Callable[..., Any]] = None) -> Any:
    """--only and --skip together."""

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        return only()(skip()(f))

    return wrap(fn) if fn is not None else wrap
