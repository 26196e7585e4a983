"""Write a design to files: design.json, bom.csv, racks.csv, cabling.csv, findings.md,
racks.svg (rack elevations), floor.svg (the floor to scale), fabric.svg (the compute fabric's
diagram, also as fabric.drawio and fabric.dot for network teams to edit) and tco.svg (build
vs rent), the pictures drawn with matplotlib;
and single picture files (``simulate``'s and ``goodput``'s plots) in the format their name asks.

Files are written into a temporary sibling folder and moved into place only when all of them
are complete, so a failure never leaves a half-written output folder.  The output folder is
created when missing, but its parent must exist: a mistyped path is an error, not a new tree.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from clusterforge.assess import Assessment, SpareOption, Unavailable
from clusterforge.design import Design
from clusterforge.errors import SpecError
from clusterforge.report.elevation import elevation_svg
from clusterforge.report.expected import performance_json
from clusterforge.report.fabric.export import fabric_dot, fabric_drawio
from clusterforge.report.fabric.picture import fabric_svg
from clusterforge.report.figure_file import PictureFormat, picture_format
from clusterforge.report.floor import floor_svg
from clusterforge.report.json_document import json_document
from clusterforge.report.plots import tco_chart
from clusterforge.userfiles import OutputKind, check_output_file, write_file

__all__ = [
    "assessed_design_data",
    "check_output_folder",
    "check_picture_path",
    "design_files",
    "design_json",
    "plan_files",
    "plan_json",
    "render_findings_md",
    "tco_svg",
    "write_atomically",
    "write_design",
    "write_picture",
]


def _csv(header: list[str], rows: list[list[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def bom_csv(design: Design) -> str:
    rows: list[list[object]] = [
        [
            b.category,
            b.item,
            b.description,
            f"{b.quantity:g}",
            f"{b.unit_usd:.2f}",
            f"{b.extended_usd:.2f}",
            b.source,
        ]
        for b in design.bom
    ]
    total = sum(b.extended_usd for b in design.bom)
    rows.append(["total", "", "", "", "", f"{total:.2f}", ""])
    return _csv(
        ["category", "item", "description", "quantity", "unit_usd", "extended_usd", "source"], rows
    )


def racks_csv(design: Design) -> str:
    rows: list[list[object]] = []
    for rack in design.racks:
        for dev in rack.devices:
            rows.append(
                [
                    rack.name,
                    rack.role,
                    rack.row,
                    rack.position,
                    dev.u_position,
                    dev.u_height,
                    dev.name,
                    dev.kind,
                    dev.model,
                    dev.role,
                    f"{dev.max_kw:.2f}",
                    f"{rack.max_kw:.2f}",
                    rack.cooling.method,
                    f"{dev.weight_kg:g}",
                    f"{rack.floor.mass_kg:.0f}",
                    f"{rack.floor.load_kn_per_m2:.2f}",
                ]
            )
    header = [
        "rack",
        "rack_role",
        "row",
        "position",
        "u_position",
        "u_height",
        "device",
        "kind",
        "model",
        "device_role",
        "device_max_kw",
        "rack_max_kw",
        "cooling",
        "device_kg",
        "rack_kg",
        "rack_kn_per_m2",
    ]
    return _csv(header, rows)


def cabling_csv(design: Design) -> str:
    rows: list[list[object]] = []
    for c in design.cabling:
        for m in c.media:
            rows.append(
                [
                    c.fabric,
                    c.name,
                    c.endpoint_a,
                    c.endpoint_b,
                    m.num_links,
                    f"{c.gbit_per_s:g}",
                    m.medium,
                    m.netbox_type,
                    m.num_transceivers,
                    f"{c.length_m_median:.1f}",
                    f"{c.length_m_max:.1f}",
                    f"{m.optics_power_w:.1f}",
                    f"{m.cost_usd:.2f}",
                ]
            )
    header = [
        "fabric",
        "link_class",
        "endpoint_a",
        "endpoint_b",
        "num_links",
        "gbit_per_s",
        "medium",
        "netbox_cable_type",
        "num_transceivers",
        "length_m_median",
        "length_m_max",
        "optics_power_w",
        "cost_usd",
    ]
    return _csv(header, rows)


def render_findings_md(design: Design) -> str:
    lines = [f"# Findings for {design.spec.name}", ""]
    if not design.findings:
        lines.append("No findings: every rule passed.")
    for f in design.findings:
        lines += [f"## [{f.severity}] {f.id}", "", f.message + ".", "", f"**Fix:** {f.fix}.", ""]
        lines += [f"- `{k}` = {_figure(v)}" for k, v in f.numbers.items()]
        lines.append("")
    return "\n".join(lines) + "\n"


def _figure(value: object) -> str:
    """A finding's number for people: six significant digits without float noise
    (9.899999999999999 -> 9.9), thousands separated; other values as they are."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    rounded = float(f"{value:.6g}")
    if rounded.is_integer() and abs(rounded) < 1e15:
        return f"{int(rounded):,}"
    return f"{rounded:g}"


def design_json(design: Design, extra: dict[str, object] | None = None) -> str:
    """The whole design as JSON (strict RFC 8259: no Infinity or NaN), plus ``extra`` keys."""
    data = design.model_dump(mode="json") | (extra or {})
    # pydantic-core's Rust encoder: the standard library's indenting encoder is pure Python
    # and took seconds for a 100,000-GPU design.  A non-finite number becomes null.
    return to_json(data, indent=2, inf_nan_mode="null").decode() + "\n"


