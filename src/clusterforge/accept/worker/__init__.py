"""The acceptance worker: what runs on each node, started by the scheduler.

``python -m clusterforge.accept.worker node|collective|net [options]`` (:mod:`.__main__`)

Every result is one line ``CFACCEPT {json}`` on stdout, so that the launcher can collect
them from the job's output whatever else the tools print.  The worker never decides a
verdict: it measures and reports (:mod:`.records`); targets and verdicts live in
:mod:`clusterforge.accept.suite`.

- ``node``: dense GEMM throughput (torch on the GPU, bf16; numpy on the CPU when there is
  no GPU), memory copy bandwidth, a burn-in that checks every result against the first
  (a burn tool's exit code is not evidence), fio on the storage path, ``dcgmi diag``.
- ``collective``: torch.distributed collectives over all ranks (NCCL on GPUs, gloo on
  CPUs), sizes doubling, timed like nccl-tests: the slowest rank's time, algbw = size/time
  and busbw = algbw x the collective's factor (nccl-tests ``doc/PERFORMANCE.md``), with a
  check of the reduced values.
- ``net``: iperf3 from this node to the next one in the list (in-band network).
"""
