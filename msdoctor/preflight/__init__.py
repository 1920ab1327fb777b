"""``msdoctor preflight``: the msrun task that checks every rank of a multi-node job, and its plan check.

- :mod:`.identity`   who this process is, from msrun's environment (never get_local_rank())
- :mod:`.patterns`   position-dependent collective inputs and their expected results (pure)
- :mod:`.bandwidth`  nccl-tests' algbw / busbw formulas, the size sweep plan, baselines (pure)
- :mod:`.wire`       the two-level gather (node, then leaders; each distinct environment once; no pickle)
- :mod:`.ranktask`   what runs on each rank under msrun (imports MindSpore)
- :mod:`.cluster`    rank 0's verdict from every rank's JSON (pure): findings, report, table
- :mod:`.schedlog`   which nodes never registered, from msrun's scheduler.log
- :mod:`.plan`       ``--plan``: the msrun arguments, address, port and interpreter, before msrun
- :mod:`.launch`     running msrun with the preflight task (bounded, process group, scheduler.log)
"""
