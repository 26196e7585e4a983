"""The node scripts and the training job script that the Slurm files call.

The health check, Prolog and Epilog hooks run ``clusterforge`` checks on the node (a failing
Prolog drains the node and requeues the job, a failing Epilog drains the node; slurm.conf(5));
``train.sbatch`` launches the spec's training job with its parallelism, NCCL environment and
``--switches`` for ``topology/tree`` (sbatch(1)).
"""

from __future__ import annotations

import shlex

from clusterforge.design import Design
from clusterforge.generate.common import GeneratedFile, checked_name, render_template
from clusterforge.generate.layout import switch_tree
from clusterforge.generate.slurm.gres import gres_type
from clusterforge.generate.slurm.topology import Placement
from clusterforge.generate.spec_copy import SPEC_PATH
from clusterforge.generate.training.launch import RENDEZVOUS_PORT, launch_plan

__all__ = [
    "CLUSTERFORGE_PATH",
    "slurm_scripts",
]

CLUSTERFORGE_PATH = "/usr/local/bin/clusterforge"


def _parallelism(design: Design) -> str:
    _, job = design.require_workload("the training job script")
    return f"TP={job.tp} PP={job.pp} CP={job.cp} EP={job.ep} DP={job.dp}"


def _job_script(design: Design, how: Placement) -> str:
    tree = switch_tree(design)
    biggest_group = max(len(s.nodes) for s in tree if s.level == 0)
    launch = launch_plan(design, biggest_group)
    # --switches counts leaf switches of topology/tree (sbatch(1)); blocks place by themselves.
    switches = None if how.block else launch.num_leaf_groups
    return render_template(
        "slurm/train.sbatch.j2",
        cluster=checked_name(design.spec.name, "cluster name"),
        script_name="train.sbatch",
        job_name=checked_name(launch.job_name, "job name"),
        partition="gpu",
        num_nodes=launch.num_nodes,
        gpus_per_node=launch.gpus_per_node,
        num_gpus=launch.num_gpus,
        parallelism=_parallelism(design),
        gres_type=gres_type(design.compute.gpu),
        num_leaf_groups=switches,
        fabric=checked_name(design.fabric.fabric, "fabric"),
        nccl_env=[(k, shlex.quote(v)) for k, v in launch.nccl_env],
        notes=list(launch.notes),
        rendezvous_port=RENDEZVOUS_PORT,
        train_args=[shlex.quote(a) for a in launch.train_args],
    )


def slurm_scripts(design: Design, how: Placement) -> list[GeneratedFile]:
    common = dict(
        cluster=checked_name(design.spec.name, "cluster name"),
        clusterforge_path=shlex.quote(CLUSTERFORGE_PATH),
        spec_path=shlex.quote(SPEC_PATH),
    )
    return [
        GeneratedFile(
            "slurm/clusterforge-healthcheck.sh",
            render_template("slurm/healthcheck.sh.j2", **common),
            0o755,
        ),
        GeneratedFile(
            "slurm/clusterforge-prolog.sh",
            render_template(
                "slurm/hook.sh.j2",
                hook="Prolog",
                consequence="drain the node and requeue the job",
                **common,
            ),
            0o755,
        ),
        GeneratedFile(
            "slurm/clusterforge-epilog.sh",
            render_template(
                "slurm/hook.sh.j2", hook="Epilog", consequence="drain the node", **common
            ),
            0o755,
        ),
        # A spec without a workload gets the cluster's files but no training job script.
        *(
            [GeneratedFile("slurm/train.sbatch", _job_script(design, how), 0o755)]
            if design.job
            else []
        ),
    ]
