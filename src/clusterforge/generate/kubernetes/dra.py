"""NVIDIA's DRA driver for GPUs, for designs whose NVLink domain spans nodes (GB200/GB300 NVL72).

The training job's ``ComputeDomain`` (``resource.nvidia.com``, :mod:`clusterforge.generate.nvlink
.imex`) exists only once the driver's Helm chart ``nvidia-dra-driver-gpu`` is installed: it
brings the CRD, the controller that turns a ComputeDomain into a ResourceClaimTemplate, and the
kubelet plugin that runs the IMEX daemon on each node of the domain (k8s-dra-driver-gpu README,
"ComputeDomains"; chart ``values.yaml``).

Values (chart ``values.yaml`` and ``templates/validation.yaml`` of release 25.12.0):

* ``nvidiaDriverRoot: /run/nvidia/driver`` -- the GPU Operator installs the driver as a
  container, which mounts it there (the chart's default ``/`` is for a driver on the host).
* ``resources.computeDomains.enabled: true`` and ``resources.gpus.enabled: false`` -- GPUs
  stay with the GPU Operator's device plugin (``nvidia.com/gpu``, which Kueue's quota counts);
  the chart refuses GPU allocation beside that plugin unless overridden.

Kubernetes: the chart installs on 1.32 or later (``kubeVersion``); before 1.34 DRA is beta
and must be switched on (the DynamicResourceAllocation feature gate and the
``resource.k8s.io`` beta API); from 1.34 it is GA and on by default.
"""

from __future__ import annotations

from typing import Any

from clusterforge.generate.kubernetes.versions import DRA_DRIVER

__all__ = ["DRA_CHART", "DRA_NAMESPACE", "DRA_VALUES_FILE", "dra_driver_values", "dra_install"]

DRA_CHART = "nvidia/nvidia-dra-driver-gpu"
DRA_NAMESPACE = "nvidia-dra-driver-gpu"
DRA_VALUES_FILE = "nvidia-dra-driver-gpu-values.yaml"
GPU_OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"


def dra_driver_values() -> dict[str, Any]:
    """Helm values: ComputeDomains only, on the GPU Operator's containerized driver."""
    return {
        "nvidiaDriverRoot": GPU_OPERATOR_DRIVER_ROOT,
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
    }


def dra_install() -> str:
    """The Helm command that installs the driver with :data:`DRA_VALUES_FILE`."""
    return (
        f"helm install nvidia-dra-driver-gpu {DRA_CHART} --version {DRA_DRIVER.version} "
        f"-n {DRA_NAMESPACE} --create-namespace -f {DRA_VALUES_FILE}"
    )
