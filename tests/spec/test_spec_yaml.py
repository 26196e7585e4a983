"""The YAML boundary: size, nesting, aliases and duplicate keys are refused with one line."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest

from clusterforge.errors import SpecError
from clusterforge.spec import load_spec
from clusterforge.spec.safe_yaml import MAX_DEPTH, MAX_SPEC_BYTES, excerpt, load_yaml_text

BASE = "num_gpus: 64\nnode: dgx-h100\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def _refused(path: Path | str) -> str:
    start = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_spec(path)
    elapsed_s = time.perf_counter() - start
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    assert elapsed_s < 5.0, f"took {elapsed_s:.1f} s"  # a hang guard, not a speed figure
    return message


def test_duplicate_key_names_both_lines(tmp_path):
    message = _refused(_write(tmp_path, BASE + "num_gpus: 128\n"))
    assert "'num_gpus' is given twice (lines 1 and 3)" in message


def test_duplicate_key_inside_a_section(tmp_path):
    text = BASE + "network:\n  fabric: roce\n  planes: 2\n  fabric: infiniband\n"
    assert "'fabric' is given twice (lines 4 and 6)" in _refused(_write(tmp_path, text))


def test_merge_keys_still_work():
    data = load_yaml_text("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "t")
    assert data["other"] == {"x": 1, "y": 2}


def test_deep_nesting_is_refused_without_recursion_error(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    message = _refused(_write(tmp_path, BASE + f"name: {deep}\n"))
    assert f"deeper than {MAX_DEPTH}" in message and "line 3" in message


def test_alias_bomb_is_refused(tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    text = BASE + "\n".join(lines) + "\nname: *a9\n"
    assert "expands to more than" in _refused(_write(tmp_path, text))


def test_alias_inside_its_own_anchor_is_refused():
    with pytest.raises(SpecError, match="refers to itself"):
        load_yaml_text("a: &x [1, *x]\n", "t")


def test_oversized_file_is_refused(tmp_path):
    message = _refused(_write(tmp_path, BASE + "#" * (MAX_SPEC_BYTES + 10) + "\n"))
    assert "larger than 256 KiB" in message


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_is_read_through_the_cap():
    assert "larger than" in _refused("/dev/zero")


def test_symlink_loop_is_one_line(tmp_path):
    loop = tmp_path / "loop.yaml"
    os.symlink(loop, loop)
    assert "cannot read spec file" in _refused(loop)


def test_overlong_file_name_is_one_line(tmp_path):
    message = _refused(tmp_path / ("x" * 300 + ".yaml"))
    assert "File name too long" in message or "does not exist" in message
    assert len(message) < 300


def test_binary_file_is_not_utf8(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in _refused(path)


def test_folder_is_refused(tmp_path):
    assert "is a folder" in _refused(tmp_path)


def test_excerpt_never_walks_a_huge_value():
    huge = [[list(range(1000))] * 1000] * 1000
    assert len(excerpt(huge)) <= 60
    assert "..." in excerpt("x" * 10_000) and len(excerpt("x" * 10_000)) <= 60
    assert excerpt(math.inf) == "inf"
