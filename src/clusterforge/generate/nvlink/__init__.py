"""NVLink domains that span nodes: IMEX setup for Slurm and a Kubernetes ComputeDomain
(:mod:`.imex`)."""
