"""Host issue time against GPU time of one MoE layer's forward, per development MoE run.

For every development run with experts, prints the chosen plan's GPU forward time of one
layer and micro-batch (compute plus half the exposed TP/CP/EP communication), the host
issue time of that forward (:func:`clusterforge.perf.host.moe_forward_host_s`), and the
gap the published throughput leaves per layer and micro-batch
((published step - predicted step) / (micro-batches x layers of the slowest stage)). The
host floor binds only where host > GPU; the gap says how much is left to explain.

Two more columns test whether the gap is a fixed cost per layer and micro-batch: the gap
per token of the micro-batch (us) and the gap as a share of the predicted GPU time of the
layer (forward + backward + recomputation). A fixed cost would keep the first column's
parent (ms per layer) flat across micro-batch sizes; a cost of the layer's GPU work keeps
the last column flat instead.

The last three columns ask whether the EP all-to-all could be the gap: ``ep/step`` is the
modelled share of the step in EP communication, ``a2a GB/s`` the modelled busbw (nccl-tests
convention, ``(n - 1) / n`` of the algorithm bandwidth) of one token all-to-all, and
``need GB/s`` the busbw that all-to-all would have to fall to for its four calls per layer
and micro-batch (dispatch and combine, forward and backward) to absorb the whole gap.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_host_floor.py

Development rows only (never held-out).
"""

from __future__ import annotations

from benchmarks.moe_gap_per_copy import moe_development_gaps

from clusterforge.perf.compute import layer_times
from clusterforge.perf.exposure import layer_comm
from clusterforge.perf.host import host_cpu, moe_forward_host_s
from clusterforge.perf.parallel import rank_groups
from clusterforge.perf.roofline import gpu_perf
from validation.runs import run_comm, run_design


def main() -> None:
    print(
        f"{'run':40s} {'host':5s} {'gpu fwd ms':>10s} {'host ms':>8s} {'gap ms/layer':>12s}"
        f" {'gap us/token':>12s} {'gap/gpu':>7s} {'ep/step':>7s} {'a2a GB/s':>8s}"
        f" {'need GB/s':>9s}"
    )
    for run, pred, gap in moe_development_gaps():
        design = run_design(run)
        gpu = design.compute.gpu
        if run.gpu:
            gpu = gpu.model_copy(update=dict(run.gpu))
        plan = pred.plan
        times = layer_times(run.arch, plan, gpu_perf(gpu, plan.precision), run.stack)
        comm = layer_comm(
            run.arch,
            plan,
            times,
            run_comm(design),
            run.stack,
            design.compute.nvlink_domain_gpus,
            gpu=gpu,
        )
        gpu_fwd = times.forward_s + 0.5 * (comm.tp_s + comm.cp_s + comm.ep_s)
        cpu = host_cpu(gpu)
        local_experts = max(1, run.arch.num_experts // plan.layout.ep)
        host = moe_forward_host_s(run.arch, run.stack, cpu, local_experts)
        tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
        gpu_layer = times.total_s + comm.tp_s + comm.cp_s + comm.ep_s
        ep = plan.layout.ep
        a2a_bytes = tokens * run.arch.top_k * run.arch.hidden_size * 2.0 / plan.layout.tp
        a2a_s = run_comm(design).collective_time_s("all_to_all", a2a_bytes, rank_groups(plan, "ep"))
        busbw = (ep - 1) / ep / 1e9
        print(
            f"{run.name:40s} {cpu:5s} {gpu_fwd * 1e3:10.2f} {host * 1e3:8.2f} {gap * 1e3:12.2f}"
            f" {gap / tokens * 1e6:12.3f} {gap / gpu_layer:7.2f}"
            f" {pred.breakdown.ep_comm_s / pred.step_time_s:7.2f} {a2a_bytes / a2a_s * busbw:8.0f}"
            f" {a2a_bytes / (a2a_s + gap / 4) * busbw:9.0f}"
        )


if __name__ == "__main__":
    main()
