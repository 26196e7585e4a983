"""Rehearse a design end to end on one machine: an emulated Slurm cluster from the generated
files, then acceptance and failure drills, each reported with its evidence and timing."""
