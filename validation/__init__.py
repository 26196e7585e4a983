"""Published figures as data, and the loaders that set clusterforge's models against them.

Each TOML file holds the rows of one source, each row with its citation and its set:
``calibration`` (constants may be fitted on these rows) or ``heldout`` (frozen when added,
evaluated as a whole, never used to choose a mechanism or a constant).

* :mod:`validation.runs`: published training runs (``*_runs.toml``, the papers' tables and
  the framework recipes) and their predictions by ``clusterforge.perf`` on designed clusters.
* :mod:`validation.nccl_rows`: published nccl-tests results
  (``nccl_tests_published.toml``) and their simulation by ``clusterforge.netsim``.
* :mod:`validation.goodput_rows`: published job-level reliability figures
  (``goodput_published.toml``) and their model by ``clusterforge.goodput``.

The tests under ``tests/validation`` hold the tolerances; ``benchmarks/validate_*.py``
print the full tables, and ``benchmarks/validate_predict.py --write`` derives the prediction
band the package ships (``clusterforge/perf/data/uncertainty.toml``).
"""
