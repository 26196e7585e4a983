"""Kubernetes manifests: core kinds against the Kubernetes schemas (kubernetes-validate,
offline, at the Kubernetes version the files target), CRDs (Kueue, Volcano, PyTorchJob,
NicClusterPolicy, IPoIBNetwork, MacvlanNetwork, nv-ipam IPPool, ComputeDomain) against
structural schemas written from their documented fields (each project's API reference), pod
templates inside CRDs against the core PodTemplate schema, the RDMA path (device resource per
rail, rail networks, IPC_LOCK, GPUDirect), the kustomization built by ``kubectl kustomize``,
and the node-label script executed with a recording kubectl."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from clusterforge.design import Design, plan
from clusterforge.generate import render, write_files
from clusterforge.generate.kubernetes.files import topology_levels, training_image
from clusterforge.generate.kubernetes.rdma import K8S_MAX_NODES, scale_warnings
from clusterforge.generate.kubernetes.versions import GPU_OPERATOR, KUBERNETES, components
from clusterforge.generate.layout import node_placements
from clusterforge.generate.notices import generation_warnings
from clusterforge.spec import load_spec
from tests.generate.conftest import GOLDEN_SPEC, MULTI_PLANE_SPEC, SPECS

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="pip install kubernetes-validate"
)
K8S_VERSION = KUBERNETES.version

_NAME = {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"}
_META = {"type": "object", "required": ["name"], "properties": {"name": _NAME}}
_QUANTITY = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": r"^\d+(Ki|Mi|Gi|Ti)?$"},
    ]
}


# Network Operator API v1alpha1 (api/v1alpha1 of the release): ImageSpec, IPoIBNetworkSpec and
# MacvlanNetworkSpec; nv-ipam's IPPool spec.
_IMAGE: dict[str, Any] = {
    "type": "object",
    "required": ["image", "repository", "version"],
    "additionalProperties": False,
    "properties": {
        "image": {"type": "string", "pattern": "^[a-zA-Z0-9-]+$"},
        "repository": {"type": "string", "pattern": "^[a-zA-Z0-9./-]+$"},
        "version": {"type": "string"},
    },
}


def _network_spec(extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["networkNamespace", "master", "ipam"],
        "additionalProperties": False,
        "properties": {
            "networkNamespace": _NAME,
            "master": {"type": "string", "minLength": 1},
            "ipam": {"type": "string"},
            **extra,
        },
    }


def _crd(spec: dict[str, Any], namespaced: bool = False) -> dict[str, Any]:
    meta = dict(_META, required=["name", "namespace"]) if namespaced else _META
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": meta,
            "spec": spec,
        },
        "additionalProperties": False,
    }


CRD_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("kueue.x-k8s.io/v1beta1", "Topology"): _crd(
        {
            "type": "object",
            "required": ["levels"],
            "additionalProperties": False,
            "properties": {
                "levels": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 16,
                    "items": {
                        "type": "object",
                        "required": ["nodeLabel"],
                        "additionalProperties": False,
                        "properties": {"nodeLabel": {"type": "string"}},
                    },
                }
            },
        }
    ),
    ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"): _crd(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "nodeLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                "topologyName": _NAME,
            },
        }
    ),
    ("kueue.x-k8s.io/v1beta1", "ClusterQueue"): _crd(
        {
            "type": "object",
            "required": ["resourceGroups"],
            "additionalProperties": False,
            "properties": {
                "namespaceSelector": {"type": "object"},
                "resourceGroups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["coveredResources", "flavors"],
                        "additionalProperties": False,
                        "properties": {
                            "coveredResources": {"type": "array", "items": {"type": "string"}},
                            "flavors": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["name", "resources"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "name": _NAME,
                                        "resources": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "required": ["name", "nominalQuota"],
                                                "additionalProperties": False,
                                                "properties": {
                                                    "name": {"type": "string"},
                                                    "nominalQuota": _QUANTITY,
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        }
    ),
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): _crd(
        {
            "type": "object",
            "required": ["clusterQueue"],
            "additionalProperties": False,
            "properties": {"clusterQueue": _NAME},
        },
        namespaced=True,
    ),
    ("scheduling.volcano.sh/v1beta1", "Queue"): _crd(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "weight": {"type": "integer", "minimum": 1},
                "reclaimable": {"type": "boolean"},
                "capability": {"type": "object", "additionalProperties": _QUANTITY},
            },
        }
    ),
    ("topology.volcano.sh/v1alpha1", "HyperNode"): _crd(
        {
            "type": "object",
            "required": ["tier", "members"],
            "additionalProperties": False,
            "properties": {
                "tier": {"type": "integer", "minimum": 1},
                "members": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "selector"],
                        "additionalProperties": False,
                        "properties": {
                            "type": {"enum": ["Node", "HyperNode"]},
                            "selector": {
                                "type": "object",
                                "minProperties": 1,
                                "maxProperties": 1,
                                "properties": {
                                    "exactMatch": {"type": "object", "required": ["name"]},
                                    "regexMatch": {"type": "object"},
                                    "labelMatch": {"type": "object"},
                                },
                                "additionalProperties": False,
                            },
                        },
                    },
                },
            },
        }
    ),
    ("mellanox.com/v1alpha1", "NicClusterPolicy"): _crd(
        {
            "type": "object",
            "required": ["rdmaSharedDevicePlugin", "secondaryNetwork", "nvIpam"],
            "additionalProperties": False,
            "properties": {
                "rdmaSharedDevicePlugin": dict(_IMAGE, required=[*_IMAGE["required"], "config"])
                | {"properties": {**_IMAGE["properties"], "config": {"type": "string"}}},
                "secondaryNetwork": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {k: _IMAGE for k in ("multus", "cniPlugins", "ipoib")},
                },
                "nvIpam": _IMAGE
                | {"properties": {**_IMAGE["properties"], "enableWebhook": {"type": "boolean"}}},
            },
        }
    ),
    ("mellanox.com/v1alpha1", "IPoIBNetwork"): _crd(_network_spec({})),
    ("mellanox.com/v1alpha1", "MacvlanNetwork"): _crd(
        _network_spec(
            {
                "mode": {"enum": ["bridge", "private", "vepa", "passthru"]},
                "mtu": {"type": "integer", "minimum": 0},
            }
        )
    ),
    ("nv-ipam.nvidia.com/v1alpha1", "IPPool"): _crd(
        {
            "type": "object",
            "required": ["subnet", "perNodeBlockSize"],
            "additionalProperties": False,
            "properties": {
                "subnet": {"type": "string", "pattern": r"^\d+\.\d+\.\d+\.\d+/\d+$"},
                "perNodeBlockSize": {"type": "integer", "minimum": 1},
                "gateway": {"type": "string"},
            },
        },
        namespaced=True,
    ),
    ("resource.nvidia.com/v1beta1", "ComputeDomain"): _crd(
        {
            "type": "object",
            "required": ["numNodes", "channel"],
            "additionalProperties": False,
            "properties": {
                "numNodes": {"type": "integer", "minimum": 1},
                "channel": {
                    "type": "object",
                    "required": ["resourceClaimTemplate"],
                    "additionalProperties": False,
                    "properties": {
                        "resourceClaimTemplate": {
                            "type": "object",
                            "required": ["name"],
                            "additionalProperties": False,
                            "properties": {"name": _NAME},
                        }
                    },
                },
            },
        },
        namespaced=True,
    ),
    ("kubeflow.org/v1", "PyTorchJob"): _crd(
        {
            "type": "object",
            "required": ["pytorchReplicaSpecs"],
            "properties": {
                "pytorchReplicaSpecs": {
                    "type": "object",
                    "required": ["Master"],
                    "additionalProperties": False,
                    "properties": {
                        role: {
                            "type": "object",
                            "required": ["replicas", "template"],
                            "additionalProperties": False,
                            "properties": {
                                "replicas": {"type": "integer", "minimum": 1},
                                "restartPolicy": {
                                    "enum": ["Always", "OnFailure", "Never", "ExitCode"]
                                },
                                "template": {"type": "object"},
                            },
                        }
                        for role in ("Master", "Worker")
                    },
                }
            },
        },
        namespaced=True,
    ),
}


@pytest.fixture(scope="module", params=[GOLDEN_SPEC, MULTI_PLANE_SPEC], ids=lambda p: p.stem)
def k8s_design(request: pytest.FixtureRequest) -> Design:
    """The lab design, and a dual-plane one: same node groups, a leaf per plane."""
    return plan(load_spec(request.param))


@pytest.fixture(scope="module")
def manifests(
    k8s_design: Design, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("cfgen-k8s")
    write_files(render(k8s_design, ["kubernetes"]), out)
    docs = {}
    for path in sorted((out / "kubernetes").glob("*.yaml")):
        if not path.name.endswith("-values.yaml") and path.name != "kustomization.yaml":
            docs[path.name] = list(yaml.safe_load_all(path.read_text()))
    return docs


def _all(manifests: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [doc for docs in manifests.values() for doc in docs]


def test_core_objects_pass_the_kubernetes_schemas(
    manifests: dict[str, list[dict[str, Any]]],
) -> None:
    core = [d for d in _all(manifests) if (d["apiVersion"], d["kind"]) not in CRD_SCHEMAS]
    assert {d["kind"] for d in core} >= {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "DaemonSet",
        "NetworkPolicy",
    }
    for doc in core:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_crds_are_structurally_valid(manifests: dict[str, list[dict[str, Any]]]) -> None:
    crds = [d for d in _all(manifests) if (d["apiVersion"], d["kind"]) in CRD_SCHEMAS]
    # The lab designs are InfiniBand HGX: no ComputeDomain, IPoIB rather than macvlan.
    expected = {k for _, k in CRD_SCHEMAS} - {"ComputeDomain", "MacvlanNetwork"}
    assert {d["kind"] for d in crds} == expected
    for doc in crds:
        jsonschema.validate(doc, CRD_SCHEMAS[(doc["apiVersion"], doc["kind"])])


def test_training_pod_template_is_a_valid_pod_template(
    manifests: dict[str, list[dict[str, Any]]],
) -> None:
    job = manifests["training-job.yaml"][0]
    for role, replica in job["spec"]["pytorchReplicaSpecs"].items():
        wrapped = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": role.lower()},
            "template": replica["template"],
        }
        kubernetes_validate.validate(wrapped, K8S_VERSION, strict=True)
        container = replica["template"]["spec"]["containers"][0]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 8


def test_job_and_queues_match_the_design(
    manifests: dict[str, list[dict[str, Any]]], k8s_design: Design
) -> None:
    job = manifests["training-job.yaml"][0]["spec"]["pytorchReplicaSpecs"]
    assert (
        job["Master"]["replicas"] + job["Worker"]["replicas"]
        == k8s_design.compute.num_training_nodes
    )
    queue = next(d for d in manifests["kueue.yaml"] if d["kind"] == "ClusterQueue")
    quota = {
        r["name"]: r["nominalQuota"]
        for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert quota["nvidia.com/gpu"] == k8s_design.compute.num_training_gpus


def test_agent_rbac_is_least_privilege(manifests: dict[str, list[dict[str, Any]]]) -> None:
    role = next(d for d in manifests["health-agent.yaml"] if d["kind"] == "ClusterRole")
    granted = {
        (res, verb) for rule in role["rules"] for res in rule["resources"] for verb in rule["verbs"]
    }
    assert granted <= {("nodes", v) for v in ("get", "list", "patch")} | {
        ("events", v) for v in ("create", "patch")
    }
    assert not any("*" in str(rule) for rule in role["rules"])
    daemonset = next(d for d in manifests["health-agent.yaml"] if d["kind"] == "DaemonSet")
    check = daemonset["spec"]["template"]["spec"]["containers"][0]
    assert "--action k8s-taint" in check["args"][0] and '--node "$NODE_NAME"' in check["args"][0]


def test_agent_sees_the_host_pids_nvml_reports(
    manifests: dict[str, list[dict[str, Any]]],
) -> None:
    """The GPU process check looks up NVML's (host) PIDs in /proc: the pod shares the host's
    PID namespace."""
    daemonset = next(d for d in manifests["health-agent.yaml"] if d["kind"] == "DaemonSet")
    assert daemonset["spec"]["template"]["spec"]["hostPID"] is True


def test_topology_levels_are_labels_the_script_sets(
    manifests: dict[str, list[dict[str, Any]]], k8s_design: Design, tmp_path: Path
) -> None:
    """Run node-labels.sh with a recording kubectl; Kueue and Volcano must select those labels."""
    files = {f.path: f for f in render(k8s_design, ["kubernetes"])}
    script = tmp_path / "node-labels.sh"
    script.write_text(files["kubernetes/node-labels.sh"].content)
    log = tmp_path / "kubectl.log"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    fake.chmod(0o755)
    subprocess.run(
        ["sh", str(script)], check=True, env={"KUBECTL": str(fake), "PATH": "/usr/bin:/bin"}
    )
    calls = log.read_text().splitlines()
    assert len(calls) == k8s_design.compute.num_nodes
    labels: dict[str, dict[str, str]] = {}
    for call in calls:
        words = call.split()
        assert words[:3] == ["label", "node", "--overwrite"]
        labels[words[3]] = dict(w.split("=", 1) for w in words[4:])
    topology = next(d for d in manifests["kueue.yaml"] if d["kind"] == "Topology")
    for level in topology["spec"]["levels"][:-1]:
        assert all(level["nodeLabel"] in node_labels for node_labels in labels.values())
    assert topology["spec"]["levels"][-1]["nodeLabel"] == "kubernetes.io/hostname"
    for p in node_placements(k8s_design):
        assert labels[p.name]["clusterforge.io/leaf-group"] == p.group
        assert labels[p.name]["clusterforge.io/rack"] == p.rack
    groups = {
        h["metadata"]["name"]
        for h in manifests["volcano.yaml"]
        if h["kind"] == "HyperNode" and h["spec"]["tier"] == 1
    }
    assert groups == {p.group for p in node_placements(k8s_design)}


def test_nvl72_topology_has_the_rack_scale_nvlink_level() -> None:
    """Kueue's NVLink level follows the racks, and every level nests in the one above."""
    design = plan(load_spec(SPECS / "gb200-nvl72.yaml"))
    placements = [p for p in node_placements(design) if not p.spare]
    levels = topology_levels(design, placements)
    assert "clusterforge.io/nvlink-block" in levels
    racks_of_block: dict[str | None, set[str | None]] = {}
    for p in placements:
        racks_of_block.setdefault(p.nvlink_block, set()).add(p.rack)
    assert all(len(racks) == 1 for racks in racks_of_block.values())
    keys = {
        "clusterforge.io/spine-block": lambda p: p.pod,
        "clusterforge.io/leaf-group": lambda p: p.group,
        "clusterforge.io/nvlink-block": lambda p: p.nvlink_block,
    }
    for coarse, fine in itertools.pairwise(levels[:-1]):
        parents: dict[str | None, set[str | None]] = {}
        for p in placements:
            parents.setdefault(keys[fine](p), set()).add(keys[coarse](p))
        assert all(len(v) == 1 for v in parents.values()), (coarse, fine)


