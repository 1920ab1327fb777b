"""Entry script of the trainer: ``python training/run.py --config ... --run-dir ...``.

msrun starts workers as ``python <script> <args>`` (no ``-m``), and the target interpreter need
not have msdoctor installed, so this script loads the training package from its own directory
under a private name, with the same code as the msdoctor that ran the gate.
"""

import importlib.util
import os
import signal
import sys

# first, before any thread exists: SIGINT/SIGTERM blocked here are taken by one thread of the
# trainer (training/lifecycle.py), so MindSpore's own SIGINT handler never turns Ctrl-C into SIGTERM
if hasattr(signal, "pthread_sigmask"):
    signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGINT, signal.SIGTERM))

_HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = "_msdoctor_training"


def _load():
    spec = importlib.util.spec_from_file_location(
        _NAME, os.path.join(_HERE, "__init__.py"), submodule_search_locations=[_HERE]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = package
    spec.loader.exec_module(package)
    return importlib.import_module(_NAME + ".train")


if __name__ == "__main__":
    sys.exit(_load().main())