def tco_svg(design: Design) -> str:
    """Building against renting over the ownership period, as SVG text."""
    return tco_chart(design, "svg").decode("utf-8")


def design_files(design: Design) -> dict[str, Callable[[Design], str]]:
    return {
        "design.json": design_json,
        "bom.csv": bom_csv,
        "racks.csv": racks_csv,
        "cabling.csv": cabling_csv,
        "findings.md": render_findings_md,
        "racks.svg": elevation_svg,
        "floor.svg": floor_svg,
        "fabric.svg": fabric_svg,
        "fabric.drawio": fabric_drawio,
        "fabric.dot": fabric_dot,
        "tco.svg": tco_svg,
    }


def assessed_design_data(assessment: Assessment) -> dict[str, Any]:
    """The design as JSON data, its cost with the break-even size."""
    data = assessment.design.model_dump(mode="json")
    data["cost"]["break_even_gpus"] = assessment.economics.break_even_gpus
    return data


def _spare_options_json(
    options: tuple[SpareOption, ...] | Unavailable | None,
) -> list[dict[str, Any]] | dict[str, str] | None:
    """Each way to hold spares with its cost and goodput, or why they were not compared."""
    if isinstance(options, Unavailable):
        return {"unavailable": options.reason}
    return None if options is None else [o.as_dict() for o in options]


def plan_json(assessment: Assessment) -> str:
    """``plan``'s design.json: :func:`assessed_design_data` and the workload's expected
    performance (with failures counted)."""
    data = assessed_design_data(assessment)
    data["expected_performance"] = performance_json(assessment.performance, assessment.goodput)
    data["spare_options"] = _spare_options_json(assessment.spare_options)
    document = json_document("plan", data)
    return to_json(document, indent=2, inf_nan_mode="null").decode() + "\n"


def plan_files(assessment: Assessment) -> dict[str, str]:
    """Every file ``plan`` writes, by name; design.json is :func:`plan_json`."""
    design = assessment.design
    texts = {name: render(design) for name, render in design_files(design).items()}
    texts["design.json"] = plan_json(assessment)
    return texts


def check_output_folder(out_dir: Path, *, create: bool = True) -> Path:
    """The resolved output folder, or a :class:`SpecError` when files cannot go there: the
    path is a file (``/dev/null``), its parent folder is missing, or (``create=False``) the
    folder itself is missing."""
    shown = repr(str(out_dir)[:200])
    try:
        folder = Path(out_dir).resolve()
        must_exist = folder if not create else folder.parent
        if folder.exists() and not folder.is_dir():
            raise SpecError(f"output folder {shown} exists and is not a folder")
        if not must_exist.is_dir():
            raise SpecError(
                f"output folder {str(must_exist)[:200]!r} does not exist; create it first"
            )
    except OSError as exc:  # a name too long, a permission
        raise SpecError(f"output folder {shown}: {exc.strerror}") from None
    except RuntimeError:  # Python 3.11's Path.resolve on a symlink loop
        raise SpecError(f"output folder {shown}: symbolic link loop") from None
    return folder


def write_atomically(
    out_dir: Path, files: Mapping[str, str | bytes], *, create: bool = True
) -> list[Path]:
    """Write ``files`` (relative path -> text, or bytes for a PNG or PDF picture) under
    ``out_dir``, all or nothing.

    ``out_dir`` is created when missing (``create``) but never its parents."""
    folder = check_output_folder(out_dir, create=create)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".clusterforge-", dir=folder.parent))
    except OSError as exc:
        raise SpecError(f"cannot write under {str(folder.parent)!r}: {exc.strerror}") from None
    try:
        return _move_into_place(staging, Path(out_dir), files)
    except OSError as exc:
        raise SpecError(f"cannot write {str(out_dir)[:200]!r}: {exc.strerror}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _move_into_place(staging: Path, out_dir: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    for rel, content in files.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    out_dir.mkdir(exist_ok=True)
    targets = {rel: out_dir / rel for rel in files}
    for target in targets.values():
        target.parent.mkdir(parents=True, exist_ok=True)
    kinds = {rel: check_output_file(target) for rel, target in targets.items()}  # all first
    written = []
    for rel, target in targets.items():
        if kinds[rel] == OutputKind.REPLACE and not target.is_symlink():
            if target.exists():  # an existing file keeps its mode
                os.chmod(staging / rel, stat.S_IMODE(target.stat().st_mode))
            os.replace(staging / rel, target)
        else:  # a link's target, a pipe or /dev/null: see clusterforge.userfiles
            write_file(target, files[rel])
        written.append(target)
    return written


def write_design(design: Design, out_dir: Path) -> list[Path]:
    texts = {name: render(design) for name, render in design_files(design).items()}
    return write_atomically(out_dir, texts)


def check_picture_path(path: Path) -> PictureFormat:
    """The format a picture file's name asks for (.svg, .png, .pdf); a :class:`SpecError`
    when the name has another extension, its folder is missing (a mistyped path is an
    error, not a new tree) or it is a folder or special file. Checked before the seconds of
    work that draw the picture."""
    check_output_file(path, "plot")
    return picture_format(path)


def write_picture(path: Path, picture: bytes) -> Path:
    """Write one picture file whole or not at all; its folder must exist."""
    check_picture_path(path)
    return write_file(path, picture, "plot")