def test_nvl72_job_gets_a_compute_domain_and_claims_its_channel() -> None:
    design = plan(load_spec(SPECS / "gb200-nvl72.yaml"))
    files = {f.path: f.content for f in render(design, ["kubernetes"])}
    domain, job = yaml.safe_load_all(files["kubernetes/training-job.yaml"])
    assert domain["kind"] == "ComputeDomain"
    assert domain["spec"]["numNodes"] == design.compute.num_training_nodes
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    for role, replica in job["spec"]["pytorchReplicaSpecs"].items():
        pod = replica["template"]["spec"]
        # Pod-level resource claims are part of the core PodSpec at the targeted version.
        wrapped = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": role.lower()},
            "template": replica["template"],
        }
        kubernetes_validate.validate(wrapped, K8S_VERSION, strict=True)
        assert pod["resourceClaims"] == [
            {"name": "imex-channel", "resourceClaimTemplateName": template}
        ]
        assert pod["containers"][0]["resources"]["claims"] == [{"name": "imex-channel"}]


def test_hgx_job_has_no_compute_domain(manifests: dict[str, list[dict[str, Any]]]) -> None:
    assert [d["kind"] for d in manifests["training-job.yaml"]] == ["PyTorchJob"]


def test_training_pods_get_rdma_devices_and_ipc_lock(
    manifests: dict[str, list[dict[str, Any]]],
) -> None:
    job = manifests["training-job.yaml"][-1]
    policy = manifests["network-operator.yaml"][0]
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    resource = "rdma/" + config["configList"][0]["resourceName"]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        assert container["resources"]["limits"][resource] == 1
        assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"]


