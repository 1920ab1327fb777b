"""Explain error text: match it against the offline catalogue of known error signatures (compat_matrix/errors.toml).

Public API (the trainer calls it on a failed run's logs; the device-target check on MindSpore's own log lines;
the post-mortem of a failed msrun job on each rank's first error)::

    from msdoctor.explain import explain_text, explain_file
    for m in explain_text(log_tail):
        print(m.title, m.cause, m.fix_for(python, config), m.check_id, m.line)

The package is split by responsibility:

- :mod:`.parse`: input -> structure (encodings, the normalisation of pasted text, CANN's own advice lines);
- :mod:`.catalogue`: the signatures of compat_matrix/errors.toml, validated, and the literals each one requires;
- :mod:`.scan`: the matcher over blocks of lines;
- :mod:`.describe`: the answer (:class:`Match`) and its text.

Logs are matched the way people paste them: each line is normalised (ANSI colour codes, non-breaking and
full-width spaces, curly and full-width quotes, HTML-escaped characters, tabs and runs of spaces, case), a
signature may be wrapped over up to three lines, very long lines are scanned in overlapping windows, and files
are opened with their BOM or UTF-16 detected. An entry's regex runs only where the text holds a literal the regex
requires, so scanning a clean 200k-line log costs a few substring searches per megabyte. CANN errors carry their
own "Possible Cause:" and "Solution:" lines: a match echoes them.
"""

from __future__ import annotations

from msdoctor.explain.catalogue import (
    CATALOGUE,
    CATEGORIES,
    DEVICE_TARGETS,
    KIND,
    OPTIONAL,
    REQUIRED,
    SOURCE_CANN,
    Catalogue,
    CatalogueError,
    Entry,
    Library,
    catalogue_path,
    load_catalogue,
    load_catalogue_full,
    parse_catalogue,
    parse_catalogue_full,
    required_literals,
)
from msdoctor.explain.describe import Match, describe
from msdoctor.explain.parse import MAX_LINE, normalize, open_log, sniff_encoding
from msdoctor.explain.scan import (
    BLOCK_CHARS,
    explain_file,
    explain_lines,
    explain_stream,
    explain_text,
    iter_explain_stream,
)

__all__ = [
    "BLOCK_CHARS",
    "CATALOGUE",
    "CATEGORIES",
    "DEVICE_TARGETS",
    "KIND",
    "MAX_LINE",
    "OPTIONAL",
    "REQUIRED",
    "SOURCE_CANN",
    "Catalogue",
    "CatalogueError",
    "Entry",
    "Library",
    "Match",
    "catalogue_path",
    "describe",
    "explain_file",
    "explain_lines",
    "explain_stream",
    "explain_text",
    "iter_explain_stream",
    "load_catalogue",
    "load_catalogue_full",
    "normalize",
    "open_log",
    "parse_catalogue",
    "parse_catalogue_full",
    "required_literals",
    "sniff_encoding",
]
