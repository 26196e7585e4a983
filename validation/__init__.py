"""Published figures as data, and the loaders that set clusterforge's models against them.

Each TOML file holds the rows of one source, each row with its citation and its set
(:mod:`validation.sets`): ``calibration`` (constants may be fitted on these rows),
``development`` (errors may guide mechanisms) or ``heldout`` (frozen when added and locked in
``heldout.lock.toml`` by :mod:`validation.heldout`, scored only as a whole, never used to
choose a mechanism or a constant). ``docs/validation.md`` describes the rules.

* :mod:`validation.runs`: published training runs (``*_runs.toml``, the papers' tables and
  the framework recipes) and their predictions by ``clusterforge.perf`` on designed clusters.
* :mod:`validation.nccl_rows`: published nccl-tests results
  (``nccl_tests_published.toml``, ``pub_*_nccl.toml``) and their simulation by
  ``clusterforge.netsim``.
* :mod:`validation.goodput_rows`: published job-level reliability figures
  (``goodput_published.toml``) and their model by ``clusterforge.goodput``.
* :mod:`validation.memory_rows`: published peak memory per GPU of training runs
  (``pub_*_mem.toml``) and the memory ``clusterforge.perf`` predicts for them.
* :mod:`validation.band`: the 80 % range ``predict`` prints, from calibration and
  development runs only.

The tests under ``tests/validation`` hold the tolerances; ``benchmarks/validate_*.py``
print the calibration and development tables (held-out only as a whole, with ``--heldout``),
and ``benchmarks/validate_predict.py --write`` derives the prediction band the package ships
(``clusterforge/perf/data/uncertainty.toml``).
"""
