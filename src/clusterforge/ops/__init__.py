"""Day two: node health checks, NVML/sysfs adapters, drain/cordon actions, the exporter.

Modules (imported directly; this package imports nothing so ``clusterforge plan`` stays light):

- ``readings``: plain dataclasses of what NVML, sysfs and the host reported
- ``nvml`` / ``nvml_pynvml``: the NVML interface, a never-hanging collector, recorded replay,
  and the real pynvml adapter
- ``sysfs``: InfiniBand/RoCE ports, ``ethtool -S``, mounts, memory, kernel log
- ``procfs`` / ``cgroups``: who a GPU process is (user, command, cgroup from ``/proc``) and
  which Slurm job or Kubernetes pod its cgroup belongs to
- ``ethernet``: which Ethernet/RoCE port counters (``ethtool -S``, RDMA ``hw_counters``) the
  exporter serves, under which metric names
- ``xid``: the XID policy (data/xid_policy.yaml) and the kernel-log parser
- ``expect``: what a node should look like, from the spec through the catalog
- ``checks``: verdicts (pass / warn / fail / unknown) from readings
- ``runner``: ``NodeChecker``: collect + judge within a time budget -> ``Report``
- ``options``: the frozen options of a check and of the exporter (``SourceOptions``,
  ``CheckOptions``, ``ExporterOptions``)
- ``checker``: ``build_checker``: every input read and validated once -> ``NodeChecker``
- ``state``: the previous run's counters for a one-shot check (a state file)
- ``actions``: Slurm drain/resume and Kubernetes cordon/taint with ownership and a breaker
- ``oneshot``: ``run_check``: one check with its state file, time budget and action
- ``exporter``: Prometheus metrics of the same checks, rendered once per run
- ``serve``: ``start_exporter``: the checks on their interval and the HTTP side
"""

__all__: list[str] = []
