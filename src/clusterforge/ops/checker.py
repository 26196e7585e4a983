"""Build the :class:`~clusterforge.ops.runner.NodeChecker` of one node from its options.

Every input is read and validated here, once, before any check runs: the cluster spec (and
its design), the XID policy, a recorded NVML fixture.  A bad file is a one-line
:class:`~clusterforge.errors.ClusterforgeError` at start-up, not a failed reading later.
"""

from __future__ import annotations

from collections.abc import Callable

from clusterforge.ops.checks.processes import load_process_policy
from clusterforge.ops.expect import (
    NodeExpectation,
    expectation_from_design,
    with_overrides,
)
from clusterforge.ops.nvml import NvmlApi, RecordedNvml, load_fixture
from clusterforge.ops.options import SourceOptions
from clusterforge.ops.runner import NodeChecker, local_node_name
from clusterforge.ops.sysfs import SysfsReader
from clusterforge.ops.xid import load_xid_policy

__all__ = ["build_checker", "expectation_for"]

# A single sysfs or /proc read takes microseconds; one that blocks (a hung NFS mount under
# statvfs, a wedged driver file) is abandoned after a quarter of the budget, at most 5 s.
_MAX_SYSFS_CALL_S = 5.0


def expectation_for(source: SourceOptions, node: str) -> NodeExpectation:
    """What ``node`` should look like: its design (with a spec) under the site overrides.

    Raises :class:`~clusterforge.ops.expect.UnknownNodeError` when the spec's design has no
    node of that name.
    """
    if source.spec_path is None:
        return with_overrides(NodeExpectation(), source.overrides)
    from clusterforge.design import plan
    from clusterforge.spec import load_spec

    # The break-even search re-plans the cluster many times and says nothing about a node.
    design = plan(load_spec(source.spec_path))
    return with_overrides(expectation_from_design(design, node), source.overrides, design.catalog)


def _nvml_factory(source: SourceOptions) -> Callable[[], NvmlApi]:
    """A recorded fixture is validated now and read again on every run (so a replayed node
    changes when its file does, as a real GPU does); the real NVML is opened on every run."""
    if (path := source.nvml_fixture) is not None:
        load_fixture(path)
        return lambda: RecordedNvml(load_fixture(path))

    def real() -> NvmlApi:
        from clusterforge.ops.nvml_pynvml import PynvmlApi

        return PynvmlApi()

    return real


def build_checker(source: SourceOptions) -> NodeChecker:
    """The checker of this node (``source.node`` or the short hostname)."""
    node = source.node or local_node_name()
    return NodeChecker(
        node=node,
        nvml_factory=_nvml_factory(source),
        sysfs=SysfsReader(source.sysfs_root, timeout_s=min(_MAX_SYSFS_CALL_S, source.budget_s / 4)),
        expect=expectation_for(source, node),
        policy=load_xid_policy(source.xid_policy_path),
        budget_s=source.budget_s,
        process_policy=load_process_policy(source.allowed_processes),
    )