def test_cluster_queue_covers_every_resource_the_pods_request(
    manifests: dict[str, list[dict[str, Any]]],
) -> None:
    """Kueue admits a workload only when its ClusterQueue covers each requested resource."""
    queue = next(d for d in manifests["kueue.yaml"] if d["kind"] == "ClusterQueue")
    covered = set(queue["spec"]["resourceGroups"][0]["coveredResources"])
    job = manifests["training-job.yaml"][-1]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            assert set(container["resources"]["limits"]) <= covered


def test_gpu_operator_enables_gpudirect_rdma(k8s_design: Design) -> None:
    files = {f.path: f.content for f in render(k8s_design, ["kubernetes"])}
    values = yaml.safe_load(files["kubernetes/gpu-operator-values.yaml"])
    driver = values["driver"]
    assert driver["kernelModuleType"] == "open" or driver["rdma"]["enabled"] is True


def test_roce_training_pods_get_a_macvlan_network_per_rail() -> None:
    """RoCE pods take their RDMA address (and so their GID) from a macvlan on each rail, not
    from the host network; the host's GID index does not hold in the pod, NCCL picks by range."""
    design = plan(load_spec(SPECS / "roce-rail-optimized.yaml"))
    files = {f.path: f.content for f in render(design, ["kubernetes"])}
    networks = list(yaml.safe_load_all(files["kubernetes/rail-networks.yaml"]))
    macvlans = [n for n in networks if n["kind"] == "MacvlanNetwork"]
    assert len(macvlans) == design.fabric.nics_per_node
    for doc in networks:
        jsonschema.validate(doc, CRD_SCHEMAS[(doc["apiVersion"], doc["kind"])])
    job = list(yaml.safe_load_all(files["kubernetes/training-job.yaml"]))[-1]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]
        assert "hostNetwork" not in pod["spec"]
        names = pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(", ")
        assert names == [n["metadata"]["name"] for n in macvlans]
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert "NCCL_IB_GID_INDEX" not in env
        assert env["NCCL_IB_ADDR_FAMILY"] == "AF_INET"


