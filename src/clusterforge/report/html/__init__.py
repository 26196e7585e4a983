"""The HTML report of a design (``clusterforge report``): one self-contained page.

::

    from clusterforge.report.html import build_report, render_html
    html = render_html(build_report(design))
"""

from clusterforge.report.html.compare import Comparison, build_comparison, render_comparison
from clusterforge.report.html.render import (
    Report,
    ReportOptions,
    build_report,
    check_page_path,
    render_html,
    write_page,
)

__all__ = [
    "Comparison",
    "Report",
    "ReportOptions",
    "build_comparison",
    "build_report",
    "check_page_path",
    "render_comparison",
    "render_html",
    "write_page",
]
