"""Tagged constants: every packaged constant has a unit, a tag, a source, and fitted ones
name their rows; malformed tables are refused."""

from __future__ import annotations

import pytest

from clusterforge.constants import TAGS, parse_constants, read_constants

FILES = [
    ("clusterforge.netsim", "efficiency.toml", None),
    ("clusterforge.netsim", "nccl.toml", None),
    ("clusterforge.perf", "efficiency.toml", "constants"),
]


@pytest.mark.parametrize(("package", "filename", "section"), FILES)
def test_every_constant_is_tagged_and_sourced(package, filename, section):
    table = read_constants(package, filename, section)
    assert len(table) > 0
    for constant in table.values():
        assert constant.tag in TAGS and constant.unit and constant.source.strip()
        assert (constant.tag == "fitted") == bool(constant.fitted_on), constant.name


def test_a_ratio_is_its_quotient_computed_exactly():
    table = read_constants("clusterforge.netsim", "efficiency.toml")
    assert table.number("scaleup_payload_share.default.ring") == 370 / 450
    assert table.integer("ramp.bytes") == 11 * 2**20


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('value = 1.0\nunit = "s"\ntag = "guessed"\nsource = "s"', "tag"),
        ('value = 1.0\nunit = "s"\ntag = "fitted"\nsource = "s"', "fitted_on"),
        ('value = 1.0\nunit = "s"\ntag = "measured"\nsource = ""', "source"),
        ('value = 1.0\nratio = [1, 2]\nunit = "s"\ntag = "derived"\nsource = "s"', "one of"),
        ('value = 1.0\nunit = "s"\ntag = "derived"\nsource = "s"\nwhy = "?"', "unknown"),
    ],
)
def test_malformed_constants_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_constants(f"[group.x]\n{text}\n", "bad.toml")


def test_a_constant_is_found_by_its_dotted_name():
    table = parse_constants(
        '[a.b]\nratio = [1, 4]\nunit = "-"\ntag = "derived"\nsource = "s"\n', "t"
    )
    assert table.number("a.b") == 0.25
    assert table.group("a") == {"b": 0.25}
    with pytest.raises(KeyError, match="no constant"):
        table["a.c"]