def test_rdma_pool_holds_exactly_the_compute_port_of_each_rail(
    manifests: dict[str, list[dict[str, Any]]], k8s_design: Design
) -> None:
    """The device plugin selects the compute ports by interface name (one per rail, from the
    catalog), never every Mellanox function; each rail has an IPoIB network on that port."""
    policy = manifests["network-operator.yaml"][0]
    (entry,) = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]
    expected = k8s_design.compute.node.compute_ib_netdev_names
    assert entry["selectors"] == {"ifNames": expected}
    assert len(expected) == k8s_design.fabric.nics_per_node
    networks = [d for d in manifests["rail-networks.yaml"] if d["kind"] == "IPoIBNetwork"]
    assert [n["spec"]["master"] for n in networks] == expected
    pools = {
        d["metadata"]["name"] for d in manifests["rail-networks.yaml"] if d["kind"] == "IPPool"
    }
    assert {json.loads(n["spec"]["ipam"])["poolName"] for n in networks} == pools
    job = manifests["training-job.yaml"][-1]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        annotation = replica["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
        assert annotation.split(", ") == [n["metadata"]["name"] for n in networks]
        assert networks[0]["spec"]["networkNamespace"] == job["metadata"]["namespace"]


@pytest.mark.parametrize(
    ("spec", "min_cuda"),
    [(GOLDEN_SPEC, (11, 8)), (SPECS / "gb200-nvl72.yaml", (12, 8))],
    ids=["hopper", "blackwell"],
)
def test_training_container_runs_on_the_gpu(spec: Path, min_cuda: tuple[int, int]) -> None:
    """Blackwell (sm_100) needs CUDA >= 12.8; the job runs the image's own pretrain_gpt.py."""
    design = plan(load_spec(spec))
    image = training_image(design)
    assert tuple(int(p) for p in image.toolkit_version.split(".")) >= min_cuda
    files = {f.path: f.content for f in render(design, ["kubernetes"])}
    job = list(yaml.safe_load_all(files["kubernetes/training-job.yaml"]))[-1]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        assert container["image"] == image.image
        assert container["command"][2] == image.pretrain_gpt_path


def test_dra_driver_values_only_for_rack_scale(k8s_design: Design) -> None:
    """GB200 NVL72 gets the DRA driver's values (ComputeDomains on the GPU Operator's driver
    container, GPUs left to the device plugin, which the chart requires); HGX does not."""
    hgx = {f.path for f in render(k8s_design, ["kubernetes"])}
    assert "kubernetes/nvidia-dra-driver-gpu-values.yaml" not in hgx
    design = plan(load_spec(SPECS / "gb200-nvl72.yaml"))
    files = {f.path: f.content for f in render(design, ["kubernetes"])}
    text = files["kubernetes/nvidia-dra-driver-gpu-values.yaml"]
    assert "helm install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu --version " in text
    values = yaml.safe_load(text)
    assert values == {
        "nvidiaDriverRoot": "/run/nvidia/driver",
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
    }
    gpu_values = yaml.safe_load(files["kubernetes/gpu-operator-values.yaml"])
    assert gpu_values["driver"]["enabled"] is True  # the driver root above is its container's
    assert gpu_values["devicePlugin"]["enabled"] is True


@pytest.mark.parametrize("spec", [GOLDEN_SPEC, SPECS / "gb200-nvl72.yaml"], ids=lambda p: p.stem)
def test_kustomization_builds_with_kubectl(spec: Path, tmp_path: Path) -> None:
    """``kubectl kustomize`` reads the kustomization and every file it lists; the training job,
    the Volcano alternative and the rail networks (applied once their types exist) stay out."""
    write_files(render(plan(load_spec(spec)), ["kubernetes"]), tmp_path)
    folder = tmp_path / "kubernetes"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    listed = kustomization["resources"]
    assert all((folder / name).is_file() for name in listed)
    assert "training-job.yaml" not in listed and "volcano.yaml" not in listed
    assert "rail-networks.yaml" not in listed  # their types exist once the policy is reconciled
    manifests = {p.name for p in folder.glob("*.yaml")}
    assert manifests - set(listed) <= {
        "kustomization.yaml",
        "training-job.yaml",
        "volcano.yaml",
        "rail-networks.yaml",
        "gpu-operator-values.yaml",
        "nvidia-dra-driver-gpu-values.yaml",
    }
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: the structure above is all that was checked")
    built = subprocess.run(
        [kubectl, "kustomize", str(folder)], check=True, capture_output=True, text=True
    ).stdout
    expected = sum(len(list(yaml.safe_load_all((folder / name).read_text()))) for name in listed)
    assert len(list(yaml.safe_load_all(built))) == expected


def test_readme_orders_the_install_and_names_the_versions() -> None:
    """Charts that bring CRDs come before ``kubectl apply -k``; the job comes last; every
    pinned version is the one the Helm commands use."""
    design = plan(load_spec(SPECS / "gb200-nvl72.yaml"))
    files = {f.path: f.content for f in render(design, ["kubernetes"])}
    readme = files["kubernetes/README.md"]
    order = [
        "sh node-labels.sh",
        "kubectl apply -f dcgm-counters-configmap.yaml",
        "helm install gpu-operator",
        "helm install network-operator",
        "helm install nvidia-dra-driver-gpu",
        "kubectl apply -k .",
        "kubectl wait nicclusterpolicy/nic-cluster-policy",
        "kubectl apply -f rail-networks.yaml",
        "kubectl apply -f training-job.yaml",
    ]
    positions = [readme.index(step) for step in order]
    assert positions == sorted(positions)
    for component in components():
        assert f"| {component.name} | {component.version} |" in readme
    assert f"--version {GPU_OPERATOR.version} " in readme
    assert training_image(design).image in readme


def test_more_nodes_than_kubernetes_supports_is_a_warning(k8s_design: Design) -> None:
    big = k8s_design.compute.model_copy(update={"num_nodes": K8S_MAX_NODES + 1})
    design = k8s_design.model_copy(update={"compute": big})
    (warning,) = scale_warnings(design)
    assert "5,000" in warning and "2 clusters" in warning
    assert scale_warnings(k8s_design) == []
    assert generation_warnings(design, ["kubernetes"]) == [f"kubernetes: {warning}"]
    assert generation_warnings(design, ["slurm"]) == []


@pytest.mark.parametrize("spec", sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def test_kueue_tas_objects_are_consistent(spec: Path) -> None:
    """Kueue TAS: the ResourceFlavor names the Topology (same API version), has node
    labels, and both PodSets of the job carry one TAS annotation naming a Topology level
    (never the hostname) plus the same podset-group-name, so Master and Workers share a domain.
    """
    design = plan(load_spec(spec))
    files = {f.path: f.content for f in render(design, ["kubernetes"])}
    kueue = list(yaml.safe_load_all(files["kubernetes/kueue.yaml"]))
    by_kind = {d["kind"]: d for d in kueue}
    topology, flavor = by_kind["Topology"], by_kind["ResourceFlavor"]
    assert topology["apiVersion"] == flavor["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]
    assert flavor["spec"]["nodeLabels"], "a TAS flavor needs at least one node label"
    levels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    job = list(yaml.safe_load_all(files["kubernetes/training-job.yaml"]))[-1]
    replicas = job["spec"]["pytorchReplicaSpecs"]
    annotations = [r["template"]["metadata"]["annotations"] for r in replicas.values()]
    for a in annotations:
        tas = {k: v for k, v in a.items() if k.endswith("-topology")}
        assert len(tas) == 1, a
        ((key, level),) = tas.items()
        assert key in {
            "kueue.x-k8s.io/podset-required-topology",
            "kueue.x-k8s.io/podset-preferred-topology",
        }
        assert level in levels and level != "kubernetes.io/hostname"
    groups = {a.get("kueue.x-k8s.io/podset-group-name") for a in annotations}
    assert len(groups) == 1 and (len(replicas) == 1 or None not in groups)
    assert annotations[0] == annotations[-1]
