#!/bin/sh
# Slurm Prolog for cluster nvl72, written by `clusterforge generate`.
# A quick node check around each job.  Exit 1 makes Slurm drain the node and requeue the job.
# Slurm's documentation advises exiting non-zero here rather than calling scontrol.
CLUSTERFORGE=/usr/local/bin/clusterforge
SPEC=/etc/clusterforge/spec.yaml
node="${SLURMD_NODENAME:-$(hostname -s)}"
"$CLUSTERFORGE" check --expect "$SPEC" --node "$node"
status=$?
# check exits 0 healthy, 1 unhealthy, 2 could not check: only a proven failure counts.
if [ "$status" -eq 1 ]; then
    exit 1
fi
exit 0
