#!/usr/bin/env python3
"""A stand-in for ``torchrun`` in system tests: records what the job script launched.

The generated ``train.sbatch`` runs ``srun torchrun <torchrun options> "$TRAIN_SCRIPT" <training
arguments>``; put this file on PATH as ``torchrun`` (the job inherits sbatch's PATH) and set
``TRAIN_RECORD`` to a file: each task appends one JSON line with its node, the NCCL settings it
saw, the torchrun options, the training script and the training arguments, split where
torchrun itself splits them (the first argument that is not an option).  A check of the
training arguments (a framework's own argument parser) reads ``train_args`` from the record.
"""

from __future__ import annotations

import json
import os
import sys


def split_torchrun(argv: list[str]) -> tuple[list[str], str, list[str]]:
    """torchrun's own options (``--name=value`` form), the script, then the script's args."""
    for index, arg in enumerate(argv):
        if not arg.startswith("-"):
            return argv[:index], arg, argv[index + 1 :]
    raise SystemExit(f"torchrun stand-in: no training script in {argv}")


def main() -> None:
    options, script, train_args = split_torchrun(sys.argv[1:])
    record = {
        "node": os.environ.get("SLURMD_NODENAME", ""),
        "nccl": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
        "torchrun": options,
        "script": script,
        "train_args": train_args,
    }
    with open(os.environ["TRAIN_RECORD"], "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
