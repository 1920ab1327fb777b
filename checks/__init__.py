"""Built-in checks (installed as msdoctor.checks), registered through the msdoctor.checks entry-point group.

One sub-package per check, named after the check id with underscores (device-target: device_target/).
The package's ``__init__`` holds the check class and its ``evaluate``; the sibling modules hold the
rules it applies, so ``msdoctor.checks.<id>:<Class>`` is the entry point and nothing else loads until
the check runs.
"""
