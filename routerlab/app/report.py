"""``routerlab report``: the comparison notebook run for one session, written as one HTML page.

What the page holds and how it is made is :mod:`routerlab.report`'s; this is the application's
door to it, as every command has one.
"""

from __future__ import annotations

from routerlab.report import ReportCellError, ReportResult, make_report

__all__ = ["ReportCellError", "ReportResult", "make_report"]
