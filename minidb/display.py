"""Plain-text rendering of result tables for the command line and the demo."""

from __future__ import annotations

import pyarrow as pa


def format_table(table: pa.Table, max_rows: int = 20) -> str:
    """Render up to ``max_rows`` rows of ``table`` as aligned text columns."""
    names = table.column_names
    rows = table.slice(0, max_rows).to_pylist()
    cells = [[_cell(row[n]) for n in names] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) if _numeric(c) else c.ljust(w)
                        for c, w in zip(r, widths, strict=True)) for r in cells]
    if table.num_rows > max_rows:
        lines.append(f"... {table.num_rows - max_rows:,} more rows ({table.num_rows:,} in all)")
    return "\n".join(lines)


def _cell(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _numeric(text: str) -> bool:
    return text.replace(".", "", 1).lstrip("-").isdigit()
