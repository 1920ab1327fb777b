"""Static reading of model registries (transformers, MindNLP, MindFormers): built-in names and registrations.

Nothing here imports the libraries or the user's code: every name comes from ``ast``.

* :mod:`.parse`: one source file -> :class:`~.parse.ModuleFacts` (imports, constants, classes,
  ``*.register(...)`` calls and decorators, literal mapping tables).
* :mod:`.sources`: a set of files (the user's project, or one installed distribution), parsed
  lazily with a cache, and the registrations found in it with names resolved across modules.
* :mod:`.builtins`: the names an installed transformers / MindNLP / MindFormers already owns.
"""
