#!/bin/sh
# Slurm HealthCheckProgram for cluster nvl72, written by `clusterforge generate`.
# Checks this node against the design and drains it when a check fails; a node that a
# person drained is never resumed by it.  Slurm kills this program after 60 s, so
# `clusterforge check` runs every check under its own time budget.
CLUSTERFORGE=/usr/local/bin/clusterforge
SPEC=/etc/clusterforge/spec.yaml
node="${SLURMD_NODENAME:-$(hostname -s)}"
exec "$CLUSTERFORGE" check --expect "$SPEC" --node "$node" --action slurm-drain
