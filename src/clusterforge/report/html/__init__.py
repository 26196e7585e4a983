"""The HTML report of a design (``clusterforge report``): one self-contained page.

::

    from clusterforge.assess import AssessOptions, assess
    from clusterforge.report.html import build_report, render_html
    html = render_html(build_report(assess(design, AssessOptions(top_plans=5, busbw=True))))
"""

from clusterforge.report.html.compare import Comparison, build_comparison, render_comparison
from clusterforge.report.html.render import (
    Report,
    build_report,
    check_page_path,
    render_html,
    write_page,
)

__all__ = [
    "Comparison",
    "Report",
    "build_comparison",
    "build_report",
    "check_page_path",
    "render_comparison",
    "render_html",
    "write_page",
]
