"""Slurm: slurm.conf, gres.conf, topology.conf, cgroup.conf, hooks, the job script
(:mod:`.files`), and controllers, accounting and fair share (:mod:`.accounting`)."""
