"""Hypothesis over the whole spec schema: every hostile spec is refused cleanly.

One field of a valid spec (or the YAML text around it) is replaced by an extreme: infinity,
NaN, huge and tiny numbers, wrong types, markup-like text, deep nesting, alias bombs,
duplicate and unknown keys.  ``plan -o`` runs in-process; the property is: exit 0 with every
file written, or exit 1 with one plain ``error:`` line that names the field (or the YAML
line), no traceback, nothing written, and the refusal comes quickly (a hang guard).
Bounded for CI: a few hundred examples, under a minute or two on one core.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import time
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from clusterforge.cli.main import main
from clusterforge.spec import ClusterSpec

BASE: dict[str, Any] = {"name": "fuzz", "num_gpus": 16, "node": "dgx-h100"}
REFUSAL_GUARD_S = 2.0  # a refusal is validation only (milliseconds); this catches hangs
SETTINGS = settings(
    max_examples=250,
    deadline=None,  # the hang guard above is explicit; planning a valid extreme may take seconds
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)


def _fields() -> list[tuple[str, str]]:
    """(section, field) for every field of the schema; section "" is the top level."""
    out = []
    for name, field in ClusterSpec.model_fields.items():
        args = (field.annotation, *typing.get_args(field.annotation))
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            out += [(name, sub) for sub in models[0].model_fields]
        else:
            out.append(("", name))
    return out


MARKUP = st.sampled_from(["[/]", "[/red]", "[bold]x", "[link=file:///etc]y[/link]", "]["])
NUMBERS = st.one_of(
    st.sampled_from([float("inf"), float("-inf"), float("nan"), 1e300, -1e300, 1e-300, 0, -1]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALARS = st.one_of(NUMBERS, MARKUP, st.text(max_size=300), st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _run_plan(text: str) -> tuple[int, str, Path, Path]:
    """Write ``text`` as a spec, run ``plan -o``; return (exit code, stderr, out, folder)."""
    folder = Path(tempfile.mkdtemp(prefix="cf-fuzz-"))
    spec = folder / "spec.yaml"
    spec.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", str(spec), "-o", str(folder / "out")])
    return code, err.getvalue(), folder / "out", folder


def _check(text: str, names: list[str]) -> None:
    start = time.perf_counter()
    code, err, out, folder = _run_plan(text)
    elapsed_s = time.perf_counter() - start
    try:
        assert "Traceback" not in err
        if code == 0:
            assert (out / "design.json").is_file()
            assert "Infinity" not in (out / "design.json").read_text()
            return
        assert code == 1, err
        assert elapsed_s < REFUSAL_GUARD_S, f"refusal took {elapsed_s:.1f} s"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 1200, err
        assert any(name in lines[0] for name in names), (names, err)
        assert sorted(p.name for p in folder.iterdir()) == ["spec.yaml"]  # nothing written
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@pytest.mark.parametrize("chunk", range(2))
@SETTINGS
@given(target=st.sampled_from(_fields()), value=VALUES)
def test_any_value_in_any_field(chunk, target, value):
    section, name = target
    data = dict(BASE)
    if section:
        data[section] = {name: value}
    else:
        data[name] = value
    # field-level refusals name the field; catalog and capacity refusals name what they check
    _check(_dump(data), [name, section or name, "num_gpus", "node", "gpu"])


@settings(SETTINGS, max_examples=60)
@given(key=st.one_of(MARKUP, st.text(min_size=1, max_size=200)), value=SCALARS)
def test_unknown_keys_with_markup(key, value):
    data = {**BASE, "storage": {key: value}}
    _check(_dump(data), ["storage", "unknown field", key[:40]])


@settings(SETTINGS, max_examples=40)
@given(
    attack=st.sampled_from(["deep", "bomb", "duplicate", "recursive", "huge number"]),
    target=st.sampled_from(_fields()),
    size=st.integers(min_value=40, max_value=5000),
)
def test_yaml_level_attacks(attack, target, size):
    section, name = target
    match attack:
        case "deep":
            value = "[" * size + "]" * size
        case "bomb":
            value = "*a9"
        case "duplicate":
            value = "1\n" + (f"  {name}: 2" if section else f"{name}: 2")
        case "recursive":
            value = "&r [1, *r]"
        case "huge number":  # Python refuses to convert more than 4,300 digits
            value = "9" * size
    prelude = ""
    if attack == "bomb":
        prelude = 'x0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
        prelude += "".join(
            f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 8) + "]\n" for i in range(1, 10)
        )
    body = f"{section}:\n  {name}: {value}\n" if section else f"{name}: {value}\n"
    text = prelude + "num_gpus: 16\nnode: dgx-h100\n" + body
    if name in ("num_gpus", "node"):
        text = prelude + body + ("node: dgx-h100\n" if name == "num_gpus" else "num_gpus: 16\n")
    _check(text, ["line", "YAML", "expands", "itself", "twice", name])


@settings(SETTINGS, max_examples=150)
@given(changes=st.lists(st.tuples(st.sampled_from(_fields()), VALUES), min_size=2, max_size=5))
def test_several_fields_at_once(changes):
    data: dict[str, Any] = dict(BASE)
    for (section, name), value in changes:
        if section:
            data.setdefault(section, {})[name] = value
        else:
            data[name] = value
    names = [n for (_, n), _ in changes] + [s for (s, _), _ in changes if s]
    _check(_dump(data), [*names, "num_gpus", "node", "gpu"])
