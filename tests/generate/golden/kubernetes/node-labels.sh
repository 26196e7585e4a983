#!/bin/sh
# Node labels of cluster lab (rack, leaf group, spine block, NVLink block, role),
# written by `clusterforge generate`.  Kueue's Topology and Volcano's HyperNodes select
# nodes by these labels.  Run once with a kubeconfig that may label nodes.
set -eu
KUBECTL="${KUBECTL:-kubectl}"
while read -r node labels; do
    # shellcheck disable=SC2086  # labels are separate words on purpose
    "$KUBECTL" label node --overwrite "$node" $labels
done <<'NODES'
gpu-0001 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=training clusterforge.io/leaf-group=leaf-0001 clusterforge.io/rails=8 clusterforge.io/rack=r001-01 clusterforge.io/spine-block=spines
gpu-0002 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=training clusterforge.io/leaf-group=leaf-0001 clusterforge.io/rails=8 clusterforge.io/rack=r001-01 clusterforge.io/spine-block=spines
gpu-0003 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=training clusterforge.io/leaf-group=leaf-0001 clusterforge.io/rails=8 clusterforge.io/rack=r001-01 clusterforge.io/spine-block=spines
gpu-0004 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=training clusterforge.io/leaf-group=leaf-0001 clusterforge.io/rails=8 clusterforge.io/rack=r001-03 clusterforge.io/spine-block=spines
gpu-0005 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=training clusterforge.io/leaf-group=leaf-0002 clusterforge.io/rails=8 clusterforge.io/rack=r001-05 clusterforge.io/spine-block=spines
gpu-0006 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=training clusterforge.io/leaf-group=leaf-0002 clusterforge.io/rails=8 clusterforge.io/rack=r001-05 clusterforge.io/spine-block=spines
gpu-0007 clusterforge.io/cluster=lab clusterforge.io/gpu=h100 clusterforge.io/role=spare clusterforge.io/leaf-group=leaf-0002 clusterforge.io/rails=8 clusterforge.io/rack=r001-05 clusterforge.io/spine-block=spines
NODES
