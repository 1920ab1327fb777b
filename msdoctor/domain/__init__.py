"""Domain objects, each modelled once with one reader per input format, offered as facts.

* :mod:`msdoctor.domain.training_setup`: the training setup of ``--config`` (model shape incl. MoE, MLA and
  MTP; layout incl. expert parallel and interleaving; batch, precision, optimizer and its sharding,
  recompute), every field with the key and line it came from.
* :mod:`msdoctor.domain.stack`: the training stack, compat_matrix/stack.toml, each package with its role.
* :mod:`msdoctor.domain.problems`: what is wrong with a config (``Problem``, ``ConfigError``), as the readers
  and the memory estimator report it.
"""
