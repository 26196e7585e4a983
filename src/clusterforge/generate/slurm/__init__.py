"""Slurm: slurm.conf and the whole bundle (:mod:`.files`), gres.conf (:mod:`.gres`),
topology.conf and job placement (:mod:`.topology`), the hooks and the job script
(:mod:`.scripts`), and controllers, accounting and fair share (:mod:`.accounting`)."""
