"""The user's cluster spec: parsed from YAML and validated once, here, into frozen models.

Every field carries a description and its unit.  Only ``num_gpus`` is required; everything
else has a default a practitioner would pick.  :func:`load_spec` turns any problem (malformed
YAML, an unknown id, a count that does not divide) into a :class:`SpecError` whose message
names the field, the bad value and the fix.

Modules: ``base`` (vocabulary, ranges), ``sections`` (network, facility, storage),
``workload``, ``economics`` (and reliability), ``scheduler`` (the target Slurm release),
``cluster`` (the whole spec, the default), ``load`` (YAML to models, catalog checks, the job
layout).
"""

from clusterforge.spec.base import (
    MAX_GPUS,
    MAX_LAYERS,
    MODEL_LIMITS,
    Cooling,
    Section,
    SpareAttach,
    Topology,
)
from clusterforge.spec.cluster import DEFAULT_SPEC_YAML, ClusterSpec
from clusterforge.spec.economics import EconomicsSpec, ReliabilitySpec, RentBasis
from clusterforge.spec.load import (
    default_spec,
    job_layout,
    load_spec,
    parse_spec,
    resolve_node_id,
)
from clusterforge.spec.management import BmcAccess, ManagementSpec
from clusterforge.spec.scheduler import (
    DEFAULT_SLURM_VERSION,
    SLURM_VERSIONS,
    SlurmSpec,
    SlurmVersion,
)
from clusterforge.spec.sections import FacilitySpec, NetworkSpec, StorageSpec
from clusterforge.spec.workload import WorkloadSpec

__all__ = [
    "DEFAULT_SLURM_VERSION",
    "DEFAULT_SPEC_YAML",
    "MAX_GPUS",
    "MAX_LAYERS",
    "MODEL_LIMITS",
    "SLURM_VERSIONS",
    "BmcAccess",
    "ClusterSpec",
    "Cooling",
    "EconomicsSpec",
    "FacilitySpec",
    "ManagementSpec",
    "NetworkSpec",
    "ReliabilitySpec",
    "RentBasis",
    "Section",
    "SlurmSpec",
    "SlurmVersion",
    "SpareAttach",
    "StorageSpec",
    "Topology",
    "WorkloadSpec",
    "default_spec",
    "job_layout",
    "load_spec",
    "parse_spec",
    "resolve_node_id",
]
