"""``python -m msdoctor``: the same as the ``msdoctor`` command."""

from msdoctor.cli import main

main()
