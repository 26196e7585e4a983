"""``python -m clusterforge.accept.worker node|collective|net|fabric [options]``: parse, run, report."""

from __future__ import annotations

import argparse
import sys
import warnings

from clusterforge.accept.worker.collective import run_collective, run_net
from clusterforge.accept.worker.fabric import add_arguments as fabric_arguments
from clusterforge.accept.worker.fabric import run_fabric
from clusterforge.accept.worker.node import run_node
from clusterforge.accept.worker.records import emit

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clusterforge-accept-worker")
    sub = parser.add_subparsers(dest="suite", required=True)
    node = sub.add_parser("node")
    node.add_argument("--burn-s", type=float, default=2.0)
    node.add_argument("--gemm-n", type=int, default=0)
    node.add_argument("--storage-path", default="")
    node.add_argument("--fio-s", type=float, default=2.0)
    node.add_argument("--dcgm-level", type=int, default=0)
    coll = sub.add_parser("collective")
    coll.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,all_to_all")
    coll.add_argument("--min-bytes", type=int, default=1 << 20)
    coll.add_argument("--max-bytes", type=int, default=1 << 24)
    coll.add_argument("--iters", type=int, default=5)
    coll.add_argument("--backend", choices=("auto", "gloo"), default="auto")
    net = sub.add_parser("net")
    net.add_argument("--peers", required=True)
    net.add_argument("--port", type=int, default=5301)
    net.add_argument("--seconds", type=float, default=2.0)
    fabric_arguments(sub.add_parser("fabric"))
    return parser


def main(argv: list[str] | None = None) -> int:
    # torch marks the *_tensor collectives deprecated in favour of newer names; the old
    # names work on every torch >= 2.1 this worker supports.
    warnings.filterwarnings("ignore", category=FutureWarning)
    args = _parser().parse_args(argv)
    runners = {"node": run_node, "collective": run_collective, "net": run_net, "fabric": run_fabric}
    try:
        runners[args.suite](args)
    except Exception as exc:  # report, never hide: the launcher turns this into a failure
        emit({"test": args.suite, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
