"""What every ``--json`` output is: one JSON object that says which command wrote it and in
which version of its layout, so a script can check both before it reads a field.

``schema_version`` counts changes that could break a reader (a field renamed, removed or
changing meaning); a field added leaves it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SCHEMA_VERSION", "json_document"]

SCHEMA_VERSION = 1


def json_document(command: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` under the two keys every output starts with: ``schema_version`` and
    ``command`` (the command that wrote it)."""
    clash = {"schema_version", "command"} & set(data)
    assert not clash, f"{command}'s output already has {sorted(clash)}"
    return {"schema_version": SCHEMA_VERSION, "command": command, **data}
