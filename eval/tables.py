"""Captioned tables of per-router rows, as aligned text for the terminal or as markdown."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["captioned_table"]


def captioned_table(header: Sequence[str], body: Sequence[Sequence[str]], caption: str, fmt: str = "text") -> str:
    """``caption`` above a table whose first column is left-aligned and the rest right-aligned.

    Args:
        header: Column titles.
        body: Rows of already formatted cells, each as long as ``header``.
        caption: One line saying what the table shows and how it was computed.
        fmt: ``"text"`` (aligned columns) or ``"markdown"`` (a pipe table).

    Returns:
        The table with a leading newline and a trailing newline, ready to print under another.
    """
    rows = [list(header), *(list(r) for r in body)]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        return "\n" + caption + "\n\n" + "\n".join(lines) + "\n"
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
             for row in rows]  # fmt: skip
    return "\n" + caption + "\n" + "\n".join(lines) + "\n"
